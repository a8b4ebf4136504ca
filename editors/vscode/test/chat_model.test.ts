// The chat model folds the event stream the real server sent (recorded by
// test/record/record_events.mjs) into the entries the chat view shows.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { coalesce } from '../src/chat/coalesce';
import { ChatModel, MAX_TOOL_OUTPUT, turnActions, type ChatOp, type Entry } from '../src/chat/model';
import type { AgentEvent } from '../src/lsp_ext';

const recorded = JSON.parse(readFileSync(join(__dirname, '../../test/fixtures/recorded_session.json'), 'utf8')) as {
  messages: { method: string; params: unknown }[];
};
const events = recorded.messages.filter((m) => m.method === 'agentls/event').map((m) => m.params as AgentEvent);
const sessionId = events[0].sessionId;

/** What a user sees of each entry (no ids, durations or timestamps). */
function visible(entries: readonly Entry[]): unknown[] {
  return entries.map((e) => {
    switch (e.kind) {
      case 'user': return { user: e.text, steering: e.steering ?? false };
      case 'assistant': return { assistant: e.text, streaming: e.streaming };
      case 'tool': return { tool: e.toolName, summary: e.summary, status: e.status, output: e.output, review: e.review, timed: typeof e.durationMs === 'number' };
      case 'notice': return { notice: e.level, text: e.text };
      case 'turn_end': return { turnEnd: e.reason, tokens: e.inputTokens > 0 && e.outputTokens > 0 };
    }
  });
}

function endOutput(callId: string): string | undefined {
  const end = events.find((e) => e.kind === 'tool_call_end' && e.data.call_id === callId);
  return end?.kind === 'tool_call_end' ? end.data.output : undefined;
}

function fold(ops: readonly ChatOp[]): ChatModel {
  const m = new ChatModel();
  for (const op of ops) m.apply(op);
  return m;
}

test('the recorded session becomes user, answer, tool cards and a turn end', () => {
  const m = fold([...events.slice(0, 12), { kind: 'review_result', callId: 'toolu_w1', result: 'partly accepted (1/2 hunks accepted)' }, ...events.slice(12)]);
  assert.deepEqual(visible(m.entries), [
    { user: 'Capitalise two and seven in notes.txt, then check.', steering: false },
    { assistant: "I'll read the file first.", streaming: false },
    { tool: 'read_file', summary: 'read_file notes.txt', status: 'ok', output: endOutput('toolu_r1'), review: undefined, timed: true },
    { tool: 'write_file', summary: 'write_file notes.txt', status: 'ok', output: endOutput('toolu_w1'), review: 'partly accepted (1/2 hunks accepted)', timed: true },
    { assistant: 'Now a quick check.', streaming: false },
    { tool: 'shell', summary: 'shell: echo checked', status: 'ok', output: 'checked\nExit code: 0', review: undefined, timed: true },
    { assistant: 'Done: `two` is now **TWO**; you kept `seven`.\n\n```rust\nfn main() {}\n```\n', streaming: false },
    { turnEnd: 'completed', tokens: true },
  ]);
  assert.deepEqual({ ...m.header }, { sessionId, model: 'claude-test', busy: false, currentTool: undefined });
});

test('the reading of the unsaved buffer is what the model got', () => {
  assert.ok(endOutput('toolu_r1')?.includes('unsaved line'));
});

test('while a tool runs the header names it and the turn is busy', () => {
  const upTo = events.findIndex((e) => e.kind === 'tool_call_start' && e.data.call_id === 'toolu_s1');
  const m = fold(events.slice(0, upTo + 1));
  assert.equal(m.header.busy, true);
  assert.equal(m.header.currentTool, 'shell: echo checked');
  const card = m.entries[m.entries.length - 1];
  assert.equal(card.kind === 'tool' && card.status, 'running');
});

test('coalesced ops give the same transcript as the raw stream', () => {
  assert.deepEqual(visible(fold(coalesce(events)).entries), visible(fold(events).entries));
});

test('10,000 text deltas coalesce into one op and lose nothing', () => {
  const deltas: ChatOp[] = Array.from({ length: 10_000 }, (_, i) => ({ sessionId: 's', kind: 'assistant_text_delta', timestamp: '', data: { delta: `w${i} ` } }));
  const batched = coalesce([{ sessionId: 's', kind: 'assistant_text_start', timestamp: '', data: { model: 'm' } }, ...deltas]);
  assert.equal(batched.length, 2);
  const m = fold(batched);
  const a = m.entries[0];
  assert.equal(a.kind === 'assistant' && a.text, deltas.map((d) => (d.kind === 'assistant_text_delta' ? d.data.delta : '')).join(''));
});

