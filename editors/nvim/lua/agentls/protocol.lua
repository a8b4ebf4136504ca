-- The agentls extension of LSP as this plugin uses it: every method, command and event kind,
-- and every field the plugin reads of a payload or sends in a command's argument, in one place,
-- mirroring docs/protocol.md (tests/protocol.lua finds each of them in its examples). Other
-- modules never spell a method, command or event name themselves, and read payloads only
-- through decode(), which keeps exactly the fields declared here.
local M = {}

M.protocol_version = 1

-- Server → client notifications and requests (their params: M.params).
M.method = {
  event = "agentls/event",
  review = "agentls/review",
  permission = "agentls/permission",
  save_documents = "agentls/saveDocuments", -- request; any result means saved
  diagnostics = "agentls/diagnostics", -- request → {files = [{uri, diagnostics}]}
  trust_required = "agentls/trustRequired",
}

-- workspace/executeCommand names: one object argument, one object result (M.command_args,
-- M.command_result).
M.command = {
  new_session = "agentls.newSession",
  prompt = "agentls.prompt",
  steer = "agentls.steer",
  cancel = "agentls.cancel",
  list_sessions = "agentls.listSessions",
  resume_session = "agentls.resumeSession",
  history = "agentls.history",
  configure = "agentls.configure",
  compact = "agentls.compact", -- the outcome is a `compaction` event
  undo_turn = "agentls.undoTurn",
  redo_turn = "agentls.redoTurn",
  resolve_review = "agentls.resolveReview",
  resolve_permission = "agentls.resolvePermission",
  trust_folder = "agentls.trustFolder",
  mcp_servers = "agentls.mcpServers",
  mcp_restart = "agentls.mcpRestart",
}

-- `agentls/event` kinds.
M.event = {
  session_start = "session_start",
  user_input = "user_input",
  text_start = "assistant_text_start",
  text_delta = "assistant_text_delta",
  reasoning_delta = "assistant_reasoning_delta",
  text_end = "assistant_text_end",
  tool_start = "tool_call_start",
  tool_output = "tool_call_output_delta",
  tool_end = "tool_call_end",
  steering = "steering_injected",
  turn_limit = "turn_limit",
  loop_detection = "loop_detection",
  warning = "warning",
  compaction = "compaction",
  error = "error",
  processing_end = "processing_end",
  session_end = "session_end",
  config_changed = "config_changed",
  project_docs_reloaded = "project_docs_reloaded",
  undo_state = "undo_state", -- which turns are undone, after an undo or a redo from any client
}

-- Shapes: what the plugin reads of a payload (or sends in an argument). A field is `true` (a
-- value, kept as it is), a shape (an object) or `{ shape }` (a list of such objects).

local function fields(...)
  local shape = {}
  for _, name in ipairs({ ... }) do
    shape[name] = true
  end
  return shape
end

local function with(shape, more)
  return vim.tbl_extend("error", shape, more)
end

-- The subagent an event, review or permission question comes from.
local agent = fields("agentId", "sessionId", "parentSessionId")

-- Client → server notifications (their params: M.notification_params).
M.notification = {
  user_typing = "agentls/userTyping", -- the user started writing a prompt
}

--- The params of each client → server notification (every field the plugin may send).
M.notification_params = {
  [M.notification.user_typing] = fields("sessionId"),
}

--- The params of each server → client method.
M.params = {
  [M.method.event] = with(fields("sessionId", "kind"), { agent = agent }), -- `data`: M.event_data[kind]
  [M.method.review] = with(fields("reviewId", "sessionId", "callId"), {
    agent = fields("sessionId"),
    files = {
      with(fields("uri", "path", "op", "newUri"), {
        hunks = { fields("index", "oldStart", "oldLines", "newStart", "newLines", "oldText", "newText") },
      }),
    },
  }),
  [M.method.permission] = with(fields("requestId", "sessionId", "callId", "toolName", "command", "cwd"), {
    agent = fields("sessionId"),
    mcp = fields("server", "tool", "arguments", "readOnlyHint"),
  }),
  [M.method.trust_required] = with(fields("rootUri", "file"), { ignored = { fields("key", "reason") } }),
  [M.method.save_documents] = fields("uris"),
  [M.method.diagnostics] = fields("uri"),
}

