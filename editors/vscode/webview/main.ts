// The chat view's script: applies the host's ops to its own ChatModel (the same reducer the
// host runs) and renders the changed entries once per animation frame.

import { ChatModel, turnActions, type Entry, type SubagentCard, type ToolEntry, type UserEntry } from '../src/chat/model';
import type { FromWebview, ToWebview } from '../src/chat/messages';
import { mcpTool } from '../src/mcp_text';
import { StreamingMarkdown } from './markdown';

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void };
const vscode = acquireVsCodeApi();

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const transcript = $<HTMLDivElement>('transcript');
const input = $<HTMLTextAreaElement>('prompt');
const sendButton = $<HTMLButtonElement>('send');
const stopButton = $<HTMLButtonElement>('stop');
const modelButton = $<HTMLButtonElement>('model');
const effortButton = $<HTMLButtonElement>('effort');
const serverState = $<HTMLSpanElement>('server-state');
const empty = $<HTMLDivElement>('empty');

let model = new ChatModel();
let hasSession = false;
const views = new Map<number, EntryView>();
const dirty = new Set<number>();
let frameRequested = false;
/** Follow new output unless the user scrolled up to read (a resize of the view keeps following). */
let stickToBottom = true;
// Only the user's own scrolling up stops following (layout changes also fire scroll events).
transcript.addEventListener('wheel', (ev) => {
  if (ev.deltaY < 0) stickToBottom = false;
}, { passive: true });
transcript.addEventListener('keydown', (ev) => {
  if (['PageUp', 'ArrowUp', 'Home'].includes(ev.key)) stickToBottom = false;
});
transcript.addEventListener('pointerdown', (ev) => {
  if (ev.target === transcript) stickToBottom = false;
});
transcript.addEventListener('scroll', () => {
  if (transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40) stickToBottom = true;
});
new ResizeObserver(() => {
  if (stickToBottom) transcript.scrollTop = transcript.scrollHeight;
}).observe(transcript);

/** Frame statistics, read by the benchmark; `textShownAt` is the wall-clock time of the last
 *  frame that left no received text unrendered. */
const stats = { frames: 0, totalMs: 0, worstMs: 0, deltaChars: 0, textShownAt: 0 };
let shownChars = 0;
(window as unknown as { agentlsStats: typeof stats }).agentlsStats = stats;

/** `update` returns true when it left work for the next frame. */
interface EntryView { el: HTMLElement; update(e: Entry): boolean | void }

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function userView(): EntryView {
  const root = el('div', 'entry user');
  const head = el('div', 'user-head');
  const label = el('span', 'who');
  const turn = el('span', 'turn-id');
  const mark = el('span', 'turn-undone', 'undone');
  const undo = el('button', 'turn-action undo', 'Undo this turn');
  const redo = el('button', 'turn-action redo', 'Redo');
  head.append(label, turn, mark, undo, redo);
  const body = el('div', 'text');
  root.append(head, body);
  let shown: UserEntry | undefined;
  undo.addEventListener('click', () => {
    const actions = shown && turnActions(model.entries, shown, model.header.busy);
    if (shown?.turnId === undefined || !actions?.undo?.enabled) return;
    vscode.postMessage({ type: 'undoTurn', turnId: shown.turnId, laterTurns: actions.undo.laterTurns });
  });
  redo.addEventListener('click', () => vscode.postMessage({ type: 'redoTurn' }));
  return {
    el: root,
    update(e) {
      if (e.kind !== 'user') return;
      shown = e;
      label.textContent = e.steering ? 'You (steering)' : 'You';
      turn.textContent = e.turnId !== undefined ? `turn ${e.turnId}` : '';
      turn.hidden = e.turnId === undefined;
      root.classList.toggle('undone', !!e.undone);
      mark.hidden = !e.undone;
      const actions = turnActions(model.entries, e, model.header.busy);
      undo.hidden = !actions.undo;
      undo.disabled = !actions.undo?.enabled;
      undo.title = actions.undo?.title ?? '';
      redo.hidden = !actions.redo;
      redo.disabled = !actions.redo?.enabled;
      redo.title = actions.redo?.title ?? '';
      body.textContent = e.text;
    },
  };
}

