// The chat transcript of one session as data: the `agentls/event` stream (plus the few facts only
// the extension knows, such as a review's outcome) folded into entries the view renders. The same
// reducer runs in the extension host (status bar, snapshots) and in the webview (rendering), so
// both always agree. No `vscode`, no DOM.

import type { AgentEvent, EventDataByKind, HistoryEntry, SubagentRef, Usage } from '../lsp_ext';

export type ToolStatus = 'running' | 'ok' | 'error' | 'cancelled';

/** A user's input. `turnId`: the checkpointed turn it started (what "Undo this turn" takes);
 *  `running` while its turn runs; `undone` once undone, `redoable` when a redo would re-apply it. */
export interface UserEntry {
  kind: 'user';
  id: number;
  text: string;
  steering?: boolean;
  turnId?: number;
  running?: boolean;
  undone?: boolean;
  redoable?: boolean;
}
export interface AssistantEntry { kind: 'assistant'; id: number; text: string; reasoning: string; streaming: boolean }
export interface ToolEntry {
  kind: 'tool';
  id: number;
  callId: string;
  toolName: string;
  summary: string;
  status: ToolStatus;
  durationMs?: number;
  output: string;
  /** Bytes of output dropped from the front to keep the entry bounded. */
  outputDropped: number;
  truncated?: boolean;
  error?: string;
  review?: string;
  /** The subagents this call (`spawn_agent`) started, each with its own transcript. */
  agents?: SubagentCard[];
}

export type SubagentStatus = 'running' | 'completed' | 'failed' | 'closed';
/** One subagent's card: its own entries, folded by its own model. */
export interface SubagentCard { agentId: string; sessionId: string; status: SubagentStatus; entries: Entry[]; nextId: number }
export interface NoticeEntry { kind: 'notice'; id: number; level: 'info' | 'warning' | 'error'; text: string }
export interface TurnEndEntry { kind: 'turn_end'; id: number; reason: string; inputTokens: number; outputTokens: number }

export type Entry = UserEntry | AssistantEntry | ToolEntry | NoticeEntry | TurnEndEntry;

/** Facts the extension adds to the stream. */
export type LocalOp =
  | { kind: 'review_result'; callId: string; result: string }
  | { kind: 'notice'; level: NoticeEntry['level']; text: string }
  /** The server stopped mid-turn: nothing still running will finish. */
  | { kind: 'interrupted'; text: string }
  | { kind: 'history'; entries: HistoryEntry[]; undone?: number[]; redoable?: number[] };

export type ChatOp = AgentEvent | LocalOp;

export interface Header {
  sessionId?: string;
  model?: string;
  reasoningEffort?: string | null;
  approval?: string;
  busy: boolean;
  /** The running tool's summary, for the status bar. */
  currentTool?: string;
}

export interface ChatSnapshot { header: Header; entries: Entry[]; nextId: number }

/** Output kept per tool card; older output is dropped from the front (the model got it all). */
export const MAX_TOOL_OUTPUT = 2 * 1024 * 1024;

export class ChatModel {
  header: Header = { busy: false };
  entries: Entry[] = [];
  private nextId = 1;
  private readonly tools = new Map<string, ToolEntry>();
  private turnUsage = { input: 0, output: 0 };
  /** Subagents' models by their session id, with the card that shows each. */
  private readonly children = new Map<string, { model: ChatModel; card: SubagentCard; spawn: ToolEntry }>();

  static from(snapshot: ChatSnapshot): ChatModel {
    const m = new ChatModel();
    m.header = { ...snapshot.header };
    m.entries = snapshot.entries.map((e) => (e.kind === 'tool' && e.agents ? { ...e, agents: e.agents.map((c) => ({ ...c })) } : { ...e }));
    m.nextId = snapshot.nextId;
    for (const e of m.entries) {
      if (e.kind !== 'tool') continue;
      m.tools.set(e.callId, e);
      for (const card of e.agents ?? []) {
        const child = ChatModel.from({ header: { busy: card.status === 'running' }, entries: card.entries, nextId: card.nextId });
        m.children.set(card.sessionId, { model: child, card, spawn: e });
      }
    }
    return m;
  }

  snapshot(): ChatSnapshot {
    const entries = this.entries.map((e) => (e.kind === 'tool' && e.agents ? { ...e, agents: e.agents.map((c) => ({ ...c })) } : { ...e }));
    return { header: { ...this.header }, entries, nextId: this.nextId };
  }