test('output deltas of different calls are not merged', () => {
  const out = (call: string, delta: string): ChatOp => ({ sessionId: 's', kind: 'tool_call_output_delta', timestamp: '', data: { call_id: call, delta } });
  assert.deepEqual(coalesce([out('a', '1'), out('a', '2'), out('b', '3'), out('a', '4')]), [out('a', '12'), out('b', '3'), out('a', '4')]);
});

test('a tool card keeps at most MAX_TOOL_OUTPUT of streamed output, newest last', () => {
  const m = new ChatModel();
  m.apply({ sessionId: 's', kind: 'tool_call_start', timestamp: '', data: { tool_name: 'shell', call_id: 'c', summary: 'shell: yes', arguments: '{}' } });
  const chunk = 'x'.repeat(64 * 1024 - 1) + '\n';
  for (let i = 0; i < 40; i++) m.apply({ sessionId: 's', kind: 'tool_call_output_delta', timestamp: '', data: { call_id: 'c', delta: chunk } });
  m.apply({ sessionId: 's', kind: 'tool_call_output_delta', timestamp: '', data: { call_id: 'c', delta: 'END' } });
  const card = m.entries[0];
  assert.ok(card.kind === 'tool');
  assert.equal(card.output.length, MAX_TOOL_OUTPUT);
  assert.equal(card.outputDropped, 40 * chunk.length + 3 - MAX_TOOL_OUTPUT);
  assert.ok(card.output.endsWith('\nEND'));
});

test('warnings, errors, loops, reloads, limits and cancellation show inline', () => {
  const ev = (kind: string, data: object): ChatOp => ({ sessionId: 's', kind, timestamp: '', data }) as ChatOp;
  const m = fold([
    ev('user_input', { content: 'go' }),
    ev('tool_call_start', { tool_name: 'shell', call_id: 'c', summary: 'shell: sleep 100', arguments: '{}' }),
    ev('warning', { message: 'context is 90% full' }),
    ev('loop_detection', { message: 'the same call three times' }),
    ev('project_docs_reloaded', { path: '/ws/AGENTS.md', message: '/ws/AGENTS.md changed; it applies from the next model call' }),
    ev('turn_limit', { round: 20 }),
    ev('error', { message: 'provider unavailable', fatal: false }),
    ev('steering_injected', { content: 'use rg instead' }),
    ev('processing_end', { state: 'idle', reason: 'cancelled', text: '' }),
  ]);
  assert.deepEqual(visible(m.entries), [
    { user: 'go', steering: false },
    { tool: 'shell', summary: 'shell: sleep 100', status: 'cancelled', output: '', review: undefined, timed: false },
    { notice: 'warning', text: 'context is 90% full' },
    { notice: 'warning', text: 'Loop detected: the same call three times' },
    { notice: 'info', text: '/ws/AGENTS.md changed; it applies from the next model call' },
    { notice: 'warning', text: 'Turn limit: stopped after 20 tool rounds for this input.' },
    { notice: 'error', text: 'provider unavailable' },
    { user: 'use rg instead', steering: true },
    { turnEnd: 'cancelled', tokens: false },
  ]);
});

test('a snapshot rebuilds the same model (the webview starts from one)', () => {
  const m = fold(events);
  const copy = ChatModel.from(JSON.parse(JSON.stringify(m.snapshot())));
  const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
  assert.deepEqual(plain(copy.snapshot()), plain(m.snapshot()));
  copy.apply({ kind: 'review_result', callId: 'toolu_w1', result: 'accepted' });
  const card = copy.entries.find((e) => e.kind === 'tool' && e.callId === 'toolu_w1');
  assert.equal(card?.kind === 'tool' && card.review, 'accepted');
});