function assistantView(): EntryView {
  const root = el('div', 'entry assistant');
  const answer = el('div', 'markdown');
  const reasoning = el('details', 'reasoning');
  const summary = el('summary', undefined, 'Reasoning');
  const reasoningText = el('div', 'reasoning-text');
  reasoning.append(summary, reasoningText);
  reasoning.hidden = true;
  root.append(answer, reasoning);
  const stream = new StreamingMarkdown(answer);
  let shownReasoning = 0;
  return {
    el: root,
    update(e) {
      if (e.kind !== 'assistant') return;
      const more = stream.update(e.text, !e.streaming);
      root.classList.toggle('streaming', e.streaming);
      if (e.reasoning.length !== shownReasoning) {
        reasoning.hidden = !e.reasoning;
        // Reasoning only grows while it streams: append the new part instead of replacing it all.
        const node = reasoningText.firstChild;
        if (node instanceof Text && e.reasoning.length > shownReasoning && e.reasoning.startsWith(node.data)) node.appendData(e.reasoning.slice(shownReasoning));
        else reasoningText.textContent = e.reasoning;
        shownReasoning = e.reasoning.length;
      }
      return more;
    },
  };
}

const STATUS_ICON: Record<ToolEntry['status'], string> = { running: '⟳', ok: '✓', error: '✗', cancelled: '⊘' };
/** Output shown in a card; the rest is summarised (the model got it all). */
const SHOWN_OUTPUT = 256 * 1024;

function toolView(): EntryView {
  const root = el('div', 'entry tool');
  const head = el('div', 'tool-head');
  const icon = el('span', 'tool-status');
  const name = el('span', 'tool-name');
  const summary = el('span', 'tool-summary');
  const duration = el('span', 'tool-duration');
  const review = el('span', 'tool-review');
  head.append(icon, name, summary, duration);
  const details = el('details', 'tool-output');
  const detailsSummary = el('summary', undefined, 'Output');
  const note = el('div', 'tool-note');
  const pre = el('pre');
  details.append(detailsSummary, note, pre);
  details.hidden = true;
  const agents = el('div', 'tool-agents');
  const cards = new Map<string, { details: HTMLDetailsElement; title: HTMLElement; body: HTMLElement }>();
  root.append(head, review, details, agents);
  let shownDropped = -1;
  let shownLen = 0;
  let last: ToolEntry | undefined;
  const renderOutput = (e: ToolEntry): void => {
    const text = e.error && !e.output ? e.error : e.output;
    details.hidden = !text;
    detailsSummary.textContent = `Output (${formatBytes(text.length + e.outputDropped)})${e.truncated ? ', shortened for the model' : ''}`;
    if (!details.open) return;
    if (shownDropped === e.outputDropped && shownLen > 0 && text.length >= shownLen && text.length <= SHOWN_OUTPUT) {
      if (text.length > shownLen) pre.append(document.createTextNode(text.slice(shownLen)));
    } else {
      let start = Math.max(0, text.length - SHOWN_OUTPUT);
      const nl = start ? text.indexOf('\n', start) : -1;
      if (nl >= 0 && nl - start < 4096) start = nl + 1;
      const hidden = start + e.outputDropped;
      note.textContent = hidden ? `${formatBytes(hidden)} of earlier output not shown` : '';
      pre.textContent = text.slice(start);
      shownDropped = start ? -1 : e.outputDropped;
    }
    shownLen = text.length;
  };
  details.addEventListener('toggle', () => {
    if (details.open && last) {
      shownDropped = -1;
      renderOutput(last);
    }
  });
  return {
    el: root,
    update(e) {
      if (e.kind !== 'tool') return;
      last = e;
      root.dataset.status = e.status;
      icon.textContent = STATUS_ICON[e.status];
      icon.title = e.status;
      const mcp = mcpTool(e.toolName);
      // The summary names the server and the tool (`github: create_issue {…}`).
      name.textContent = mcp ? 'MCP' : e.toolName;
      name.title = mcp ? `the tool "${mcp.tool}" of the MCP server "${mcp.server}" (${e.toolName})` : '';
      name.classList.toggle('mcp', !!mcp);
      summary.textContent = e.summary;
      duration.textContent = e.durationMs !== undefined ? formatDuration(e.durationMs) : e.status === 'running' ? 'running' : e.status;
      review.textContent = e.review ?? '';
      review.hidden = !e.review;
      review.dataset.result = e.review?.split(' ')[0] ?? '';
      renderOutput(e);
      for (const card of e.agents ?? []) {
        let view = cards.get(card.sessionId);
        if (!view) {
          const d = el('details', 'subagent');
          d.open = true;
          const title = el('summary', 'subagent-title');
          const body = el('div', 'subagent-body');
          d.append(title, body);
          agents.append(d);
          view = { details: d, title, body };
          cards.set(card.sessionId, view);
        }
        renderSubagent(card, view.title, view.body);
        view.details.dataset.status = card.status;
      }
    },
  };
}

