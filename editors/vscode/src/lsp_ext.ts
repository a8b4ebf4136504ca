// The agentls extension of LSP, as docs/protocol.md defines it: every payload the extension sends
// or receives, typed once. Plain data only (no `vscode` import), so the pure modules and their
// unit tests share it.

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

/** Server commands (workspace/executeCommand). The extension's own command IDs never use these. */
export const ServerCommand = {
  newSession: 'agentls.newSession',
  prompt: 'agentls.prompt',
  steer: 'agentls.steer',
  followUp: 'agentls.followUp',
  cancel: 'agentls.cancel',
  closeSession: 'agentls.closeSession',
  listSessions: 'agentls.listSessions',
  resumeSession: 'agentls.resumeSession',
  configure: 'agentls.configure',
  resolveReview: 'agentls.resolveReview',
  resolvePermission: 'agentls.resolvePermission',
  history: 'agentls.history',
  compact: 'agentls.compact',
  trustFolder: 'agentls.trustFolder',
} as const;

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

export interface NewSessionParams { profile?: string; model?: string; rootUri?: string }
export interface NewSessionResult { sessionId: string; profile: string; model: string }

export interface PromptParams { sessionId?: string; text: string; context?: { uri: string; range?: Range } }
export interface SessionIdResult { sessionId: string }
export interface SteerParams { sessionId: string; text: string }

export type SessionState = 'idle' | 'processing' | 'awaiting_input' | 'closed';
export type ReasoningEffort = 'minimal' | 'low' | 'medium' | 'high';
export type Approval = 'review' | 'auto' | 'deny';

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
export interface ResumeSessionResult { sessionId: string; profile: string; model: string; resumed: boolean; turns?: number }

export interface ConfigureParams {
  sessionId: string;
  model?: string;
  reasoningEffort?: ReasoningEffort | 'default';
  approval?: Approval;
}

/** `agentls.history`: the conversation of an open or stored session. */
export type HistoryEntry =
  | { kind: 'user'; text: string; timestamp?: string }
  | { kind: 'steering'; text: string; timestamp?: string }
  | {
      kind: 'assistant';
      text: string;
      reasoning?: string | null;
      timestamp?: string;
      toolCalls?: { callId: string; toolName: string; summary: string; arguments?: unknown }[];
    }
  | { kind: 'tool_result'; callId: string; toolName: string; output: string; isError: boolean; timestamp?: string }
  | { kind: 'summary'; text: string; turnsSummarized: number; timestamp?: string };
export interface HistoryResult { sessionId: string; entries: HistoryEntry[] }

// ---- events (agentls/event) ----

export const EventNotification = 'agentls/event';

export interface Usage { input_tokens?: number; output_tokens?: number; [k: string]: unknown }

export interface EventDataByKind {
  session_start: { profile: string; model: string; cwd: string; resumed: boolean; tools: string[]; project_docs: string[] };
  user_input: { content: string };
  assistant_text_start: { model: string };
  assistant_text_delta: { delta: string };
  assistant_reasoning_delta: { delta: string };
  assistant_text_end: {
    text: string;
    reasoning?: string | null;
    tool_calls?: { call_id: string; tool_name: string; summary: string }[];
    usage?: Usage | null;
    totals?: Usage | null;
    response_id?: string | null;
  };
  tool_call_start: { tool_name: string; call_id: string; summary: string; arguments: string };
  tool_call_output_delta: { call_id: string; delta: string };
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
  error: { message: string; fatal?: boolean; error?: unknown };
  processing_end: { state: string; reason: string; text?: string; totals?: Usage | null };
  session_end: { state: string; totals?: Usage | null };
  config_changed: { model: string; reasoning_effort?: string | null; approval: string };
  project_docs_reloaded: { path: string; message: string };
}
export type EventKind = keyof EventDataByKind;

/** The subagent an event, review or permission comes from (absent for the session's own). */
export interface SubagentRef { agentId: string; sessionId: string; parentSessionId: string; parentCallId: string }

export type AgentEvent = {
  [K in EventKind]: { sessionId: string; kind: K; timestamp: string; data: EventDataByKind[K]; agent?: SubagentRef };
}[EventKind];

// ---- review ----

export const ReviewNotification = 'agentls/review';

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

export interface ReviewParams { reviewId: string; sessionId: string; callId: string; files: ReviewFile[]; agent?: SubagentRef }

export interface ResolveReviewFile { uri: string; acceptedHunks?: number[]; finalText?: string }
export interface ResolveReviewParams {
  reviewId: string;
  decision: 'accept' | 'reject';
  files?: ResolveReviewFile[];
  feedback?: string;
}

// ---- permission ----

export const PermissionNotification = 'agentls/permission';

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
}
export interface ResolvePermissionParams { requestId: string; decision: PermissionDecision; feedback?: string }

// ---- requests to the plugin client ----

export const SaveDocumentsRequest = 'agentls/saveDocuments';
export interface SaveDocumentsParams { uris: string[] }

export const DiagnosticsRequest = 'agentls/diagnostics';
export interface DiagnosticsParams { uri: string | null }
export interface WireDiagnostic { range: Range; severity?: number; message: string; source?: string; code?: string | number }
export interface DiagnosticsResult { files: { uri: string; diagnostics: WireDiagnostic[] }[] }

// ---- workspace trust ----

/** An untrusted root's project file sets keys that need trust; they are ignored until it is trusted. */
export const TrustRequiredNotification = 'agentls/trustRequired';
export interface IgnoredKey { key: string; reason: string }
export interface TrustRequiredParams {
  rootUri: string;
  /** The project file's absolute path (`<root>/.agentls.toml`). */
  file: string;
  ignored: IgnoredKey[];
  /** The shell command that trusts the folder (`agentls trust /abs/path`). */
  command: string;
}
export interface TrustFolderParams { rootUri: string }
export interface TrustFolderResult { rootUri: string; trusted: boolean }