test('history entries of a resumed session become entries (agentls.history)', () => {
  const m = fold([{ kind: 'history', entries: [
    { kind: 'user', text: 'add a flag', timestamp: '2026-11-20T10:02:11+00:00' },
    { kind: 'assistant', text: 'I will read the CLI first.', reasoning: null, timestamp: '…', toolCalls: [{ callId: 'toolu_01', toolName: 'read_file', summary: 'read_file src/cli.py', arguments: { file_path: 'src/cli.py' } }] },
    { kind: 'tool_result', callId: 'toolu_01', toolName: 'read_file', output: 'def main(): ...', isError: false, timestamp: '…' },
    { kind: 'steering', text: 'only the CLI', timestamp: '…' },
    { kind: 'assistant', text: 'Added `--verbose`.', reasoning: null, timestamp: '…', toolCalls: [{ callId: 'toolu_02', toolName: 'shell', summary: 'shell: false', arguments: { command: 'false' } }] },
    { kind: 'tool_result', callId: 'toolu_02', toolName: 'shell', output: 'Exit code: 1', isError: true, timestamp: '…' },
  ] }]);
  assert.deepEqual(visible(m.entries), [
    { user: 'add a flag', steering: false },
    { assistant: 'I will read the CLI first.', streaming: false },
    { tool: 'read_file', summary: 'read_file src/cli.py', status: 'ok', output: 'def main(): ...', review: undefined, timed: false },
    { user: 'only the CLI', steering: true },
    { assistant: 'Added `--verbose`.', streaming: false },
    { tool: 'shell', summary: 'shell: false', status: 'error', output: 'Exit code: 1', review: undefined, timed: false },
  ]);
});

test('a server that stops mid-turn leaves nothing running', () => {
  const upTo = events.findIndex((e) => e.kind === 'tool_call_start' && e.data.call_id === 'toolu_s1');
  const m = fold([...events.slice(0, upTo + 1), { kind: 'interrupted', text: 'The agentls server stopped.' }]);
  assert.equal(m.header.busy, false);
  assert.equal(m.header.currentTool, undefined);
  assert.deepEqual(visible(m.entries.slice(-2)), [
    { tool: 'shell', summary: 'shell: echo checked', status: 'cancelled', output: '', review: undefined, timed: false },
    { notice: 'error', text: 'The agentls server stopped.' },
  ]);
});

test('reasoning streams beside the answer and ends with it', () => {
  const ev = (kind: string, data: object): ChatOp => ({ sessionId: 's', kind, timestamp: '', data }) as ChatOp;
  const m = fold([
    ev('assistant_text_start', { model: 'm' }),
    ev('assistant_reasoning_delta', { delta: 'Think ' }),
    ev('assistant_reasoning_delta', { delta: 'first.' }),
    ev('assistant_text_delta', { delta: 'Answer.' }),
    ev('assistant_text_end', { text: 'Answer.', reasoning: 'Think first.', usage: { input_tokens: 3, output_tokens: 4 } }),
  ]);
  const a = m.entries[0];
  assert.deepEqual(a.kind === 'assistant' && { text: a.text, reasoning: a.reasoning, streaming: a.streaming }, { text: 'Answer.', reasoning: 'Think first.', streaming: false });
});

test('a compaction, a pruning warning, the new limits and a stored summary are shown as notices', () => {
  const m = new ChatModel();
  const event = <K extends AgentEvent['kind']>(kind: K, data: Extract<AgentEvent, { kind: K }>['data']): ChatOp =>
    ({ sessionId, kind, timestamp: '2026-11-24T00:00:00Z', data }) as ChatOp;
  m.apply(event('compaction', { trigger: 'auto', tokens_before: 170000, tokens_after: 21000, messages_summarized: 40, messages_kept: 6, model: 'claude-haiku-4-5' }));
  m.apply(event('warning', { message: 'dropped the 4 oldest turns (2 model responses and 2 tool results (shell ×2), 900 characters)', turns_removed: 4, dropped: '2 model responses and 2 tool results (shell ×2)' }));
  m.apply(event('turn_limit', { steps: 5 }));
  m.apply(event('turn_limit', { time_limit_secs: 60 }));
  m.apply({ kind: 'history', entries: [{ kind: 'summary', text: 'We fixed the parser.', turnsSummarized: 12, timestamp: '…' }] });
  assert.deepEqual(visible(m.entries), [
    { notice: 'info', text: 'Compacted the conversation (it was filling the context window): 40 earlier messages were replaced by a summary written by claude-haiku-4-5; 6 recent ones are kept as they were. Context ~170000 → ~21000 tokens.' },
    { notice: 'warning', text: 'dropped the 4 oldest turns (2 model responses and 2 tool results (shell ×2), 900 characters)' },
    { notice: 'warning', text: 'Step limit: stopped after 5 model requests for this input.' },
    { notice: 'warning', text: 'Time limit: stopped after 60 s for this input.' },
    { notice: 'info', text: 'Earlier conversation (12 messages), as summarised for the model:\n\nWe fixed the parser.' },
  ]);
});

