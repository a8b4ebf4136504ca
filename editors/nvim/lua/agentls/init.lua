-- agentls for Neovim: `require("agentls").setup{...}` and `require("agentls").status()`.
-- Kept loadable on any Neovim so that an old one gets a clear refusal instead of an error.
local M = {}

M.min_version = "0.10"

local function version_string()
  local v = vim.version()
  return ("%d.%d.%d"):format(v.major, v.minor, v.patch)
end

--- Starts agentls for every project opened from now on (and the buffers already open).
--- Returns false, and does nothing else, on a Neovim older than 0.10.
function M.setup(opts)
  if vim.fn.has("nvim-" .. M.min_version) ~= 1 then
    vim.notify(
      ("agentls needs Neovim %s or newer; this is %s. agentls was not set up."):format(M.min_version, version_string()),
      vim.log.levels.ERROR
    )
    return false
  end
  require("agentls.config").set(opts)
  local highlights = require("agentls.highlights")
  highlights.define()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("agentls.highlights", { clear = true }),
    callback = highlights.define,
  })
  -- vim.lsp and the client start with the first file, not at startup.
  local group = vim.api.nvim_create_augroup("agentls.start", { clear = true })
  local function start()
    pcall(vim.api.nvim_del_augroup_by_id, group)
    vim.schedule(function()
      require("agentls.client").enable()
    end)
  end
  local has_file = false
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    has_file = has_file or (vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr) ~= "")
  end
  if has_file then
    start()
  else
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, { group = group, once = true, callback = start })
  end
  M.did_setup = true
  return true
end

--- One line for statuslines ("" when agentls has no session): state, model, pending reviews.
function M.status()
  local state = package.loaded["agentls.state"]
  return state and state.status() or ""
end

return M
