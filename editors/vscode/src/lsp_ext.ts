// The agentls extension of LSP, as docs/protocol.md defines it: every payload the extension sends
// or receives typed once, and every method as a typed object: the notifications and requests as
// vscode-languageserver-protocol types, the server commands as `CommandType`s in one table
// (`ServerCommand`), so neither a handler nor a call site names a method or casts a payload.
// No `vscode` import, so the pure modules and their unit tests share it.
//
// Invariant: these types mirror the server's (src/lsp/protocol.rs, src/session/events.rs) and
// fit docs/protocol.md's examples; test/protocol.test.ts checks every example, and every message
// of the recorded server session, against them (test/protocol_schema.ts holds a schema per type,
// which tsc keeps equal to the type).

import { NotificationType, RequestType } from 'vscode-languageserver-protocol';

export const PROTOCOL_VERSION = 1;
/** At most one streamed delta per animation frame: the server merges the ones in between. */
export const DELTA_INTERVAL_MS = 16;

/** What the client announces as `capabilities.experimental.agentls`. */
export interface AgentlsClientCapability {
  protocolVersion: number;
  deltaIntervalMs: number;
  /** The client resolves folder trust itself: the server sends `agentls/trustRequired`, never its own question. */
  trust: boolean;
}
export const CLIENT_CAPABILITY: AgentlsClientCapability = { protocolVersion: PROTOCOL_VERSION, deltaIntervalMs: DELTA_INTERVAL_MS, trust: true };

// ---- commands (workspace/executeCommand) ----

/**
 * A server command: `workspace/executeCommand` with `command` and one argument of type `P`,
 * answered with `R`. `Ctx.exec` takes one and returns its result typed, so a call site cannot
 * pass the wrong argument or read the wrong result.
 */
export interface CommandType<P, R> {
  readonly command: string;
  /** Types only, never set (it makes `P` and `R` part of the command's type). */
  readonly types?: (params: P) => R;
}
export type CommandParams<C> = C extends CommandType<infer P, unknown> ? P : never;
export type CommandResult<C> = C extends CommandType<never, infer R> ? R : never;

function command<P, R>(name: string): CommandType<P, R> {
  return { command: name };
}

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

/** The argument of a command that takes none (`{}`). */
export type NoParams = Record<string, never>;
export interface SessionIdParams { sessionId: string }
export interface SessionIdResult { sessionId: string }

export type ProfileName = 'openai' | 'anthropic' | 'gemini' | 'code';
export interface NewSessionParams { profile?: ProfileName; model?: string; rootUri?: string }
export interface NewSessionResult { sessionId: string; profile: string; model: string }

export interface PromptParams { sessionId?: string; text: string; context?: { uri: string; range?: Range } }
export interface SteerParams { sessionId: string; text: string }
export interface CancelResult { sessionId: string; cancelled: true }
export interface CloseSessionResult { sessionId: string; closed: true }
export interface CompactResult { sessionId: string; queued: true }
export interface UndoTurnParams { sessionId: string; turnId?: number; rewind?: boolean }
export interface RevertedFile { uri: string; op: FileOp; newUri?: string }
export interface NotCoveredFile { uri: string; reason: 'too_large' | 'binary' | 'prior_unknown' | 'unreadable' }
/** What `agentls.undoTurn` / `agentls.redoTurn` did (`queued`: a plain client's answer). */
export interface TurnsReverted {
  sessionId: string;
  turnIds: number[];
  files: RevertedFile[];
  notCovered: NotCoveredFile[];
  rewound?: number;
  queued?: boolean;
}

export type SessionState = 'idle' | 'processing' | 'awaiting_input' | 'closed';
export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';
export type Approval = 'review' | 'auto' | 'deny';

/** An entry of `agentls.listSessions` (and the result of `agentls.configure`): open sessions
 *  have `reasoningEffort`, `approval`, `state` and `context`; stored ones `created` and `title`. */
export interface SessionInfo {
  sessionId: string;
  rootUri: string;
  profile: string;
  model: string;
  reasoningEffort?: ReasoningEffort | null;
  approval?: Approval;
  state?: SessionState;
  open: boolean;
  created?: string;
  title?: string;
  /** Open sessions: how full the context window is. */
  context?: ContextInfo;
}
/** The calibrated estimate of the next request, the calibration factor and the window (tokens). */
export interface ContextInfo { estimateTokens: number; calibration: number; contextWindow: number }
export interface ListSessionsResult { sessions: SessionInfo[] }
/** `resumed: false` (and no `turns`) when the session was already open. */
export interface ResumeSessionResult { sessionId: string; profile: string; model: string; resumed: boolean; turns?: number }

export interface ConfigureParams {
  sessionId: string;
  model?: string;
  reasoningEffort?: ReasoningEffort | 'default';
  approval?: Approval;
}

/** `agentls.history`: the conversation of an open or stored session. */
export type HistoryEntry =
  /** `turnId`: the checkpointed turn the input started (what `agentls.undoTurn` takes). */
  | { kind: 'user'; text: string; timestamp: string; turnId?: number }
  | { kind: 'steering'; text: string; timestamp: string }
  | { kind: 'assistant'; text: string; reasoning: string | null; timestamp: string; toolCalls: HistoryCall[] }
  | { kind: 'tool_result'; callId: string; toolName: string; output: string; isError: boolean; timestamp: string }
  | { kind: 'summary'; text: string; turnsSummarized: number; timestamp: string };
