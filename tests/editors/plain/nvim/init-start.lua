-- The same user configuration in the form Neovim 0.10 understands (no vim.lsp.config):
-- vim.lsp.start from a FileType autocommand. docs/editors.md shows the same lines.
local options = vim.json.decode(vim.env.AGENTLS_PLAIN_OPTIONS or '{}')

vim.api.nvim_create_autocmd('FileType', {
  callback = function(args)
    vim.lsp.start({
      name = 'agentls',
      cmd = { vim.env.AGENTLS_PLAIN_BIN or 'agentls', 'serve', '--stdio' },
      root_dir = vim.fs.root(args.buf, { '.git' }),
      init_options = options,
    })
  end,
})