test('a subagent folds into a card on its spawn call and never ends the turn', () => {
  const sid = 's1';
  const agent = { agentId: 'agent-1', sessionId: 's1-agent-1', parentSessionId: sid, parentCallId: 'c-spawn' };
  const at = '2026-11-24T00:00:00Z';
  const own = (kind: string, data: unknown): ChatOp => ({ sessionId: sid, kind, timestamp: at, data } as ChatOp);
  const child = (kind: string, data: unknown): ChatOp => ({ sessionId: sid, kind, timestamp: at, data, agent } as ChatOp);
  const m = fold([
    own('session_start', { profile: 'openai', model: 'm', cwd: '/w', resumed: false, tools: [], project_docs: [] }),
    own('user_input', { content: 'delegate' }),
    own('tool_call_start', { tool_name: 'spawn_agent', call_id: 'c-spawn', summary: 'spawn_agent', arguments: {} }),
    own('tool_call_end', { tool_name: 'spawn_agent', call_id: 'c-spawn', summary: 'spawn_agent', status: 'ok', output: '{}', truncated: false, duration_ms: 1 }),
    child('session_start', { profile: 'openai', model: 'm', cwd: '/w', resumed: false, tools: [], project_docs: [] }),
    child('user_input', { content: 'write tests' }),
    // The same call id as one of the parent's: it stays the child's.
    child('tool_call_start', { tool_name: 'write_file', call_id: 'c-spawn', summary: 'write_file t.py', arguments: {} }),
    child('tool_call_end', { tool_name: 'write_file', call_id: 'c-spawn', summary: 'write_file t.py', status: 'ok', output: 'ok', truncated: false, duration_ms: 1 }),
    child('assistant_text_start', { model: 'm' }),
    child('assistant_text_delta', { delta: 'tests written' }),
    child('assistant_text_end', { text: 'tests written', tool_calls: [] }),
    child('processing_end', { state: 'idle', reason: 'completed', text: 'tests written', totals: null }),
  ]);
  assert.equal(m.header.busy, true, "the child's processing_end does not end the parent's turn");
  assert.deepEqual(visible(m.entries), [
    { user: 'delegate', steering: false },
    { tool: 'spawn_agent', summary: 'spawn_agent', status: 'ok', output: '{}', review: undefined, timed: true },
  ]);
  const spawn = m.entries[1];
  assert.ok(spawn.kind === 'tool');
  const card = spawn.agents?.[0];
  assert.equal(card?.status, 'completed');
  assert.deepEqual(visible(card?.entries ?? []), [
    { user: 'write tests', steering: false },
    { tool: 'write_file', summary: 'write_file t.py', status: 'ok', output: 'ok', review: undefined, timed: true },
    { assistant: 'tests written', streaming: false },
    { turnEnd: 'completed', tokens: false },
  ]);
  // A snapshot (what the webview starts from) keeps the card, and later events still reach it.
  const again = ChatModel.from(m.snapshot());
  again.apply(child('session_end', { state: 'closed', totals: null }));
  const after = again.entries[1];
  assert.ok(after.kind === 'tool');
  assert.equal(after.agents?.[0].status, 'completed');
  assert.equal(after.agents?.[0].entries.at(-1)?.kind, 'notice');
  assert.equal(again.header.busy, true);
});

// ---- undo and redo of turns (issue 28) ----

const at = '2026-11-26T21:00:00+00:00';
const totals = { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };
const input = (content: string, turnId: number): AgentEvent => ({ sessionId: 's1', kind: 'user_input', timestamp: at, data: { content, turn_id: turnId } });
const end: AgentEvent = { sessionId: 's1', kind: 'processing_end', timestamp: at, data: { state: 'idle', reason: 'completed', text: '', totals } };
const undoState = (undone: number[], redoable: number[], direction?: 'undo' | 'redo'): AgentEvent => ({
  sessionId: 's1', kind: 'undo_state', timestamp: at,
  data: { undone, redoable, ...(direction ? { direction, turn_ids: undone.length ? undone : redoable } : {}) },
});