  /** A subagent's event goes to its own model (a deeper one's through its parent's), shown in
   *  the card on the `spawn_agent` call that started it; it never touches this session's state. */
  private applySubagent(op: AgentEvent, agent: SubagentRef): number[] {
    const owner = [...this.children.values()].find((c) => c.card.sessionId === agent.parentSessionId || c.model.owns(agent.parentSessionId));
    if (owner) {
      owner.model.apply(op);
      owner.card.entries = owner.model.entries.map((e) => ({ ...e }));
      owner.card.nextId = owner.model.nextId;
      return [owner.spawn.id];
    }
    let child = this.children.get(agent.sessionId);
    if (!child) {
      const spawn = this.tools.get(agent.parentCallId)
        ?? this.push<ToolEntry>({ kind: 'tool', callId: agent.parentCallId, toolName: 'spawn_agent', summary: 'spawn_agent', status: 'running', output: '', outputDropped: 0 });
      this.tools.set(spawn.callId, spawn);
      const card: SubagentCard = { agentId: agent.agentId, sessionId: agent.sessionId, status: 'running', entries: [], nextId: 1 };
      spawn.agents = [...(spawn.agents ?? []), card];
      child = { model: new ChatModel(), card, spawn };
      this.children.set(agent.sessionId, child);
    }
    const { agent: _, ...own } = op;
    child.model.apply(own as AgentEvent);
    if (op.kind === 'processing_end') child.card.status = op.data.reason === 'completed' ? 'completed' : 'failed';
    else if (op.kind === 'user_input') child.card.status = 'running';
    else if (op.kind === 'session_end' && child.card.status === 'running') child.card.status = 'closed';
    child.card.entries = child.model.entries.map((e) => ({ ...e }));
    child.card.nextId = child.model.nextId;
    return [child.spawn.id];
  }

  /** Whether the subagent of session `sessionId` is below this model. */
  private owns(sessionId: string): boolean {
    return [...this.children.values()].some((c) => c.card.sessionId === sessionId || c.model.owns(sessionId));
  }

  /** The assistant entry being streamed, if any. */
  private streaming(): AssistantEntry | undefined {
    const last = this.entries[this.entries.length - 1];
    return last?.kind === 'assistant' && last.streaming ? last : undefined;
  }

  private push<E extends Entry>(entry: Omit<E, 'id'>): E {
    const e = { ...entry, id: this.nextId++ } as E;
    this.entries.push(e);
    return e;
  }

