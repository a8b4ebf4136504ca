// Runtime schemas of the protocol types of src/lsp_ext.ts (and of the configuration layer of
// src/config.ts), to check JSON against them: docs/protocol.md's examples and the messages the
// real server sent (test/protocol.test.ts).
//
// Invariant: each schema is its type, checked by `tsc`. `Schema<T>` is invariant in `T`, and an
// object's schema names every field of its type and no other (`object<T>()`), so a field added,
// renamed, retyped or made optional in lsp_ext.ts does not compile here until its schema follows;
// a documented or recorded payload that no longer fits fails the test.

import type {
  AgentEvent,
  CancelResult,
  CloseSessionResult,
  CommandParams,
  CommandResult,
  CompactResult,
  ContextInfo,
  NotCoveredFile,
  RevertedFile,
  TurnsReverted,
  UndoTurnParams,
  DiagnosticsParams,
  DiagnosticsResult,
  EventDataByKind,
  EventKind,
  HistoryCall,
  HistoryEntry,
  HistoryResult,
  ListSessionsResult,
  NewSessionParams,
  NewSessionResult,
  NoParams,
  PermissionParams,
  PromptParams,
  Range,
  ResolvePermissionParams,
  ResolvePermissionResult,
  ResolveReviewParams,
  ResolveReviewResult,
  ResumeSessionResult,
  ReviewFile,
  ReviewHunk,
  ReviewParams,
  SaveDocumentsParams,
  ServerCommand,
  SessionIdParams,
  SessionIdResult,
  SessionInfo,
  SteerParams,
  SubagentRef,
  McpCallParams,
  TrustFolderParams,
  TrustFolderResult,
  TrustRequiredParams,
  UserTypingParams,
  Usage,
  WireDiagnostic,
  ConfigureParams,
  McpRestartParams,
  McpRestartResult,
  McpServerInfo,
  McpServersParams,
  McpServersResult,
  McpToolInfo,
} from '../src/lsp_ext';
import type { ServerLayer } from '../src/config';

export interface Schema<T> {
  /** Where `value` does not fit, each problem starting with its path; `[]` when it fits. */
  readonly check: (value: unknown, path: string) => string[];
  /** The field may be absent. */
  readonly optional?: boolean;
  /** Types only, never set: it makes `Schema` invariant in `T`. */
  readonly type?: (t: T) => T;
}

/** What any schema does, whatever its type (for tables of schemas of different types). */
export type Checker = Pick<Schema<unknown>, 'check'>;

function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function primitive<T>(name: 'string' | 'number' | 'boolean'): Schema<T> {
  return { check: (v, path) => (jsonType(v) === name ? [] : [`${path}: expected a ${name}, found ${show(v)}`]) };
}

export const string: Schema<string> = primitive('string');
export const number: Schema<number> = primitive('number');
export const boolean: Schema<boolean> = primitive('boolean');
/** Any JSON value (a tool call's arguments, a provider's error). */
export const json: Schema<unknown> = { check: () => [] };

export function literal<const L extends readonly (string | number | boolean)[]>(...values: L): Schema<L[number]> {
  return { check: (v, path) => (values.includes(v as L[number]) ? [] : [`${path}: expected one of ${values.map(show).join(', ')}, found ${show(v)}`]) };
}

export function nullable<T>(s: Schema<T>): Schema<T | null> {
  return { check: (v, path) => (v === null ? [] : s.check(v, path)) };
}

/** An optional field (absent; `null` is a value of its own, see `nullable`). */
export function optional<T>(s: Schema<T>): Schema<T | undefined> {
  return { check: (v, path) => (v === undefined ? [] : s.check(v, path)), optional: true };
}

export function array<T>(s: Schema<T>): Schema<T[]> {
  return {
    check: (v, path) => (Array.isArray(v) ? v.flatMap((item, i) => s.check(item, `${path}[${i}]`)) : [`${path}: expected an array, found ${show(v)}`]),
  };
}

/** A schema for each field of `T`, optional ones included. */
export type Shape<T> = { [K in keyof Required<T>]: Schema<T[K]> };