--- The `data` of each `agentls/event` kind.
M.event_data = {
  [M.event.session_start] = fields("model"),
  [M.event.user_input] = fields("content", "turn_id"),
  [M.event.text_start] = fields("model"),
  [M.event.text_delta] = fields("delta"),
  [M.event.reasoning_delta] = fields("delta"),
  [M.event.text_end] = fields("text"),
  [M.event.tool_start] = fields("tool_name", "call_id", "summary"),
  [M.event.tool_output] = fields("call_id", "delta"),
  [M.event.tool_end] = fields("tool_name", "call_id", "summary", "status", "duration_ms", "error"),
  [M.event.steering] = fields("content"),
  [M.event.turn_limit] = fields("round", "total_turns", "steps", "time_limit_secs"),
  [M.event.loop_detection] = fields("message"),
  [M.event.warning] = fields("message"),
  [M.event.compaction] = fields("trigger", "tokens_before", "tokens_after", "messages_summarized", "messages_kept", "model"),
  [M.event.error] = fields("message"),
  [M.event.processing_end] = fields("state", "reason"),
  [M.event.session_end] = fields("state"),
  [M.event.config_changed] = fields("model", "reasoning_effort", "approval"),
  [M.event.project_docs_reloaded] = fields("message"),
  [M.event.undo_state] = fields("undone"),
}

local session_entry = with(fields("sessionId", "model", "state", "open", "created", "title"), {
  context = fields("estimateTokens", "calibration", "contextWindow"),
})

local C = M.command

--- Each command's argument (what the plugin sends) and result (what it reads of the answer).
M.command_args = {
  [C.new_session] = fields("profile", "rootUri"),
  [C.prompt] = with(fields("sessionId", "text"), { context = fields("uri", "range") }),
  [C.steer] = fields("sessionId", "text"),
  [C.cancel] = fields("sessionId"),
  [C.list_sessions] = {},
  [C.resume_session] = fields("sessionId"),
  [C.history] = fields("sessionId"),
  [C.configure] = fields("sessionId", "model", "reasoningEffort", "approval"),
  [C.compact] = fields("sessionId"),
  [C.undo_turn] = fields("sessionId", "turnId", "rewind"),
  [C.redo_turn] = fields("sessionId"),
  [C.resolve_review] = with(fields("reviewId", "decision", "feedback"), {
    files = { fields("uri", "acceptedHunks", "finalText") },
  }),
  [C.resolve_permission] = fields("requestId", "decision", "feedback"),
  [C.trust_folder] = fields("rootUri"),
  [C.mcp_servers] = fields("rootUri"),
  [C.mcp_restart] = fields("name", "rootUri"),
}
local reverted = with(fields("turnIds", "rewound"), {
  files = { fields("uri", "op", "newUri") },
  notCovered = { fields("uri", "reason") },
})
M.command_result = {
  [C.new_session] = fields("sessionId", "profile", "model"),
  [C.undo_turn] = reverted,
  [C.redo_turn] = reverted,
  [C.list_sessions] = { sessions = { session_entry } },
  [C.resume_session] = fields("sessionId", "profile", "model", "resumed"),
  [C.history] = {
    undone = true,
    entries = {
      with(fields("kind", "text", "toolName", "isError", "output", "turnsSummarized", "turnId"), {
        toolCalls = { fields("summary", "toolName") },
      }),
    },
  },
  [C.configure] = fields("model"), -- the session's listSessions entry
  [C.trust_folder] = fields("trusted"),
  [C.mcp_servers] = {
    servers = { with(fields("name", "state", "target", "origin", "lastError"), { tools = { fields("name", "toolName", "readOnlyHint") } }) },
  },
  [C.mcp_restart] = fields("name", "state"),
}

-- An MCP server's `state` as a person reads it.
function M.mcp_state_text(state)
  return state == "needs_trust" and "needs trust" or state
end

-- A shape's fields as lists (walked with a numeric loop: decode runs for every streamed delta).
local compiled = setmetatable({}, { __mode = "k" })

local function compile(shape)
  local c = compiled[shape]
  if not c then
    c = { values = {}, objects = {}, lists = {} }
    for name, field in pairs(shape) do
      if field == true then
        table.insert(c.values, name)
      elseif field[1] then
        table.insert(c.lists, { name, field[1] })
      else
        table.insert(c.objects, { name, field })
      end
    end
    compiled[shape] = c
  end
  return c
end

--- `value` as `shape` sees it: the declared fields only (a list shape maps its items); a value
--- that is not an object where one is declared is nil.
function M.decode(shape, value)
  if type(value) ~= "table" then
    return nil
  end
  local c, out = compile(shape), {}
  local values, objects, lists = c.values, c.objects, c.lists
  for i = 1, #values do
    local name = values[i]
    out[name] = value[name]
  end
  for i = 1, #objects do
    local name, field = objects[i][1], objects[i][2]
    out[name] = M.decode(field, value[name])
  end
  for i = 1, #lists do
    local name, field = lists[i][1], lists[i][2]
    local v = value[name]
    if type(v) == "table" then
      local items = {}
      for k, item in ipairs(v) do
        items[k] = M.decode(field, item)
      end
      out[name] = items
    end
  end
  return out
end

--- An `agentls/event` as the plugin reads it (`data` by its kind).
function M.decode_event(params)
  local event = M.decode(M.params[M.method.event], params) or {}
  event.data = M.decode(M.event_data[event.kind] or {}, params.data) or {}
  return event
end

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