  /** Applies one op; returns the ids of the entries that changed or appeared (-1: the header). */
  apply(op: ChatOp): number[] {
    if ('agent' in op && op.agent) return this.applySubagent(op, op.agent);
    switch (op.kind) {
      case 'session_start':
        this.header = { ...this.header, sessionId: op.sessionId, model: op.data.model };
        return [-1];
      case 'config_changed':
        this.header = { ...this.header, model: op.data.model, reasoningEffort: op.data.reasoning_effort ?? null, approval: op.data.approval };
        return [-1, this.push<NoticeEntry>({ kind: 'notice', level: 'info', text: describeConfig(op.data) }).id];
      case 'user_input': {
        this.header = { ...this.header, busy: true };
        this.turnUsage = { input: 0, output: 0 };
        const turn = op.data.turn_id !== undefined ? { turnId: op.data.turn_id, running: true } : {};
        return [-1, this.push<UserEntry>({ kind: 'user', text: op.data.content, ...turn }).id];
      }
      case 'steering_injected':
        return [this.push<UserEntry>({ kind: 'user', text: op.data.content, steering: true }).id];
      case 'assistant_text_start': {
        const open = this.streaming();
        if (open) return [open.id];
        return [this.push<AssistantEntry>({ kind: 'assistant', text: '', reasoning: '', streaming: true }).id];
      }
      case 'assistant_text_delta':
      case 'assistant_reasoning_delta': {
        const e = this.streaming() ?? this.push<AssistantEntry>({ kind: 'assistant', text: '', reasoning: '', streaming: true });
        if (op.kind === 'assistant_text_delta') e.text += op.data.delta;
        else e.reasoning += op.data.delta;
        return [e.id];
      }
      case 'assistant_text_end': {
        addUsage(this.turnUsage, op.data.usage);
        const e = this.streaming();
        if (!e) {
          if (!op.data.text && !op.data.reasoning) return [];
          return [this.push<AssistantEntry>({ kind: 'assistant', text: op.data.text, reasoning: op.data.reasoning ?? '', streaming: false }).id];
        }
        // The end event carries the whole text: it wins over what the deltas built.
        e.text = op.data.text ?? e.text;
        e.reasoning = op.data.reasoning ?? e.reasoning;
        e.streaming = false;
        if (!e.text && !e.reasoning) {
          // A response with only tool calls: the placeholder goes (its id is reported, so views drop it).
          this.entries.pop();
          return [e.id];
        }
        return [e.id];
      }
      case 'tool_call_start': {
        const open = this.streaming();
        if (open) open.streaming = false;
        const e = this.push<ToolEntry>({
          kind: 'tool', callId: op.data.call_id, toolName: op.data.tool_name, summary: op.data.summary,
          status: 'running', output: '', outputDropped: 0,
        });
        this.tools.set(e.callId, e);
        this.header = { ...this.header, currentTool: op.data.summary };
        return [-1, ...(open ? [open.id] : []), e.id];
      }
      case 'tool_call_output_delta': {
        const e = this.tools.get(op.data.call_id);
        if (!e) return [];
        e.output += op.data.delta;
        if (e.output.length > MAX_TOOL_OUTPUT) {
          const drop = e.output.length - MAX_TOOL_OUTPUT;
          e.output = e.output.slice(drop);
          e.outputDropped += drop;
        }
        return [e.id];
      }
      case 'tool_call_end': {
        let e = this.tools.get(op.data.call_id);
        if (!e) {
          e = this.push<ToolEntry>({ kind: 'tool', callId: op.data.call_id, toolName: op.data.tool_name, summary: op.data.summary, status: 'running', output: '', outputDropped: 0 });
          this.tools.set(e.callId, e);
        }
        e.status = op.data.status;
        e.durationMs = op.data.duration_ms;
        e.summary = op.data.summary || e.summary;
        e.truncated = op.data.truncated;
        e.error = op.data.error;
        if (op.data.output !== undefined) {
          const full = op.data.output;
          e.outputDropped = Math.max(0, full.length - MAX_TOOL_OUTPUT);
          e.output = e.outputDropped ? full.slice(e.outputDropped) : full;
        }
        this.header = { ...this.header, currentTool: undefined };
        return [-1, e.id];
      }
      case 'review_result': {
        const e = this.tools.get(op.callId);
        if (!e) return [];
        e.review = op.result;
        return [e.id];
      }
      case 'turn_limit':
        return [this.notice('warning', describeLimit(op.data))];
      case 'compaction':
        return [this.notice('info', describeCompaction(op.data))];
      case 'loop_detection':
        return [this.notice('warning', `Loop detected: ${op.data.message}`)];
      case 'warning':
        return [this.notice('warning', op.data.message)];
      case 'error':
        return [this.notice('error', op.data.fatal ? `Fatal error: ${op.data.message}` : op.data.message)];
      case 'project_docs_reloaded':
        return [this.notice('info', op.data.message)];
      case 'notice':
        return [this.notice(op.level, op.text)];
      case 'interrupted': {
        const ids = [-1];
        const open = this.streaming();
        if (open) {
          open.streaming = false;
          ids.push(open.id);
        }
        for (const t of this.tools.values()) {
          if (t.status === 'running') {
            t.status = 'cancelled';
            ids.push(t.id);
          }
        }
        this.header = { ...this.header, busy: false, currentTool: undefined };
        return [...ids, ...this.turnsEnded(), this.notice('error', op.text)];
      }
      case 'processing_end': {
        const open = this.streaming();
        if (open) open.streaming = false;
        this.header = { ...this.header, busy: false, currentTool: undefined };
        for (const t of this.tools.values()) if (t.status === 'running') t.status = 'cancelled';
        const ids = [-1, ...(open ? [open.id] : []), ...this.turnsEnded()];
        const end = this.push<TurnEndEntry>({ kind: 'turn_end', reason: op.data.reason, inputTokens: this.turnUsage.input, outputTokens: this.turnUsage.output });
        return [...ids, end.id];
      }
      case 'session_end':
        this.header = { ...this.header, busy: false, currentTool: undefined };
        return [-1, this.notice('info', 'The session ended.')];
      case 'history': {
        const ids = op.entries.flatMap((h) => this.historyEntry(h));
        return [...ids, ...this.markUndone(op.undone ?? [], op.redoable ?? [])];
      }
      case 'undo_state':
        return this.markUndone(op.data.undone, op.data.redoable);
    }
  }

  /** The user entries whose turn ran, now ended. */
  private turnsEnded(): number[] {
    const ids: number[] = [];
    for (const e of this.entries) {
      if (e.kind === 'user' && e.running) {
        e.running = false;
        ids.push(e.id);
      }
    }
    return ids;
  }

  /** Marks the turns undone now and those a redo would re-apply; returns the entries that changed. */
  private markUndone(undone: number[], redoable: number[]): number[] {
    const ids: number[] = [];
    for (const e of this.entries) {
      if (e.kind !== 'user' || e.turnId === undefined) continue;
      const isUndone = undone.includes(e.turnId);
      const isRedoable = redoable.includes(e.turnId);
      if (!!e.undone === isUndone && !!e.redoable === isRedoable) continue;
      e.undone = isUndone || undefined;
      e.redoable = isRedoable || undefined;
      ids.push(e.id);
    }
    return ids;
  }

  private notice(level: NoticeEntry['level'], text: string): number {
    return this.push<NoticeEntry>({ kind: 'notice', level, text }).id;
  }