/** An object of exactly these fields: a required one must be there, an unknown one is an error. */
export function object<T>(): (shape: Shape<T>) => Schema<T> {
  return (shape) => ({
    check: (v, path) => {
      if (jsonType(v) !== 'object') return [`${path}: expected an object, found ${show(v)}`];
      const o = v as Record<string, unknown>;
      const fields = shape as Record<string, Schema<unknown>>;
      const problems: string[] = [];
      for (const [key, s] of Object.entries(fields)) {
        if (!(key in o)) {
          if (!s.optional) problems.push(`${path}.${key}: missing`);
        } else problems.push(...s.check(o[key], `${path}.${key}`));
      }
      for (const key of Object.keys(o)) if (!(key in fields)) problems.push(`${path}.${key}: not a field of the type`);
      return problems;
    },
  });
}

/** A union told apart by its `tag` field: one schema per tag value, each for its member. */
export function tagged<T extends object>() {
  return <Tag extends keyof T & string>(tag: Tag, variants: { [K in T[Tag] & string]: Schema<Extract<T, Record<Tag, K>>> }): Schema<T> => ({
    check: (v, path) => {
      const value = jsonType(v) === 'object' ? (v as Record<string, unknown>)[tag] : undefined;
      const s = typeof value === 'string' ? (variants as Record<string, Schema<unknown>>)[value] : undefined;
      if (!s) return [`${path}.${tag}: expected one of ${Object.keys(variants).map(show).join(', ')}, found ${show(value)}`];
      return s.check(v, path);
    },
  });
}

// ---- the protocol's types ----

const position = object<Range['start']>()({ line: number, character: number });
const range = object<Range>()({ start: position, end: position });
const sessionState = literal('idle', 'processing', 'awaiting_input', 'closed');
const reasoningEffort = literal('minimal', 'low', 'medium', 'high');
const approval = literal('review', 'auto', 'deny');
const permissionDecision = literal('allow_once', 'allow_always', 'deny');
const reviewDecision = literal('accept', 'reject');
const mcpServerState = literal('starting', 'running', 'failed', 'stopped', 'disabled', 'needs_trust', 'invalid');

export const subagentRef = object<SubagentRef>()({ agentId: string, sessionId: string, parentSessionId: string, parentCallId: string });

const usage = object<Usage>()({
  input_tokens: number,
  output_tokens: number,
  reasoning_tokens: number,
  cache_read_tokens: number,
  cache_write_tokens: number,
});