/** A tool call of an assistant entry; `arguments` is the JSON value the model sent. */
export interface HistoryCall { callId: string; toolName: string; summary: string; arguments: unknown }
/** `undone` / `redoable`: as the `undo_state` event says (absent when none). */
export interface HistoryResult { sessionId: string; entries: HistoryEntry[]; undone?: number[]; redoable?: number[] }

// ---- events (agentls/event) ----

/** Token counts of one response (`usage`) or of the session so far (`totals`). */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
}

export interface EventDataByKind {
  session_start: { profile: string; model: string; cwd: string; resumed: boolean; tools: string[]; project_docs: string[] };
  /** `turn_id`: the turn's number, what `agentls.undoTurn` takes (absent without checkpoints). */
  user_input: { content: string; turn_id?: number };
  assistant_text_start: { model: string };
  assistant_text_delta: { delta: string };
  assistant_reasoning_delta: { delta: string };
  assistant_text_end: {
    text: string;
    reasoning: string | null;
    tool_calls: { call_id: string; tool_name: string; summary: string }[];
    usage: Usage;
    totals: Usage;
    response_id: string;
    model: string;
    /** Why the model stopped: stop, length (its output limit), tool_calls, content_filter, or the provider's word. */
    finish_reason?: string;
  };
  /** `arguments`: the JSON value the model sent. */
  tool_call_start: { tool_name: string; call_id: string; summary: string; arguments: unknown };
  tool_call_output_delta: { call_id: string; delta: string };
  /** `output` and `truncated`, or `error`. */
  tool_call_end: {
    tool_name: string;
    call_id: string;
    summary: string;
    status: 'ok' | 'error' | 'cancelled';
    duration_ms: number;
    output?: string;
    truncated?: boolean;
    error?: string;
  };
  steering_injected: { content: string };
  /** One of the four. */
  turn_limit: { round?: number; total_turns?: number; steps?: number; time_limit_secs?: number };
  loop_detection: { message: string };
  warning: { message: string; approx_tokens?: number; context_window?: number; turns_removed?: number; dropped?: string };
  compaction: {
    trigger: 'manual' | 'auto' | 'overflow';
    tokens_before: number;
    tokens_after: number;
    messages_summarized: number;
    messages_kept: number;
    model: string;
  };
  /** `error`: the provider's error, when it came from the model call. */
  error: { message: string; fatal: boolean; error?: unknown };
  processing_end: { state: SessionState; reason: EndReason; text: string; totals: Usage };
  session_end: { state: SessionState; totals: Usage };
  config_changed: { model: string; reasoning_effort: ReasoningEffort | null; approval: Approval };
  project_docs_reloaded: { path: string; message: string };
  /** Which turns are undone now, and which `agentls.redoTurn` would re-apply; after an undo or a
   *  redo (from any client) also what it did. */
  undo_state: { undone: number[]; redoable: number[]; direction?: 'undo' | 'redo'; turn_ids?: number[]; rewound?: number };
}
export type EventKind = keyof EventDataByKind;
export type EndReason =
  | 'completed'
  | 'submitted'
  | 'turn_limit'
  | 'round_limit'
  | 'step_limit'
  | 'time_limit'
  | 'cancelled'
  | 'error'
  | 'fatal_error';

/** The subagent an event, review or permission comes from (absent for the session's own). */
export interface SubagentRef { agentId: string; sessionId: string; parentSessionId: string; parentCallId: string }

export type AgentEvent = {
  [K in EventKind]: { sessionId: string; kind: K; timestamp: string; data: EventDataByKind[K]; agent?: SubagentRef };
}[EventKind];

export const EventNotification = new NotificationType<AgentEvent>('agentls/event');

// ---- review ----

export type FileOp = 'create' | 'modify' | 'delete' | 'rename';

export interface ReviewHunk {
  index: number;
  /** 0-based line in the old text. */
  oldStart: number;
  oldLines: number;
  /** 0-based line in the fully changed text. */
  newStart: number;
  newLines: number;
  oldText: string;
  newText: string;
}

export interface ReviewFile {
  uri: string;
  newUri?: string;
  path: string;
  op: FileOp;
  diff: string;
  hunks: ReviewHunk[];
}

/** `callId`: the tool call that proposed the change; `null` when the server could not tell which. */
export interface ReviewParams { reviewId: string; sessionId: string; callId: string | null; files: ReviewFile[]; agent?: SubagentRef }

export const ReviewNotification = new NotificationType<ReviewParams>('agentls/review');

export interface ResolveReviewFile { uri: string; acceptedHunks?: number[]; finalText?: string }
export interface ResolveReviewParams {
  reviewId: string;
  decision: 'accept' | 'reject';
  files?: ResolveReviewFile[];
  feedback?: string;
}
export interface ResolveReviewResult { reviewId: string; decision: 'accept' | 'reject' }

