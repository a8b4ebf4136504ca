-- Init file of the chat benchmark: the plugin against stream_server.py.
vim.opt.runtimepath:prepend(vim.env.AGENTLS_BENCH_PLUGIN)
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"
require("agentls").setup({
  chat = { flush_ms = tonumber(vim.env.AGENTLS_BENCH_FLUSH_MS or "16") },
  cmd = { "python3", vim.env.AGENTLS_BENCH_PLUGIN .. "/tests/bench/stream_server.py", vim.env.AGENTLS_BENCH_RATE, vim.env.AGENTLS_BENCH_SECONDS },
})
