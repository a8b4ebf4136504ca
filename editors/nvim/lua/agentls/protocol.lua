-- The agentls extension of LSP as this plugin uses it: every method, command, event kind and
-- payload field name in one place, mirroring docs/protocol.md. Other modules never spell a
-- wire name themselves.
local M = {}

M.protocol_version = 1

-- Server → client notifications and requests.
M.method = {
  event = "agentls/event",
  review = "agentls/review",
  permission = "agentls/permission",
  save_documents = "agentls/saveDocuments", -- request {uris} → any result means saved
  diagnostics = "agentls/diagnostics", -- request {uri|nil} → {files = [{uri, diagnostics}]}
  trust_required = "agentls/trustRequired", -- {rootUri, file, ignored = [{key, reason}], command}
}

-- workspace/executeCommand names (one object argument, one object result).
M.command = {
  new_session = "agentls.newSession", -- {profile?, model?, rootUri?} → {sessionId, profile, model}
  prompt = "agentls.prompt", -- {sessionId?, text, context?: {uri, range?}} → {sessionId}
  steer = "agentls.steer", -- {sessionId, text}
  follow_up = "agentls.followUp", -- {sessionId, text}
  cancel = "agentls.cancel", -- {sessionId}
  close_session = "agentls.closeSession", -- {sessionId}
  list_sessions = "agentls.listSessions", -- {} → {sessions = [...]}
  resume_session = "agentls.resumeSession", -- {sessionId} → {sessionId, profile, model, resumed, turns?}
  history = "agentls.history", -- {sessionId} → {sessionId, entries = [...]}
  configure = "agentls.configure", -- {sessionId, model?, reasoningEffort?, approval?}
  compact = "agentls.compact", -- {sessionId} → {sessionId, queued}; the outcome is a `compaction` event
  resolve_review = "agentls.resolveReview", -- {reviewId, decision, files?, feedback?}
  resolve_permission = "agentls.resolvePermission", -- {requestId, decision, feedback?}
  trust_folder = "agentls.trustFolder", -- {rootUri} → {rootUri, trusted}
}

-- `agentls/event` kinds (data fields in the comments).
M.event = {
  session_start = "session_start", -- profile, model, cwd, resumed, tools, project_docs
  user_input = "user_input", -- content
  text_start = "assistant_text_start", -- model
  text_delta = "assistant_text_delta", -- delta
  reasoning_delta = "assistant_reasoning_delta", -- delta
  text_end = "assistant_text_end", -- text, reasoning, tool_calls, usage, totals
  tool_start = "tool_call_start", -- tool_name, call_id, summary, arguments
  tool_output = "tool_call_output_delta", -- call_id, delta
  tool_end = "tool_call_end", -- tool_name, call_id, summary, status, duration_ms, output|error
  steering = "steering_injected", -- content
  turn_limit = "turn_limit", -- round | total_turns | steps | time_limit_secs
  loop_detection = "loop_detection", -- message
  warning = "warning", -- message (pruning adds turns_removed, dropped)
  compaction = "compaction", -- trigger, tokens_before, tokens_after, messages_summarized, messages_kept, model
  error = "error", -- message, fatal
  processing_end = "processing_end", -- state, reason, text, totals
  session_end = "session_end", -- state, totals
  config_changed = "config_changed", -- model, reasoning_effort, approval
  project_docs_reloaded = "project_docs_reloaded", -- path, message
}

M.review_decision = { accept = "accept", reject = "reject" }
M.file_op = { create = "create", modify = "modify", delete = "delete", rename = "rename" }
M.permission_decision = { allow_once = "allow_once", allow_always = "allow_always", deny = "deny" }
M.efforts = { "minimal", "low", "medium", "high", "default" }
M.approvals = { "review", "auto", "deny" }

-- The capability that makes this client a plugin client.
-- deltaIntervalMs: at most one streamed delta per redraw at 60 Hz; the server merges the rest.
-- trust: this client resolves workspace trust itself (`agentls/trustRequired`, trust.lua).
function M.client_capability()
  return { protocolVersion = M.protocol_version, deltaIntervalMs = 16, trust = true }
end

return M