  private historyEntry(h: HistoryEntry): number[] {
    switch (h.kind) {
      case 'user':
        return [this.push<UserEntry>({ kind: 'user', text: h.text, ...(h.turnId !== undefined ? { turnId: h.turnId } : {}) }).id];
      case 'steering':
        return [this.push<UserEntry>({ kind: 'user', text: h.text, steering: true }).id];
      case 'assistant': {
        const ids: number[] = [];
        if (h.text || h.reasoning) {
          ids.push(this.push<AssistantEntry>({ kind: 'assistant', text: h.text, reasoning: h.reasoning ?? '', streaming: false }).id);
        }
        for (const call of h.toolCalls ?? []) {
          const e = this.push<ToolEntry>({ kind: 'tool', callId: call.callId, toolName: call.toolName, summary: call.summary, status: 'cancelled', output: '', outputDropped: 0 });
          this.tools.set(call.callId, e);
          ids.push(e.id);
        }
        return ids;
      }
      case 'tool_result': {
        let e = this.tools.get(h.callId);
        if (!e) {
          e = this.push<ToolEntry>({ kind: 'tool', callId: h.callId, toolName: h.toolName, summary: h.toolName, status: 'ok', output: '', outputDropped: 0 });
          this.tools.set(h.callId, e);
        }
        e.status = h.isError ? 'error' : 'ok';
        e.output = h.output;
        return [e.id];
      }
      case 'summary':
        return [this.notice('info', `Earlier conversation (${h.turnsSummarized} messages), as summarised for the model:\n\n${h.text}`)];
    }
  }
}

/** What the chat offers on a turn's input: "Undo this turn" on a turn that ended and is not
 *  undone, "Redo" on an undone one the next redo re-applies; each disabled while a turn runs. */
export interface TurnActions {
  undo?: { enabled: boolean; title: string; laterTurns: number };
  redo?: { enabled: boolean; title: string };
}

export function turnActions(entries: readonly Entry[], entry: UserEntry, busy: boolean): TurnActions {
  if (entry.turnId === undefined || entry.running) return {};
  const wait = busy ? ' (wait for the running turn to end)' : '';
  const turns = entries.filter((e): e is UserEntry => e.kind === 'user' && e.turnId !== undefined);
  if (entry.undone) {
    if (!entry.redoable) return {};
    const together = turns.filter((e) => e.redoable).map((e) => e.turnId);
    const which = together.length > 1 ? `turns ${together.join(', ')} (undone together)` : `turn ${entry.turnId}`;
    return { redo: { enabled: !busy, title: `Redo: re-applies the file changes of ${which}, keeping your edits since${wait}` } };
  }
  const id = entry.turnId;
  const laterTurns = new Set(turns.filter((e) => e.turnId! > id && !e.undone).map((e) => e.turnId)).size;
  const later = laterTurns === 0 ? '' : laterTurns === 1 ? ' and those of the 1 later turn' : ` and those of the ${laterTurns} later turns`;
  return {
    undo: {
      enabled: !busy,
      title: `Undo this turn: reverts the files it changed${later}, keeping your own edits since${wait}`,
      laterTurns,
    },
  };
}

/** What a `turn_limit` event says to the user. */
export function describeLimit(d: EventDataByKind['turn_limit']): string {
  if (d.round !== undefined) return `Turn limit: stopped after ${d.round} tool rounds for this input.`;
  if (d.steps !== undefined) return `Step limit: stopped after ${d.steps} model requests for this input.`;
  if (d.time_limit_secs !== undefined) return `Time limit: stopped after ${d.time_limit_secs} s for this input.`;
  return `Turn limit: the session reached ${d.total_turns ?? 'its'} model turns.`;
}

/** What a `compaction` event says to the user. */
export function describeCompaction(d: EventDataByKind['compaction']): string {
  const why = d.trigger === 'manual' ? 'as you asked' : d.trigger === 'auto' ? 'it was filling the context window' : 'the provider found it too long';
  return `Compacted the conversation (${why}): ${d.messages_summarized} earlier messages were replaced by a summary written by ${d.model}; ${d.messages_kept} recent ones are kept as they were. Context ~${d.tokens_before} → ~${d.tokens_after} tokens.`;
}

/** Adds a response's tokens to the turn's (the server's `input_tokens` already counts cached
 *  ones). A payload without them adds nothing: the reducer never fails on what a server sends. */
function addUsage(acc: { input: number; output: number }, usage: Partial<Usage> | undefined): void {
  acc.input += usage?.input_tokens ?? 0;
  acc.output += usage?.output_tokens ?? 0;
}

function describeConfig(d: { model: string; reasoning_effort?: string | null; approval: string }): string {
  return `Session settings: model ${d.model}, reasoning effort ${d.reasoning_effort ?? 'default'}, approval ${d.approval}.`;
}
