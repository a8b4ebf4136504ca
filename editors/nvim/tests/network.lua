-- A network error on Neovim 0.11, the real plugin and server (issue 29): the provider's name
-- does not resolve (a name under `.invalid`, which no resolver answers: no network needed), and
-- the chat on screen shows the server's error saying what to check and what to set.
-- The plugin is set up here rather than by tests/init.lua: its `cmd_env` points the server at
-- that name, with a user configuration of no retries.
local plugin_dir = vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h")
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/agentls.lua") -- started with -u NONE: the plugin's commands
vim.opt.swapfile = false
vim.opt.shadafile = "NONE"

local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local H = dofile(vim.env.AGENTLS_TEST_DIR .. "/helpers.lua")

vim.o.columns, vim.o.lines = 180, 50

local user_config = vim.fn.tempname() .. ".toml"
vim.fn.writefile({ "[network]", "max_retries = 0" }, user_config)
require("agentls").setup({
  cmd = { H.bin, "serve", "--stdio" },
  cmd_env = { ANTHROPIC_BASE_URL = "https://api.agentls-test.invalid", AGENTLS_CONFIG = user_config },
  settings = { model = "claude-test" },
})

local SAID = "✗ error: cannot reach https://api.agentls-test.invalid/v1/messages: the name api.agentls-test.invalid "
  .. "does not resolve (DNS): check the base URL and your network (where only a proxy reaches the internet, set "
  .. "HTTPS_PROXY)"

--- What window `win` shows on screen now, its rows one after another.
local function window_text(win)
  vim.cmd("redraw!")
  local top, left = unpack(vim.api.nvim_win_get_position(win))
  local rows = {}
  for r = top + 1, top + vim.api.nvim_win_get_height(win) do
    local cells = {}
    for c = left + 1, left + vim.api.nvim_win_get_width(win) do
      cells[#cells + 1] = vim.fn.screenstring(r, c)
    end
    rows[#rows + 1] = table.concat(cells)
  end
  return table.concat(rows, "\n")
end

T.test("a provider whose name does not resolve: the chat says DNS, what to check and what to set", function()
  vim.cmd.edit(H.path("notes.txt"))
  T.wait(10000, function()
    local c = H.client()
    return c and c.initialized
  end, "the client")
  local requests = #H.requests()
  vim.cmd("Agent hello")
  local shown = vim.wait(15000, function()
    return H.chat_text():find(SAID, 1, true) ~= nil
  end, 20)
  T.truthy(shown, "the error in the chat: " .. SAID .. "\nthe chat:\n" .. H.chat_text())
  T.eq(#H.requests(), requests, "no request reached the suite's provider")
  T.wait(5000, function()
    return require("agentls").status():find("idle", 1, true) ~= nil
  end, "the session to be idle again")
  -- On screen, where the user reads it: the chat's window, its long lines wrapped (compared
  -- without white space, which wrapping moves).
  local win = vim.fn.bufwinid(require("agentls.chat").buf())
  T.truthy(win ~= -1, "the chat is open")
  local on_screen = window_text(win):gsub("%s+", "")
  T.contains(on_screen, (SAID:gsub("%s+", "")), "the chat's window on screen")
end)

return T.run()
