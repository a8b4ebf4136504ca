-- Without the server binary: one clear message naming the command and what to do, no client,
-- no error.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h"))

T.test("a missing server is said once, clearly, and nothing starts", function()
  local messages = {}
  vim.notify = function(msg, level)
    table.insert(messages, { msg = msg, level = level })
  end
  T.eq(require("agentls").setup({ cmd = { "agentls-not-installed" } }), true, "setup()")
  vim.cmd.edit(vim.env.AGENTLS_TEST_WS .. "/notes.txt")
  vim.cmd.edit(vim.env.AGENTLS_TEST_WS .. "/second.txt")
  T.wait(5000, function()
    return #messages > 0
  end, "the message")
  vim.wait(200)
  T.eq(#messages, 1, "said once: " .. vim.inspect(messages))
  T.contains(messages[1].msg, "`agentls-not-installed` was not found")
  T.contains(messages[1].msg, "cargo install")
  T.eq(messages[1].level, vim.log.levels.ERROR, "an error")
  T.eq(#vim.lsp.get_clients(), 0, "no client")
end)

return T.run()