/** The data of each kind of event. */
export const eventData: { [K in EventKind]: Schema<EventDataByKind[K]> } = {
  session_start: object<EventDataByKind['session_start']>()({
    profile: string,
    model: string,
    cwd: string,
    resumed: boolean,
    tools: array(string),
    project_docs: array(string),
  }),
  user_input: object<EventDataByKind['user_input']>()({ content: string, turn_id: optional(number) }),
  assistant_text_start: object<EventDataByKind['assistant_text_start']>()({ model: string }),
  assistant_text_delta: object<EventDataByKind['assistant_text_delta']>()({ delta: string }),
  assistant_reasoning_delta: object<EventDataByKind['assistant_reasoning_delta']>()({ delta: string }),
  assistant_text_end: object<EventDataByKind['assistant_text_end']>()({
    text: string,
    reasoning: nullable(string),
    tool_calls: array(object<EventDataByKind['assistant_text_end']['tool_calls'][number]>()({ call_id: string, tool_name: string, summary: string })),
    usage,
    totals: usage,
    response_id: string,
    model: string,
    finish_reason: optional(string),
  }),
  tool_call_start: object<EventDataByKind['tool_call_start']>()({ tool_name: string, call_id: string, summary: string, arguments: json }),
  tool_call_output_delta: object<EventDataByKind['tool_call_output_delta']>()({ call_id: string, delta: string }),
  tool_call_end: object<EventDataByKind['tool_call_end']>()({
    tool_name: string,
    call_id: string,
    summary: string,
    status: literal('ok', 'error', 'cancelled'),
    duration_ms: number,
    output: optional(string),
    truncated: optional(boolean),
    error: optional(string),
  }),
  steering_injected: object<EventDataByKind['steering_injected']>()({ content: string }),
  turn_limit: object<EventDataByKind['turn_limit']>()({
    round: optional(number),
    total_turns: optional(number),
    steps: optional(number),
    time_limit_secs: optional(number),
  }),
  loop_detection: object<EventDataByKind['loop_detection']>()({ message: string }),
  warning: object<EventDataByKind['warning']>()({
    message: string,
    approx_tokens: optional(number),
    context_window: optional(number),
    turns_removed: optional(number),
    dropped: optional(string),
  }),
  compaction: object<EventDataByKind['compaction']>()({
    trigger: literal('manual', 'auto', 'overflow'),
    tokens_before: number,
    tokens_after: number,
    messages_summarized: number,
    messages_kept: number,
    model: string,
  }),
  error: object<EventDataByKind['error']>()({ message: string, fatal: boolean, error: optional(json) }),
  processing_end: object<EventDataByKind['processing_end']>()({
    state: sessionState,
    reason: literal('completed', 'submitted', 'turn_limit', 'round_limit', 'step_limit', 'time_limit', 'cancelled', 'error', 'fatal_error'),
    text: string,
    totals: usage,
  }),
  session_end: object<EventDataByKind['session_end']>()({ state: sessionState, totals: usage }),
  config_changed: object<EventDataByKind['config_changed']>()({ model: string, reasoning_effort: nullable(reasoningEffort), approval }),
  project_docs_reloaded: object<EventDataByKind['project_docs_reloaded']>()({ path: string, message: string }),
  undo_state: object<EventDataByKind['undo_state']>()({
    undone: array(number),
    redoable: array(number),
    direction: optional(literal('undo', 'redo')),
    turn_ids: optional(array(number)),
    rewound: optional(number),
  }),
};

/** What every event carries besides its `kind` and `data`. */
const eventEnvelope = object<Omit<AgentEvent, 'kind' | 'data'>>()({ sessionId: string, timestamp: string, agent: optional(subagentRef) });

/** `agentls/event`: the envelope, and the data its `kind` has. */
export const agentEvent: Schema<AgentEvent> = {
  check: (v, path) => {
    if (jsonType(v) !== 'object') return [`${path}: expected an object, found ${show(v)}`];
    const { kind, data, ...envelope } = v as Record<string, unknown>;
    if (typeof kind !== 'string' || !(kind in eventData)) return [`${path}.kind: expected an event kind, found ${show(kind)}`];
    return [...eventEnvelope.check(envelope, path), ...eventData[kind as EventKind].check(data, `${path}.data`)];
  },
};

const reviewHunk = object<ReviewHunk>()({
  index: number,
  oldStart: number,
  oldLines: number,
  newStart: number,
  newLines: number,
  oldText: string,
  newText: string,
});
const reviewFile = object<ReviewFile>()({
  uri: string,
  newUri: optional(string),
  path: string,
  op: literal('create', 'modify', 'delete', 'rename'),
  diff: string,
  hunks: array(reviewHunk),
});
export const reviewParams = object<ReviewParams>()({
  reviewId: string,
  sessionId: string,
  callId: nullable(string),
  files: array(reviewFile),
  agent: optional(subagentRef),
});

export const permissionParams = object<PermissionParams>()({
  requestId: string,
  sessionId: string,
  callId: string,
  toolName: string,
  command: string,
  cwd: string,
  options: array(permissionDecision),
  agent: optional(subagentRef),
  mcp: optional(object<McpCallParams>()({ server: string, tool: string, arguments: json, readOnlyHint: boolean })),
});

export const saveDocumentsParams = object<SaveDocumentsParams>()({ uris: array(string) });
export const diagnosticsParams = object<DiagnosticsParams>()({ uri: nullable(string) });
const wireDiagnostic = object<WireDiagnostic>()({
  range,
  severity: optional(number),
  message: string,
  source: optional(string),
  code: optional<string | number>({ check: (v, path) => (typeof v === 'string' || typeof v === 'number' ? [] : [`${path}: expected a string or a number, found ${show(v)}`]) }),
});
export const diagnosticsResult = object<DiagnosticsResult>()({
  files: array(object<DiagnosticsResult['files'][number]>()({ uri: string, diagnostics: array(wireDiagnostic) })),
});

