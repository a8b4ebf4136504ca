-- Workspace trust (`agentls/trustRequired`): a project file may be written by a stranger, so the
-- server ignores its keys that could redirect requests or loosen permissions until the user
-- trusts the folder. A file Neovim's own trust database (|vim.secure|) allows as it is now is
-- granted at once; otherwise the user is asked once per root and Neovim session, through
-- vim.ui.select. A grant is recorded in both stores: vim.secure's and the server's
-- (`agentls.trustFolder`). Nothing here waits on the user.
local protocol = require("agentls.protocol")
local rpc = require("agentls.rpc")
local state = require("agentls.state")

local M = {}

M.TRUST, M.NOT_NOW = "Trust this folder", "Not now"

local function root_of(uri_or_path)
  local path = uri_or_path:match("^file:") and vim.uri_to_fname(uri_or_path) or uri_or_path
  return vim.fs.normalize(path)
end

-- vim.secure keys its database by this path (secure.lua: realpath of the normalized path).
local function secure_path(path)
  return vim.uv.fs_realpath(vim.fs.normalize(path))
end

local function read(path)
  local f = io.open(path, "r")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- What vim.secure's database says of `file` as it is now: "allow" (its current contents are
--- trusted), "deny", or nil (unknown, or trusted with other contents). The check of
--- vim.secure.read() without its prompt (which would block): the database is
--- `stdpath("state")/trust`, lines of `<sha256 of the contents> <realpath>`, "!" for denied.
function M.secure_state(file)
  local full = secure_path(file)
  local db = full and read(vim.fn.stdpath("state") .. "/trust")
  if not db then
    return nil
  end
  local recorded
  for line in vim.gsplit(db, "\n") do
    local hash, path = line:match("^(%S+) (.+)$")
    if path == full then
      recorded = hash
    end
  end
  if recorded == "!" then
    return "deny"
  end
  local contents = recorded and read(full)
  if contents and vim.fn.sha256(contents) == recorded then
    return "allow"
  end
end

--- Records `file` as trusted in vim.secure. Neovim 0.10 and 0.11 allow only a buffer (what
-- `:trust` does), so the file is read into a buffer without autocommands unless it is loaded
-- already (and unloaded again); a buffer with unsaved changes is left alone (its hash is not
-- the file's).
function M.secure_allow(file)
  local ok, done = pcall(vim.secure.trust, { action = "allow", path = file })
  if ok and done then
    return
  end
  local full = secure_path(file)
  if not full then
    return
  end
  local existed = vim.fn.bufexists(full) == 1
  local eventignore = vim.o.eventignore
  vim.o.eventignore = "all"
  pcall(function()
    local bufnr = vim.fn.bufadd(full)
    local was_loaded = vim.api.nvim_buf_is_loaded(bufnr)
    if was_loaded and vim.bo[bufnr].modified then
      return
    end
    if not was_loaded then
      vim.fn.bufload(bufnr)
    end
    vim.secure.trust({ action = "allow", bufnr = bufnr })
    if not was_loaded then
      vim.api.nvim_buf_delete(bufnr, { unload = existed, force = true })
    end
  end)
  vim.o.eventignore = eventignore
end

-- Grants trust to `root` in the server's store (and, with `file`, in vim.secure's).
local function grant(c, root, file, why)
  state.set_trust(root, { state = "granting" })
  if file and M.secure_state(file) ~= "allow" then
    M.secure_allow(file)
  end
  rpc.exec(c, protocol.command.trust_folder, { rootUri = vim.uri_from_fname(root) }, function(err, res)
    if err or not (res and res.trusted) then
      state.set_trust(root, { state = "declined" })
      return
    end
    state.set_trust(root, { state = "trusted" })
    vim.notify(
      ("agentls: %s is trusted%s; sessions started from now on (:AgentNew) use all of %s"):format(
        root,
        why or "",
        file and vim.fs.basename(file) or ".agentls.toml"
      ),
      vim.log.levels.INFO
    )
  end)
end

local function keys(ignored)
  return table.concat(
    vim.tbl_map(function(i)
      return i.reason and i.reason ~= "" and ("%s (%s)"):format(i.key, i.reason) or i.key
    end, ignored),
    "; "
  )
end

--- `agentls/trustRequired`: the folder `rootUri` is untrusted and its project `file` sets the
--- `ignored` keys. Grants at once when vim.secure allows the file; else asks, once per root.
function M.required(client_id, params)
  local root = root_of(params.rootUri)
  local c = vim.lsp.get_client_by_id(client_id)
  if state.trust(root) or not c then
    return -- asked (or granted) already in this Neovim session
  end
  local ignored = params.ignored or {}
  state.set_trust(root, { file = params.file, ignored = ignored, state = "asking" })
  local secure = params.file and M.secure_state(params.file)
  if secure == "allow" then
    return grant(c, root, params.file, " (Neovim's trust database allows its " .. vim.fs.basename(params.file) .. ")")
  end
  if secure == "deny" then
    state.set_trust(root, { state = "denied" })
    vim.notify(
      ("agentls: %s is denied in Neovim's trust database (:trust to change that); these keys stay ignored: %s"):format(
        params.file,
        keys(ignored)
      ),
      vim.log.levels.WARN
    )
    return
  end
  local prompt = ("agentls: %s is not trusted. Its %s sets keys ignored until you trust it: %s"):format(
    root,
    params.file and vim.fs.basename(params.file) or "project file",
    keys(ignored)
  )
  vim.schedule(function()
    vim.ui.select({ M.TRUST, M.NOT_NOW }, { prompt = prompt, kind = "agentls.trust" }, function(choice)
      if choice == M.TRUST then
        grant(c, root, params.file)
      else
        state.set_trust(root, { state = "declined" })
        vim.notify(("agentls: %s stays untrusted (:AgentTrust trusts it)"):format(root), vim.log.levels.INFO)
      end
    end)
  end)
end

--- :AgentTrust: trusts the folder of client `c` (its project file in vim.secure too).
function M.trust_root(c)
  local root = root_of(c.root_dir)
  local known = state.trust(root)
  local file = known and known.file or vim.fs.joinpath(root, ".agentls.toml")
  state.set_trust(root, { file = file })
  grant(c, root, vim.fn.filereadable(file) == 1 and file or nil)
end

return M
