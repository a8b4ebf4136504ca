-- The plugin's state and its only owner: per client (one per project root) the current session
-- and what the session is doing, the pending reviews and permissions, and per root what became
-- of its workspace trust in this Neovim session. Other modules read and change it through these
-- functions, never by reaching into the tables.
local M = {}

---@class agentls.Session
---@field id string
---@field model string?
---@field profile string?
---@field state string "idle" | "processing" | "awaiting_input" | "closed"
---@field context {estimateTokens: integer, calibration: number, contextWindow: integer}? from agentls.listSessions

local clients = {} ---@type table<integer, {root: string, session: agentls.Session?}>
local active_client ---@type integer?
local reviews = {} ---@type table<string, table>
local review_order = {} ---@type string[]
local permissions = {} ---@type table<string, {request: table, client_id: integer}>

---@class agentls.Trust
---@field file string? the project file whose keys need trust
---@field ignored {key: string, reason: string}[] what the server ignores until the folder is trusted
---@field state string "asking" | "declined" | "denied" (by vim.secure) | "granting" | "trusted"
local trust = {} ---@type table<string, agentls.Trust>

local status_pending = false

--- Tells statuslines that status() changed: `User AgentlsStatus`, then a status line redraw
--- (at most once per main-loop turn).
local function status_changed()
  if status_pending then
    return
  end
  status_pending = true
  vim.schedule(function()
    status_pending = false
    vim.api.nvim_exec_autocmds("User", { pattern = "AgentlsStatus", modeline = false })
    vim.cmd("redrawstatus!")
  end)
end

function M.client_started(client_id, root)
  clients[client_id] = clients[client_id] or { root = root }
  active_client = active_client or client_id
end

--- Forgets a client that stopped; returns the session it had open and whether it was the
--- active client.
---@return agentls.Session?, boolean
function M.client_stopped(client_id)
  local c = clients[client_id]
  clients[client_id] = nil
  local was_active = active_client == client_id
  if was_active then
    active_client = next(clients)
  end
  if c and c.session then
    status_changed()
  end
  return c and c.session, was_active
end

function M.set_active(client_id)
  if clients[client_id] then
    active_client = client_id
  end
end

function M.active_client_id()
  return active_client
end

function M.root(client_id)
  return clients[client_id] and clients[client_id].root
end

---@return agentls.Session?
function M.session(client_id)
  return clients[client_id] and clients[client_id].session
end

function M.set_session(client_id, session)
  if clients[client_id] then
    clients[client_id].session = session
    status_changed()
  end
end

--- Changes fields of the client's current session (e.g. its model after agentls.configure).
function M.update_session(client_id, fields)
  local c = clients[client_id]
  if c and c.session then
    for k, v in pairs(fields) do
      c.session[k] = v
    end
    status_changed()
  end
end

--- The client whose session is `session_id`.
function M.client_of_session(session_id)
  for id, c in pairs(clients) do
    if c.session and c.session.id == session_id then
      return id
    end
  end
end

-- Streamed pieces change nothing here (and come 10,000 a second).
local STREAMED = { assistant_text_delta = true, assistant_reasoning_delta = true, tool_call_output_delta = true }

--- Follows a session's events: what it is doing, and its model after `agentls.configure`.
function M.note_event(client_id, event)
  -- A subagent's events (marked `agent`) never change what the session itself is doing.
  if STREAMED[event.kind] or event.agent then
    return
  end
  local c = clients[client_id]
  if not (c and c.session and c.session.id == event.sessionId) then
    return
  end
  local state_before, model_before = c.session.state, c.session.model
  local kind, data = event.kind, event.data or {}
  if kind == "user_input" or kind == "assistant_text_start" or kind == "tool_call_start" then
    c.session.state = "processing"
  elseif kind == "processing_end" or kind == "session_end" then
    c.session.state = data.state or "idle"
  elseif kind == "config_changed" then
    c.session.model = data.model or c.session.model
  elseif kind == "session_start" then
    c.session.model = data.model or c.session.model
  end
  if c.session.state ~= state_before or c.session.model ~= model_before then
    status_changed()
  end
