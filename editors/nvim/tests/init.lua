-- The tests' init file: the plugin from this checkout, set up the way a user would, against the
-- server binary and the fake provider the suite started.
local plugin_dir = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(plugin_dir)
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
require("agentls").setup({
  cmd = { vim.env.AGENTLS_TEST_BIN, "serve", "--stdio" },
  settings = { model = "claude-test" },
  profile = "openai", -- apply_patch: one review can span several files
})
