-- Reopening a session in a client (`agentls.resumeSession`): it becomes the client's current
-- session, and the chat says so and shows the conversation the server reloaded
-- (`agentls.history`). :AgentSessions and a restarted server both reopen sessions this way.
local chat = require("agentls.chat")
local protocol = require("agentls.protocol")
local rpc = require("agentls.rpc")
local state = require("agentls.state")

local M = {}

---@class agentls.ReopenOpts
---@field header fun(result: table): string[] the chat lines that say the session was reopened (`result`: agentls.resumeSession's answer)
---@field on_error (fun(err: table): boolean?)? called on a failure; the error is shown unless it returns true
---@field fold_history boolean? the history in a closed fold (the chat above already shows it)

--- Reopens `session_id` in client `c`; a session the server reloaded from its transcript is
--- followed by its history.
---@param opts agentls.ReopenOpts
function M.reopen(c, session_id, opts)
  rpc.exec(c, protocol.command.resume_session, { sessionId = session_id }, function(err, r)
    if err or not r then
      return opts.on_error and opts.on_error(err or { message = "no answer" })
    end
    state.set_session(c.id, { id = r.sessionId, model = r.model, profile = r.profile, state = "idle" })
    chat.note(opts.header(r))
    if not r.resumed then
      return -- it was open already: the chat shows it
    end
    rpc.exec(c, protocol.command.history, { sessionId = r.sessionId }, function(e, res)
      if not e and res then
        chat.history(r.sessionId, res.entries or {}, opts.fold_history, res.undone)
      end
    end)
  end)
end

return M
