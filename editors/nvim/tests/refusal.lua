-- On a Neovim older than 0.10 (Debian's 0.7.2): the plugin loads without error, setup() says
-- which version it needs, and nothing else happens.
local dir = vim.env.AGENTLS_TEST_DIR
local T = dofile(dir .. "/runner.lua")

T.test("Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. ": setup() refuses with the version it needs and does nothing else", function()
  local messages = {}
  vim.notify = function(msg, level)
    table.insert(messages, { msg = msg, level = level })
  end
  vim.opt.runtimepath:prepend(vim.fn.fnamemodify(dir, ":h"))
  vim.cmd("runtime! plugin/agentls.lua")
  T.eq(vim.fn.exists(":Agent"), 0, "no commands on an old Neovim")
  local result = require("agentls").setup({ cmd = { "agentls" } })
  T.eq(result, false, "setup() result")
  T.eq(#messages, 1, "one message")
  T.contains(messages[1].msg, "needs Neovim 0.10 or newer")
  local v = vim.version()
  T.contains(messages[1].msg, ("this is %d.%d.%d"):format(v.major, v.minor, v.patch))
  T.eq(messages[1].level, vim.log.levels.ERROR, "an error")
  T.eq(vim.fn.exists("#agentls.client"), 0, "no autocommands")
  T.eq(#vim.lsp.get_active_clients(), 0, "no client")
  T.eq(package.loaded["agentls.client"], nil, "nothing else loaded")
  vim.cmd("enew")
  vim.api.nvim_buf_set_name(0, vim.fn.tempname() .. ".txt")
  vim.cmd("doautocmd BufNewFile")
  T.eq(#vim.lsp.get_active_clients(), 0, "still no client after opening a file")
end)

return T.run()