end

function M.add_review(review)
  reviews[review.id] = review
  table.insert(review_order, review.id)
  status_changed()
end

function M.review(id)
  return reviews[id]
end

function M.remove_review(id)
  reviews[id] = nil
  review_order = vim.tbl_filter(function(r)
    return r ~= id
  end, review_order)
  status_changed()
end

--- Pending reviews, oldest first.
function M.reviews()
  return vim.tbl_map(function(id)
    return reviews[id]
  end, review_order)
end

--- The pending review a tool call proposed (`agent_session`: a subagent's session id, for its calls).
function M.review_of_call(session_id, call_id, agent_session)
  for _, id in ipairs(review_order) do
    local r = reviews[id]
    if r.session_id == session_id and r.call_id == call_id and r.agent_session == agent_session then
      return r
    end
  end
end

--- Records a permission question (`agentls/permission`) of client `client_id` the user is asked.
function M.add_permission(request, client_id)
  permissions[request.requestId] = { request = request, client_id = client_id }
  status_changed()
end

--- Whether the question `id` still waits for the user's answer.
function M.permission_pending(id)
  return permissions[id] ~= nil
end

function M.remove_permission(id)
  permissions[id] = nil
  status_changed()
end

--- Forgets the questions of a tool call that ended (the server denied them on a cancel).
function M.remove_permissions_of_call(session_id, call_id, agent_session)
  for id, p in pairs(permissions) do
    local r = p.request
    if r.sessionId == session_id and r.callId == call_id and (r.agent and r.agent.sessionId) == agent_session then
      permissions[id] = nil
      status_changed()
    end
  end
end

--- Forgets the questions of a client that stopped; returns them (the requests).
function M.remove_permissions_of_client(client_id)
  local removed = {}
  for id, p in pairs(permissions) do
    if p.client_id == client_id then
      permissions[id] = nil
      table.insert(removed, p.request)
    end
  end
  if #removed > 0 then
    status_changed()
  end
  return removed
end

--- What became of the trust of the folder `root` (a path) in this Neovim session; nil: the
--- server never said it needs trust.
---@return agentls.Trust?
function M.trust(root)
  return trust[root]
end

--- Records (or updates) the trust of the folder `root`.
function M.set_trust(root, fields)
  trust[root] = vim.tbl_extend("force", trust[root] or { ignored = {} }, fields)
end

--- Records a session's context figures (`context` of its `agentls.listSessions` entry).
function M.set_context(client_id, session_id, context)
  local c = clients[client_id]
  if c and c.session and c.session.id == session_id and type(context) == "table" then
    c.session.context = context
    status_changed()
  end
end

--- The share of the window the active session's next request fills (percent), its figures;
--- nil when unknown.
function M.context()
  local c = active_client and clients[active_client]
  local ctx = c and c.session and c.session.context
  if not (ctx and (ctx.contextWindow or 0) > 0) then
    return nil
  end
  return math.floor((ctx.estimateTokens or 0) * 100 / ctx.contextWindow), ctx
end

--- One line for statuslines: "" without a session, else e.g.
--- "agentls: processing · model · ctx 21% · 1 review".
function M.status()
  local c = active_client and clients[active_client]
  if not (c and c.session) then
    return ""
  end
  local parts = { "agentls: " .. (c.session.state or "idle") }
  if c.session.model then
    table.insert(parts, c.session.model)
  end
  local percent = M.context()
  if percent then
    table.insert(parts, ("ctx %d%%"):format(percent))
  end
  local n = #review_order
  if n > 0 then
    table.insert(parts, n == 1 and "1 review" or (n .. " reviews"))
  end
  if next(permissions) then
    table.insert(parts, "permission asked")
  end
  return table.concat(parts, " · ")
end

return M
