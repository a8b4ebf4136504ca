-- Commands and <Plug> mappings only; every module is required on first use.
if vim.g.loaded_agentls or vim.fn.has("nvim-0.10") ~= 1 then
  return
end
vim.g.loaded_agentls = true

local function cmd(name) -- a function that calls commands.<name>(opts) lazily
  return function(opts)
    require("agentls.commands")[name](opts)
  end
end

local commands = {
  Agent = { "agent", { nargs = "*", range = true, desc = "agentls: ask (a range is sent as context)" } },
  AgentSteer = { "steer", { nargs = "*", desc = "agentls: steer the running turn" } },
  AgentCancel = { "cancel", { desc = "agentls: cancel the running turn" } },
  AgentNew = { "new", { desc = "agentls: start a new session" } },
  AgentSessions = { "sessions", { desc = "agentls: pick and resume a session" } },
  AgentModel = { "model", { nargs = "?", desc = "agentls: set the session's model" } },
  AgentEffort = {
    "effort",
    {
      nargs = "?",
      complete = function()
        return { "minimal", "low", "medium", "high", "default" }
      end,
      desc = "agentls: set the reasoning effort",
    },
  },
  AgentApproval = {
    "approval",
    {
      nargs = "?",
      complete = function()
        return { "review", "auto", "deny" }
      end,
      desc = "agentls: set the approval mode",
    },
  },
  AgentChat = { "chat", { desc = "agentls: toggle the chat" } },
  AgentReview = { "review", { desc = "agentls: reopen the pending review" } },
  AgentAccept = { "accept", { desc = "agentls: accept the file (or, from the file list, the review)" } },
  AgentReject = { "reject", { nargs = "*", desc = "agentls: reject the file (or the review) [reason]" } },
  AgentAcceptHunk = { "accept_hunk", { desc = "agentls: accept the hunk under the cursor" } },
  AgentRejectHunk = { "reject_hunk", { nargs = "*", desc = "agentls: reject the hunk under the cursor [reason]" } },
  AgentTranscript = { "transcript", { desc = "agentls: open the session's transcript" } },
  AgentCompact = { "compact", { desc = "agentls: summarise the conversation's older messages" } },
  AgentUndo = {
    "undo",
    { nargs = "?", bang = true, desc = "agentls: undo the last turn (or [turn] and later ones); ! also rewinds the conversation" },
  },
  AgentRedo = { "redo", { desc = "agentls: redo the turns the last undo reverted" } },
  AgentStatus = { "status", { desc = "agentls: the session's state and context use" } },
  AgentRestart = { "restart", { desc = "agentls: restart the project's server and reopen its session" } },
  AgentTrust = { "trust", { desc = "agentls: trust the project's folder (all of its .agentls.toml applies)" } },
  AgentMcp = { "mcp", { nargs = "*", desc = "agentls: the project's MCP servers: pick one to see its tools or restart it [restart NAME]" } },
}

for name, spec in pairs(commands) do
  vim.api.nvim_create_user_command(name, cmd(spec[1]), spec[2])
end

-- <Plug>(agentls-…) for each command; no default mappings.
local plugs = {
  ["agentls-ask"] = "Agent",
  ["agentls-steer"] = "AgentSteer",
  ["agentls-cancel"] = "AgentCancel",
  ["agentls-new"] = "AgentNew",
  ["agentls-sessions"] = "AgentSessions",
  ["agentls-model"] = "AgentModel",
  ["agentls-effort"] = "AgentEffort",
  ["agentls-approval"] = "AgentApproval",
  ["agentls-chat"] = "AgentChat",
  ["agentls-review"] = "AgentReview",
  ["agentls-accept"] = "AgentAccept",
  ["agentls-reject"] = "AgentReject",
  ["agentls-accept-hunk"] = "AgentAcceptHunk",
  ["agentls-reject-hunk"] = "AgentRejectHunk",
  ["agentls-transcript"] = "AgentTranscript",
  ["agentls-compact"] = "AgentCompact",
  ["agentls-undo"] = "AgentUndo",
  ["agentls-redo"] = "AgentRedo",
  ["agentls-status"] = "AgentStatus",
  ["agentls-restart"] = "AgentRestart",
  ["agentls-trust"] = "AgentTrust",
  ["agentls-mcp"] = "AgentMcp",
}
for plug, command in pairs(plugs) do
  vim.keymap.set("n", ("<Plug>(%s)"):format(plug), ("<Cmd>%s<CR>"):format(command), { desc = "agentls: " .. command })
end
vim.keymap.set("x", "<Plug>(agentls-ask)", ":<C-u>lua require('agentls.commands').ask_visual()<CR>", {
  silent = true,
  desc = "agentls: ask about the selection",
})
