-- Permission questions (`agentls/permission`) through vim.ui.select and vim.ui.input, so the
-- user's picker (dressing, snacks, telescope-ui-select) asks them. A question whose tool call
-- ended or whose server stopped is no longer pending: an answer given to it later is not sent
-- (least of all to a restarted server, which never asked it).
local protocol = require("agentls.protocol")
local rpc = require("agentls.rpc")
local state = require("agentls.state")

local M = {}

local CHOICES = {
  { label = "Allow once", decision = protocol.permission_decision.allow_once },
  { label = "Always allow", decision = protocol.permission_decision.allow_always },
  { label = "Deny", decision = protocol.permission_decision.deny },
}

local function resolve(client_id, request, decision, feedback)
  if not state.permission_pending(request.requestId) then
    vim.notify(
      "agentls: that permission question was dropped (its tool call ended or the server stopped); the answer was not sent",
      vim.log.levels.WARN
    )
    return
  end
  state.remove_permission(request.requestId)
  local c = vim.lsp.get_client_by_id(client_id)
  if c then
    rpc.exec(c, protocol.command.resolve_permission, {
      requestId = request.requestId,
      decision = decision,
      feedback = feedback,
    })
  end
end

--- Asks the user about one `agentls/permission` request and answers it.
function M.ask(client_id, request)
  state.add_permission(request, client_id)
  local prompt = ("agentls wants to run: %s (in %s)"):format(request.command or request.toolName, request.cwd or "?")
  local mcp = request.mcp
  if mcp then
    prompt = ("agentls wants to call the tool %s of the MCP server %s with %s (in %s)"):format(
      mcp.tool,
      mcp.server,
      vim.json.encode(mcp.arguments == nil and vim.empty_dict() or mcp.arguments),
      request.cwd or "?"
    )
  end
  vim.schedule(function()
    if not state.permission_pending(request.requestId) then
      return -- dropped before it could be asked
    end
    vim.ui.select(CHOICES, {
      prompt = prompt,
      kind = "agentls.permission",
      format_item = function(item)
        return item.label
      end,
    }, function(choice)
      if not choice then
        resolve(client_id, request, protocol.permission_decision.deny, nil)
      elseif choice.decision == protocol.permission_decision.deny and state.permission_pending(request.requestId) then
        vim.ui.input({ prompt = "Reason (optional): " }, function(reason)
          resolve(client_id, request, choice.decision, reason ~= "" and reason or nil)
        end)
      else
        resolve(client_id, request, choice.decision, nil)
      end
    end)
  end)
end

--- The server of some questions stopped: they are dropped (the command did not run), and the
--- chat says so.
function M.on_client_exit(client_id)
  for _, request in ipairs(state.remove_permissions_of_client(client_id)) do
    require("agentls.chat").note({
      ("permission question dropped: the server stopped before it was answered; %s did not run"):format(
        request.command or request.toolName or "the command"
      ),
    }, "AgentlsWarning")
  end
end

return M