/** A subagent's card: its id and status, then its transcript as lines (its tools with their
 *  status, its answers as text, its own subagents nested the same way). */
function renderSubagent(card: SubagentCard, title: HTMLElement, body: HTMLElement): void {
  title.textContent = `${card.agentId} · ${card.status}`;
  body.replaceChildren(...card.entries.map((e) => {
    switch (e.kind) {
      case 'user': return el('div', 'subagent-user', `▸ ${e.text}`);
      case 'assistant': return el('div', 'subagent-text', e.text);
      case 'notice': return el('div', 'subagent-notice', e.text);
      case 'turn_end': return el('div', 'subagent-end', e.reason);
      case 'tool': {
        const line = el('div', 'subagent-tool', `${STATUS_ICON[e.status]} ${e.summary || e.toolName}`);
        for (const nested of e.agents ?? []) {
          const d = el('details', 'subagent');
          d.open = true;
          const t = el('summary', 'subagent-title');
          const b = el('div', 'subagent-body');
          d.append(t, b);
          renderSubagent(nested, t, b);
          line.append(d);
        }
        return line;
      }
    }
  }));
}

function noticeView(): EntryView {
  const root = el('div', 'entry notice');
  return {
    el: root,
    update(e) {
      if (e.kind !== 'notice') return;
      root.dataset.level = e.level;
      root.textContent = e.text;
    },
  };
}

function turnEndView(): EntryView {
  const root = el('div', 'entry turn-end');
  return {
    el: root,
    update(e) {
      if (e.kind !== 'turn_end') return;
      const tokens = e.inputTokens || e.outputTokens ? ` · ${e.inputTokens.toLocaleString()} in / ${e.outputTokens.toLocaleString()} out tokens` : '';
      root.textContent = `${e.reason}${tokens}`;
      root.dataset.reason = e.reason;
    },
  };
}

function makeView(e: Entry): EntryView {
  switch (e.kind) {
    case 'user': return userView();
    case 'assistant': return assistantView();
    case 'tool': return toolView();
    case 'notice': return noticeView();
    case 'turn_end': return turnEndView();
  }
}

function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

function formatBytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function renderHeader(): void {
  const h = model.header;
  modelButton.textContent = h.model ? h.model : 'model: default';
  effortButton.textContent = `effort: ${h.reasoningEffort ?? 'default'}`;
  modelButton.disabled = effortButton.disabled = !hasSession;
  document.body.classList.toggle('busy', h.busy);
  stopButton.hidden = !h.busy;
  input.placeholder = h.busy ? 'Steer the running turn… (Enter sends)' : 'Ask agentls… (Enter sends, Shift+Enter new line)';
  sendButton.textContent = h.busy ? 'Steer' : 'Send';
  empty.hidden = model.entries.length > 0;
}

