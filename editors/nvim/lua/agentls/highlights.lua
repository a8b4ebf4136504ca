-- Highlight groups (|agentls-highlights|), linked to standard groups unless the user set them.
local M = {}

M.groups = {
  AgentlsToolRunning = "DiagnosticInfo",
  AgentlsToolOk = "DiagnosticOk",
  AgentlsToolError = "DiagnosticError",
  AgentlsToolCancelled = "DiagnosticWarn",
  AgentlsWarning = "DiagnosticWarn",
  AgentlsError = "DiagnosticError",
  AgentlsReasoning = "Comment",
  AgentlsOutput = "Comment",
  AgentlsHunkAccepted = "DiagnosticOk",
  AgentlsHunkRejected = "DiagnosticError",
  AgentlsReviewHint = "WinBar",
  AgentlsFileDecided = "DiagnosticOk",
  AgentlsFilePending = "DiagnosticWarn",
  AgentlsUndone = "Comment",
}

function M.define()
  for group, link in pairs(M.groups) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

return M
