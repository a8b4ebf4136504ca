-- Permission questions (`agentls/permission`) through vim.ui.select and vim.ui.input, so the
-- user's picker (dressing, snacks, telescope-ui-select) asks them.
local client = require("agentls.client")
local protocol = require("agentls.protocol")
local state = require("agentls.state")

local M = {}

local CHOICES = {
  { label = "Allow once", decision = protocol.permission_decision.allow_once },
  { label = "Always allow", decision = protocol.permission_decision.allow_always },
  { label = "Deny", decision = protocol.permission_decision.deny },
}

local function resolve(client_id, request, decision, feedback)
  state.remove_permission(request.requestId)
  local c = vim.lsp.get_client_by_id(client_id)
  if c then
    client.exec(c, protocol.command.resolve_permission, {
      requestId = request.requestId,
      decision = decision,
      feedback = feedback,
    })
  end
end

--- Asks the user about one `agentls/permission` request and answers it.
function M.ask(client_id, request)
  state.add_permission(request)
  local prompt = ("agentls wants to run: %s (in %s)"):format(request.command or request.toolName, request.cwd or "?")
  vim.schedule(function()
    vim.ui.select(CHOICES, {
      prompt = prompt,
      kind = "agentls.permission",
      format_item = function(item)
        return item.label
      end,
    }, function(choice)
      if not choice then
        resolve(client_id, request, protocol.permission_decision.deny, nil)
      elseif choice.decision == protocol.permission_decision.deny then
        vim.ui.input({ prompt = "Reason (optional): " }, function(reason)
          resolve(client_id, request, choice.decision, reason ~= "" and reason or nil)
        end)
      else
        resolve(client_id, request, choice.decision, nil)
      end
    end)
  end)
end

return M
