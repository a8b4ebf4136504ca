-- A user's Neovim 0.11 configuration for agentls without the plugin (docs/editors.md shows the
-- same lines). The suite passes the binary and the initializationOptions through the environment.
local options = vim.json.decode(vim.env.AGENTLS_PLAIN_OPTIONS or '{}')

vim.lsp.config('agentls', {
  cmd = { vim.env.AGENTLS_PLAIN_BIN or 'agentls', 'serve', '--stdio' },
  root_markers = { '.git' },
  init_options = options,
})
vim.lsp.enable('agentls')