export const userTypingParams = object<UserTypingParams>()({ sessionId: optional(string) });
export const trustRequiredParams = object<TrustRequiredParams>()({
  rootUri: string,
  file: string,
  ignored: array(object<TrustRequiredParams['ignored'][number]>()({ key: string, reason: string })),
  command: string,
});

// ---- commands ----

const sessionIdParams = object<SessionIdParams>()({ sessionId: string });
const sessionIdResult = object<SessionIdResult>()({ sessionId: string });
const steerParams = object<SteerParams>()({ sessionId: string, text: string });
const contextInfo = object<ContextInfo>()({ estimateTokens: number, calibration: number, contextWindow: number });
export const sessionInfo = object<SessionInfo>()({
  sessionId: string,
  rootUri: string,
  profile: string,
  model: string,
  reasoningEffort: optional(nullable(reasoningEffort)),
  approval: optional(approval),
  state: optional(sessionState),
  open: boolean,
  created: optional(string),
  title: optional(string),
  context: optional(contextInfo),
});
const historyCall = object<HistoryCall>()({ callId: string, toolName: string, summary: string, arguments: json });
type Entry<K extends HistoryEntry['kind']> = Extract<HistoryEntry, { kind: K }>;
const historyEntry = tagged<HistoryEntry>()('kind', {
  user: object<Entry<'user'>>()({ kind: literal('user'), text: string, timestamp: string, turnId: optional(number) }),
  steering: object<Entry<'steering'>>()({ kind: literal('steering'), text: string, timestamp: string }),
  assistant: object<Entry<'assistant'>>()({ kind: literal('assistant'), text: string, reasoning: nullable(string), timestamp: string, toolCalls: array(historyCall) }),
  tool_result: object<Entry<'tool_result'>>()({
    kind: literal('tool_result'),
    callId: string,
    toolName: string,
    output: string,
    isError: boolean,
    timestamp: string,
  }),
  summary: object<Entry<'summary'>>()({ kind: literal('summary'), text: string, turnsSummarized: number, timestamp: string }),
});

const turnsReverted = object<TurnsReverted>()({
  sessionId: string,
  turnIds: array(number),
  files: array(object<RevertedFile>()({ uri: string, op: literal('create', 'modify', 'delete', 'rename'), newUri: optional(string) })),
  notCovered: array(object<NotCoveredFile>()({ uri: string, reason: literal('too_large', 'binary', 'prior_unknown', 'unreadable') })),
  rewound: optional(number),
  queued: optional(boolean),
});

