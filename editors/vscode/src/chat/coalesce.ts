// Batches chat ops for the webview: consecutive text deltas (and output deltas of one tool call)
// become one op, so 10,000 deltas a second cost a handful of messages per frame.

import type { ChatOp } from './model';

export function coalesce(ops: readonly ChatOp[]): ChatOp[] {
  const out: ChatOp[] = [];
  for (const op of ops) {
    const last = out[out.length - 1];
    if (last && last.kind === op.kind && sessionOf(last) === sessionOf(op)) {
      if (op.kind === 'assistant_text_delta' || op.kind === 'assistant_reasoning_delta') {
        const prev = last as typeof op;
        out[out.length - 1] = { ...prev, data: { delta: prev.data.delta + op.data.delta } };
        continue;
      }
      if (op.kind === 'tool_call_output_delta' && (last as typeof op).data.call_id === op.data.call_id) {
        const prev = last as typeof op;
        out[out.length - 1] = { ...prev, data: { call_id: op.data.call_id, delta: prev.data.delta + op.data.delta } };
        continue;
      }
    }
    out.push(op);
  }
  return out;
}

function sessionOf(op: ChatOp): string | undefined {
  return 'sessionId' in op ? op.sessionId : undefined;
}
