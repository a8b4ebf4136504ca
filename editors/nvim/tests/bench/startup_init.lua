-- Init file of the load-time benchmark: the plugin on 'runtimepath' and setup() as a user has
-- it; the time setup() takes is appended to $AGENTLS_BENCH_OUT (ms).
vim.opt.runtimepath:prepend(vim.env.AGENTLS_BENCH_PLUGIN)
vim.opt.shadafile = "NONE"
local started = vim.uv.hrtime()
require("agentls").setup({ cmd = { "agentls" } })
local ms = (vim.uv.hrtime() - started) / 1e6
local f = assert(io.open(vim.env.AGENTLS_BENCH_OUT, "a"))
f:write(("%.3f\n"):format(ms))
f:close()