type Commands = typeof ServerCommand;
/** Each command's argument and result (one entry per command of `ServerCommand`). */
export const commandSchemas: { [K in keyof Commands]: { params: Schema<CommandParams<Commands[K]>>; result: Schema<CommandResult<Commands[K]>> } } = {
  newSession: {
    params: object<NewSessionParams>()({ profile: optional(literal('openai', 'anthropic', 'gemini', 'code')), model: optional(string), rootUri: optional(string) }),
    result: object<NewSessionResult>()({ sessionId: string, profile: string, model: string }),
  },
  prompt: {
    params: object<PromptParams>()({
      sessionId: optional(string),
      text: string,
      context: optional(object<NonNullable<PromptParams['context']>>()({ uri: string, range: optional(range) })),
    }),
    result: sessionIdResult,
  },
  steer: { params: steerParams, result: sessionIdResult },
  followUp: { params: steerParams, result: sessionIdResult },
  cancel: { params: sessionIdParams, result: object<CancelResult>()({ sessionId: string, cancelled: literal(true) }) },
  closeSession: { params: sessionIdParams, result: object<CloseSessionResult>()({ sessionId: string, closed: literal(true) }) },
  listSessions: { params: object<NoParams>()({}), result: object<ListSessionsResult>()({ sessions: array(sessionInfo) }) },
  resumeSession: {
    params: sessionIdParams,
    result: object<ResumeSessionResult>()({ sessionId: string, profile: string, model: string, resumed: boolean, turns: optional(number) }),
  },
  history: { params: sessionIdParams, result: object<HistoryResult>()({ sessionId: string, entries: array(historyEntry), undone: optional(array(number)), redoable: optional(array(number)) }) },
  configure: {
    params: object<ConfigureParams>()({
      sessionId: string,
      model: optional(string),
      reasoningEffort: optional(literal('minimal', 'low', 'medium', 'high', 'default')),
      approval: optional(approval),
    }),
    result: sessionInfo,
  },
  compact: { params: sessionIdParams, result: object<CompactResult>()({ sessionId: string, queued: literal(true) }) },
  undoTurn: {
    params: object<UndoTurnParams>()({ sessionId: string, turnId: optional(number), rewind: optional(boolean) }),
    result: turnsReverted,
  },
  redoTurn: { params: sessionIdParams, result: turnsReverted },
  resolveReview: {
    params: object<ResolveReviewParams>()({
      reviewId: string,
      decision: reviewDecision,
      files: optional(array(object<NonNullable<ResolveReviewParams['files']>[number]>()({ uri: string, acceptedHunks: optional(array(number)), finalText: optional(string) }))),
      feedback: optional(string),
    }),
    result: object<ResolveReviewResult>()({ reviewId: string, decision: reviewDecision }),
  },
  resolvePermission: {
    params: object<ResolvePermissionParams>()({ requestId: string, decision: permissionDecision, feedback: optional(string) }),
    result: object<ResolvePermissionResult>()({ requestId: string, decision: permissionDecision }),
  },
  trustFolder: {
    params: object<TrustFolderParams>()({ rootUri: string }),
    result: object<TrustFolderResult>()({ rootUri: string, trusted: boolean }),
  },
  mcpServers: {
    params: object<McpServersParams>()({ rootUri: optional(string) }),
    result: object<McpServersResult>()({
      rootUri: string,
      servers: array(
        object<McpServerInfo>()({
          name: string,
          state: mcpServerState,
          target: string,
          origin: nullable(string),
          tools: array(object<McpToolInfo>()({ name: string, toolName: string, description: nullable(string), readOnlyHint: boolean })),
          lastError: nullable(string),
        }),
      ),
    }),
  },
  mcpRestart: {
    params: object<McpRestartParams>()({ name: string, rootUri: optional(string) }),
    result: object<McpRestartResult>()({ name: string, state: mcpServerState }),
  },
};

// ---- the editor's configuration layer (initializationOptions, the `agentls` section) ----

const limits: Schema<Record<string, number>> = {
  check: (v, path) =>
    jsonType(v) === 'object' ? Object.entries(v as Record<string, unknown>).flatMap(([k, n]) => number.check(n, `${path}.${k}`)) : [`${path}: expected an object, found ${show(v)}`],
};
const layerShape: Shape<ServerLayer> = {
  provider: optional(string),
  profile: optional(string),
  model: optional(string),
  approval: optional(string),
  reasoning_effort: optional(string),
  max_turns: optional(number),
  max_tool_rounds_per_input: optional(number),
  enable_loop_detection: optional(boolean),
  loop_detection_window: optional(number),
  one_call_per_step: optional(boolean),
  context_window_tokens: optional(number),
  tool_line_limits: optional(limits),
  tool_output_limits: optional(limits),
  submit_mode: optional(boolean),
  max_steps: optional(number),
  time_limit_secs: optional(number),
  context: optional(
    object<NonNullable<ServerLayer['context']>>()({
      auto_compact: optional(boolean),
      auto_compact_percent: optional(number),
      keep_exchanges: optional(number),
      chars_per_token: optional(number),
      compaction_model: optional(string),
    }),
  ),
  shell: optional(object<NonNullable<ServerLayer['shell']>>()({ permission: optional(string), allow: optional(array(string)) })),
};
export const serverLayer = object<ServerLayer>()(layerShape);
/** The top-level keys of the layer. */
export const serverLayerKeys: readonly string[] = Object.keys(layerShape);