function turnsOf(m: ChatModel): unknown[] {
  return m.entries.flatMap((e) => (e.kind === 'user' && e.turnId !== undefined ? [{ turn: e.turnId, undone: e.undone ?? false, actions: turnActions(m.entries, e, m.header.busy) }] : []));
}

test('each ended turn offers "Undo this turn", which says it also reverts the later turns; none while a turn runs', () => {
  const m = fold([input('one', 1), end, input('two', 2), end, input('three', 3)]);
  const undo = (laterTurns: number, enabled: boolean, later: string) => ({
    undo: { enabled, laterTurns, title: `Undo this turn: reverts the files it changed${later}, keeping your own edits since${enabled ? '' : ' (wait for the running turn to end)'}` },
  });
  assert.deepEqual(turnsOf(m), [
    { turn: 1, undone: false, actions: undo(2, false, ' and those of the 2 later turns') },
    { turn: 2, undone: false, actions: undo(1, false, ' and those of the 1 later turn') },
    { turn: 3, undone: false, actions: {} },
  ]);
  m.apply(end);
  assert.deepEqual(turnsOf(m)[2], { turn: 3, undone: false, actions: undo(0, true, '') });
  assert.deepEqual(turnsOf(m)[0], { turn: 1, undone: false, actions: undo(2, true, ' and those of the 2 later turns') });
});

test('an undo marks its turns undone and offers Redo on them; a redo or a new turn that changed files takes it back', () => {
  const m = fold([input('one', 1), end, input('two', 2), end, input('three', 3), end]);
  const changed = m.apply(undoState([2, 3], [2, 3], 'undo'));
  const ids = m.entries.filter((e) => e.kind === 'user' && (e.turnId === 2 || e.turnId === 3)).map((e) => e.id);
  assert.deepEqual(changed, ids, 'the two user entries are re-rendered');
  const redo = { redo: { enabled: true, title: 'Redo: re-applies the file changes of turns 2, 3 (undone together), keeping your edits since' } };
  assert.deepEqual(turnsOf(m), [
    { turn: 1, undone: false, actions: { undo: { enabled: true, laterTurns: 0, title: 'Undo this turn: reverts the files it changed, keeping your own edits since' } } },
    { turn: 2, undone: true, actions: redo },
    { turn: 3, undone: true, actions: redo },
  ]);
  m.apply(undoState([], [], 'redo'));
  assert.deepEqual(turnsOf(m).map((t) => (t as { undone: boolean }).undone), [false, false, false]);
  m.apply(undoState([3], [3], 'undo'));
  m.apply(input('four', 4));
  assert.deepEqual((turnsOf(m)[2] as { actions: unknown }).actions, { redo: { enabled: false, title: 'Redo: re-applies the file changes of turn 3, keeping your edits since (wait for the running turn to end)' } });
  m.apply(end);
  m.apply(undoState([3], []));
  assert.deepEqual(turnsOf(m).slice(2), [
    { turn: 3, undone: true, actions: {} },
    { turn: 4, undone: false, actions: { undo: { enabled: true, laterTurns: 0, title: 'Undo this turn: reverts the files it changed, keeping your own edits since' } } },
  ]);
  assert.deepEqual(m.apply(undoState([3], [])), [], 'an unchanged state re-renders nothing');
});

test('a reopened session\'s history carries the turn ids and which are undone', () => {
  const m = fold([{
    kind: 'history',
    entries: [
      { kind: 'user', text: 'one', timestamp: at, turnId: 1 },
      { kind: 'steering', text: 'faster', timestamp: at },
      { kind: 'user', text: 'two', timestamp: at, turnId: 2 },
    ],
    undone: [2],
    redoable: [2],
  }]);
  assert.deepEqual(turnsOf(m).map((t) => { const { actions, ...rest } = t as { actions: { undo?: unknown; redo?: unknown } }; return { ...rest, undo: !!actions.undo, redo: !!actions.redo }; }), [
    { turn: 1, undone: false, undo: true, redo: false },
    { turn: 2, undone: true, undo: false, redo: true },
  ]);
});

test('a turn the server stopped during ends too (its buttons appear)', () => {
  const m = fold([input('one', 1), { kind: 'interrupted', text: 'the server stopped' }]);
  assert.equal((m.entries[0] as { running?: boolean }).running, false);
});
