-- :checkhealth agentls — Neovim version, the server binary and its version, `agentls doctor`'s
-- verdict (provider and whether its key is set; doctor never prints keys), the log path, and per
-- running client whether its folder waits for trust (what `agentls/trustRequired` said) and its
-- MCP servers with their state, tools and last error.
local M = {}

local function run(argv, env)
  local ok, result = pcall(function()
    return vim.system(argv, { text = true, env = env }):wait(10000)
  end)
  if not ok then
    return { code = -1, stdout = "", stderr = tostring(result) }
  end
  return result
end

-- What the server said of the trust of `root` in this Neovim session (agentls/trustRequired).
local function trust_of(h, root)
  local state = package.loaded["agentls.state"]
  local trust = state and root and state.trust(vim.fs.normalize(root))
  if not trust then
    return
  end
  local file = trust.file and vim.fs.basename(trust.file) or ".agentls.toml"
  if trust.state == "trusted" then
    h.ok(("%s is trusted: all of its %s applies"):format(root, file))
    return
  end
  local keys = table.concat(vim.tbl_map(function(i)
    return i.key
  end, trust.ignored or {}), ", ")
  h.warn(("%s is not trusted: its %s sets keys that stay ignored until it is (%s)"):format(root, file, keys), {
    ":AgentTrust trusts it",
    trust.state == "denied" and "Neovim's trust database denies the file (:trust to change that)" or nil,
  })
end

-- The MCP servers of a client's folder as its server runs them (`agentls.mcpServers` answers at
-- once: it never waits for a server).
local function mcp_of(h, c)
  local protocol = require("agentls.protocol")
  local params = { command = protocol.command.mcp_servers, arguments = { { rootUri = vim.uri_from_fname(c.root_dir) } } }
  local response
  if vim.fn.has("nvim-0.11") == 1 then
    response = c:request_sync("workspace/executeCommand", params, 5000)
  else
    response = c.request_sync("workspace/executeCommand", params, 5000)
  end
  local result = response and response.result and protocol.decode(protocol.command_result[protocol.command.mcp_servers], response.result)
  if not result then
    h.warn(("%s: the server did not list its MCP servers (%s)"):format(c.root_dir or "?", response and vim.inspect(response.err) or "no answer"))
    return
  end
  if #(result.servers or {}) == 0 then
    h.info(("%s: no MCP servers are configured"):format(c.root_dir or "?"))
  end
  for _, s in ipairs(result.servers or {}) do
    local state = protocol.mcp_state_text(s.state)
    local tools = vim.tbl_map(function(t)
      return t.name
    end, s.tools or {})
    local line = ("%s: %s (%s)%s"):format(s.name, state, s.target, #tools > 0 and (", tools: " .. table.concat(tools, ", ")) or "")
    local last_error = s.lastError ~= vim.NIL and s.lastError or nil
    if s.state == "running" or s.state == "starting" then
      h.ok(line)
    elseif s.state == "failed" or s.state == "invalid" then
      h.error(line, { last_error and ("last error: " .. last_error) or nil, ":AgentMcp restart " .. s.name .. " starts it again" })
    elseif s.state == "needs_trust" then
      h.warn(line, { "a project's server starts once its folder is trusted (:AgentTrust)" })
    else
      h.info(line)
    end
  end
end

function M.check()
  local h = vim.health
  h.start("agentls: Neovim")
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    h.ok("Neovim " .. version .. (vim.fn.has("nvim-0.11") == 1 and " (vim.lsp.config/enable)" or " (vim.lsp.start)"))
  else
    h.error("Neovim " .. version .. ": agentls needs 0.10 or newer")
    return
  end
  if not require("agentls").did_setup then
    h.warn("setup() was not called", { 'add require("agentls").setup{} to your config' })
  end

  h.start("agentls: server")
  local o = require("agentls.config").get()
  local bin = vim.fn.exepath(o.cmd[1])
  if bin == "" then
    h.error(("`%s` not found on PATH"):format(o.cmd[1]), { "install it: cargo install --locked --path . (in the agentls repository)", "or set `cmd` in setup()" })
    return
  end
  local out = run({ bin, "--version" }, o.cmd_env)
  if out.code ~= 0 then
    h.error(("%s --version failed: %s"):format(bin, vim.trim(out.stderr or "")))
    return
  end
  h.ok(("%s (%s)"):format(vim.trim(out.stdout), bin))

  local doctor = run({ bin, "doctor" }, o.cmd_env)
  local report = (doctor.stdout or "") .. "\n" .. (doctor.stderr or "")
  local function field(name)
    return report:match("\n" .. name .. ": ([^\n]*)")
  end
  if doctor.code == 0 then
    h.ok(("provider: %s"):format(field("provider") or "?"))
    local model = o.settings.model
    h.ok(model and ("model: %s (from setup's settings; the configuration files say %s)"):format(model, field("model") or "?")
      or ("model: %s"):format(field("model") or "?"))
    local key = field("key variable")
    if key then
      h.ok("key: " .. key)
    end
  else
    local message = report:match("agentls: ([^\n]*)") or vim.trim(report)
    h.error("agentls doctor: " .. message, { "set a provider key (see docs/configuration.md) or run `agentls demo`" })
  end
  local log = field("log %(server mode%)")
  if log then
    h.info("log: " .. log)
  end

  h.start("agentls: clients")
  local clients = vim.lsp.get_clients({ name = "agentls" })
  if #clients == 0 then
    h.info("no agentls client is running (one starts when a file is opened)")
  end
  for _, c in ipairs(clients) do
    local plugin = vim.tbl_get(c.server_capabilities or {}, "experimental", "agentls")
    h.ok(("client %d: root %s, %s"):format(c.id, c.root_dir or "?", plugin and "agentls protocol " .. tostring(plugin.protocolVersion) or "no agentls extension"))
    trust_of(h, c.root_dir)
  end

  h.start("agentls: MCP servers")
  if #clients == 0 then
    h.info("no agentls client is running: `agentls mcp list` lists the servers of a folder")
  end
  for _, c in ipairs(clients) do
    mcp_of(h, c)
  end
end

return M