function render(): void {
  frameRequested = false;
  const t0 = performance.now();
  const again: number[] = [];
  // The header's busy state and each new turn change what every turn's buttons offer.
  if (dirty.has(-1)) for (const e of model.entries) if (e.kind === 'user' && e.turnId !== undefined) dirty.add(e.id);
  for (const id of dirty) {
    if (id === -1) {
      renderHeader();
      continue;
    }
    const entry = findFromEnd(id);
    if (!entry) {
      views.get(id)?.el.remove();
      views.delete(id);
      continue;
    }
    let view = views.get(id);
    if (!view) {
      view = makeView(entry);
      views.set(id, view);
      transcript.append(view.el);
    }
    if (view.update(entry)) again.push(id);
  }
  dirty.clear();
  for (const id of again) dirty.add(id);
  if (again.length) schedule();
  empty.hidden = model.entries.length > 0;
  if (stickToBottom) transcript.scrollTop = transcript.scrollHeight;
  const dt = performance.now() - t0;
  if (!again.length && shownChars !== stats.deltaChars) {
    shownChars = stats.deltaChars;
    stats.textShownAt = Date.now();
  }
  stats.frames++;
  stats.totalMs += dt;
  stats.worstMs = Math.max(stats.worstMs, dt);
}

function findFromEnd(id: number): Entry | undefined {
  for (let i = model.entries.length - 1; i >= 0; i--) if (model.entries[i].id === id) return model.entries[i];
  return undefined;
}

function schedule(): void {
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(render);
  }
}

function reset(msg: Extract<ToWebview, { type: 'reset' }>): void {
  model = msg.snapshot ? ChatModel.from(msg.snapshot) : new ChatModel();
  hasSession = !!msg.snapshot;
  views.clear();
  transcript.replaceChildren();
  stickToBottom = true;
  serverState.textContent = msg.serverState;
  serverState.hidden = !msg.serverState;
  dirty.add(-1);
  for (const e of model.entries) dirty.add(e.id);
  schedule();
}

window.addEventListener('message', (ev: MessageEvent<ToWebview>) => {
  const msg = ev.data;
  switch (msg.type) {
    case 'reset':
      reset(msg);
      break;
    case 'ops':
      for (const op of msg.ops) {
        if (op.kind === 'assistant_text_delta') stats.deltaChars += op.data.delta.length;
        for (const id of model.apply(op)) dirty.add(id);
      }
      hasSession = true;
      schedule();
      break;
    case 'serverState':
      serverState.textContent = msg.state;
      serverState.hidden = !msg.state;
      break;
    case 'focus':
      input.focus();
      break;
  }
});

/** Whether the host was told that the user is writing the next prompt (once per prompt). */
let typingTold = false;
function typing(): void {
  if (typingTold) return;
  typingTold = true;
  vscode.postMessage({ type: 'typing' });
}

function send(): void {
  const text = input.value;
  if (!text.trim()) return;
  vscode.postMessage({ type: 'send', text });
  input.value = '';
  typingTold = false;
  autosize();
}

function autosize(): void {
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}

input.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    send();
  }
});
input.addEventListener('input', () => {
  typing();
  autosize();
});
input.addEventListener('focus', typing);
sendButton.addEventListener('click', send);
stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
$('new-session').addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
$('sessions').addEventListener('click', () => vscode.postMessage({ type: 'switchSession' }));
modelButton.addEventListener('click', () => vscode.postMessage({ type: 'selectModel' }));
effortButton.addEventListener('click', () => vscode.postMessage({ type: 'setReasoningEffort' }));

renderHeader();
vscode.postMessage({ type: 'ready' });