// ---- permission ----

export type PermissionDecision = 'allow_once' | 'allow_always' | 'deny';
export interface PermissionParams {
  requestId: string;
  sessionId: string;
  callId: string;
  toolName: string;
  command: string;
  cwd: string;
  options: PermissionDecision[];
  agent?: SubagentRef;
  /** A call of an MCP server's tool (then `command` is its one-line form). */
  mcp?: McpCallParams;
}

/** The MCP call an `agentls/permission` asks about. */
export interface McpCallParams { server: string; tool: string; arguments: unknown; readOnlyHint: boolean }

export const PermissionNotification = new NotificationType<PermissionParams>('agentls/permission');

export interface ResolvePermissionParams { requestId: string; decision: PermissionDecision; feedback?: string }
export interface ResolvePermissionResult { requestId: string; decision: PermissionDecision }

// ---- requests to the plugin client ----

export interface SaveDocumentsParams { uris: string[] }
/** Any result means saved; the extension names the documents it saved. */
export interface SaveDocumentsResult { saved: string[] }
export const SaveDocumentsRequest = new RequestType<SaveDocumentsParams, SaveDocumentsResult, void>('agentls/saveDocuments');

export interface DiagnosticsParams { uri: string | null }
export interface WireDiagnostic { range: Range; severity?: number; message: string; source?: string; code?: string | number }
export interface DiagnosticsResult { files: { uri: string; diagnostics: WireDiagnostic[] }[] }
export const DiagnosticsRequest = new RequestType<DiagnosticsParams, DiagnosticsResult, void>('agentls/diagnostics');

// ---- notifications from the plugin client ----

/** The user started writing a prompt: the server opens the provider's connection meanwhile. */
export interface UserTypingParams { sessionId?: string }
export const UserTypingNotification = new NotificationType<UserTypingParams>('agentls/userTyping');

// ---- workspace trust ----

export interface IgnoredKey { key: string; reason: string }
/** An untrusted root's project file sets keys that need trust; they are ignored until it is trusted. */
export interface TrustRequiredParams {
  rootUri: string;
  /** The project file's absolute path (`<root>/.agentls.toml`). */
  file: string;
  ignored: IgnoredKey[];
  /** The shell command that trusts the folder (`agentls trust /abs/path`). */
  command: string;
}
export const TrustRequiredNotification = new NotificationType<TrustRequiredParams>('agentls/trustRequired');

export interface TrustFolderParams { rootUri: string }
export interface TrustFolderResult { rootUri: string; trusted: boolean }

// ---- MCP servers ----

export type McpServerState = 'starting' | 'running' | 'failed' | 'stopped' | 'disabled' | 'needs_trust' | 'invalid';
/** A tool a session offers: the server's own name, and the `toolName` of its calls' events. */
export interface McpToolInfo { name: string; toolName: string; description: string | null; readOnlyHint: boolean }
export interface McpServerInfo {
  name: string;
  state: McpServerState;
  /** The command line or URL. */
  target: string;
  /** The file that configures it (null when none does). */
  origin: string | null;
  tools: McpToolInfo[];
  lastError: string | null;
}
export interface McpServersParams { rootUri?: string }
export interface McpServersResult { rootUri: string; servers: McpServerInfo[] }
export interface McpRestartParams { name: string; rootUri?: string }
export interface McpRestartResult { name: string; state: McpServerState }

// ---- the commands, each name written once ----

/** Every server command. The extension's own command IDs (`agentls.vscode.*`) never use these. */
export const ServerCommand = {
  newSession: command<NewSessionParams, NewSessionResult>('agentls.newSession'),
  prompt: command<PromptParams, SessionIdResult>('agentls.prompt'),
  steer: command<SteerParams, SessionIdResult>('agentls.steer'),
  followUp: command<SteerParams, SessionIdResult>('agentls.followUp'),
  cancel: command<SessionIdParams, CancelResult>('agentls.cancel'),
  closeSession: command<SessionIdParams, CloseSessionResult>('agentls.closeSession'),
  listSessions: command<NoParams, ListSessionsResult>('agentls.listSessions'),
  resumeSession: command<SessionIdParams, ResumeSessionResult>('agentls.resumeSession'),
  history: command<SessionIdParams, HistoryResult>('agentls.history'),
  configure: command<ConfigureParams, SessionInfo>('agentls.configure'),
  compact: command<SessionIdParams, CompactResult>('agentls.compact'),
  undoTurn: command<UndoTurnParams, TurnsReverted>('agentls.undoTurn'),
  redoTurn: command<SessionIdParams, TurnsReverted>('agentls.redoTurn'),
  resolveReview: command<ResolveReviewParams, ResolveReviewResult>('agentls.resolveReview'),
  resolvePermission: command<ResolvePermissionParams, ResolvePermissionResult>('agentls.resolvePermission'),
  trustFolder: command<TrustFolderParams, TrustFolderResult>('agentls.trustFolder'),
  mcpServers: command<McpServersParams, McpServersResult>('agentls.mcpServers'),
  mcpRestart: command<McpRestartParams, McpRestartResult>('agentls.mcpRestart'),
} as const;
