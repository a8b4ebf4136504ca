-- The plugin's options: documented defaults (doc/agentls.txt, |agentls-options|), validated once
-- in setup(). Every other module reads options through `config.get()`.
local M = {}

M.defaults = {
  -- The server command; `cmd_env` is added to its environment.
  cmd = { "agentls" },
  cmd_env = nil,
  -- A project root is the nearest folder holding one of these, else the current directory.
  root_markers = { ".git", "AGENTS.md", "CLAUDE.md", "GEMINI.md", ".codex" },
  -- Server settings (the keys of the configuration file, snake_case): sent as
  -- initializationOptions and as the `agentls` section of workspace/configuration.
  settings = {},
  -- Tool profile of new sessions ("anthropic", "openai", "gemini", "code"); nil: the provider's own.
  profile = nil,
  chat = {
    layout = "split", -- "split" or "float"
    position = "right", -- split side: "right", "left", "top", "bottom"
    size = 0.4, -- split width/height, a fraction of the editor or a number of columns/lines
    float = { width = 0.7, height = 0.8, border = "rounded" },
    auto_open = true, -- open the chat when a prompt is sent
    flush_ms = 16, -- streamed text is appended at most once per this many ms
  },
  review = {
    auto_open = true, -- open the review tab when a review arrives
    keys = {
      accept_hunk = "ga",
      reject_hunk = "gr",
      accept = "gA",
      reject = "gR",
      open = "<CR>", -- in the file list
    },
  },
}

local options = vim.deepcopy(M.defaults)

local function check(path, value, expected, optional)
  if value == nil and optional then
    return
  end
  local ok = type(expected) == "function" and expected(value) or type(value) == expected
  if not ok then
    error(("agentls: option `%s` is invalid (%s)"):format(path, vim.inspect(value)), 0)
  end
end

local function one_of(list)
  return function(v)
    return vim.tbl_contains(list, v)
  end
end

--- Merges `user` over the defaults and validates the result. Errors name the bad option.
function M.set(user)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user or {})
  check("cmd", merged.cmd, function(v)
    return type(v) == "table" and type(v[1]) == "string"
  end)
  check("cmd_env", merged.cmd_env, "table", true)
  check("root_markers", merged.root_markers, "table")
  check("settings", merged.settings, "table")
  check("profile", merged.profile, one_of({ "anthropic", "openai", "gemini", "code" }), true)
  check("chat.layout", merged.chat.layout, one_of({ "split", "float" }))
  check("chat.position", merged.chat.position, one_of({ "right", "left", "top", "bottom" }))
  check("chat.size", merged.chat.size, "number")
  check("chat.flush_ms", merged.chat.flush_ms, "number")
  check("review.keys", merged.review.keys, "table")
  options = merged
  return options
end

function M.get()
  return options
end

return M
