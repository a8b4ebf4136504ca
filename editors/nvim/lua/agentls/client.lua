-- The language client's lifetime: one client per project root (vim.lsp.config/enable on 0.11,
-- vim.lsp.start on 0.10), attached to every normal buffer under it, with the handlers of the
-- agentls extension; a server that stops without being asked to is started again (a few times
-- a while) and its session reopened. Commands go through rpc.lua, which this module tells when a
-- client is up and when it stopped.
local config = require("agentls.config")
local protocol = require("agentls.protocol")
local rpc = require("agentls.rpc")
local state = require("agentls.state")

local M = {}

M.name = "agentls"
local has_011 = vim.fn.has("nvim-0.11") == 1

--- The project root of `bufnr`: the nearest folder with a root marker, else the cwd.
function M.root_for(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = name ~= "" and vim.fs.root(bufnr, config.get().root_markers) or nil
  return root or vim.fn.getcwd()
end

-- A crashed server is restarted at most RESTARTS times within RESTART_WINDOW_MS per root
-- (as in the VS Code extension); after that it stays stopped until :AgentRestart.
local RESTARTS, RESTART_WINDOW_MS = 3, 3 * 60 * 1000
local restarts = {} ---@type table<string, number[]> root → when its server was restarted after a crash (ms)
-- A started client → the session to reopen once it is up, and what the chat says befell the
-- server ("was restarted"); kept until the session is reopened.
local reopen = {} ---@type table<integer, {session: string?, what: string, active: boolean}>
local restart_asked = {} ---@type table<integer, boolean> clients :AgentRestart is stopping
local left_stopped = {} ---@type table<string, string|false> root → the session open when its server was left stopped
local leaving = false -- Neovim is quitting: its servers stop, none is restarted

local function dict(t)
  return (t == nil or next(t) == nil) and vim.empty_dict() or t
end

-- Events after which a session's context figures (estimate, calibration) have changed.
local CONTEXT_CHANGES = {
  [protocol.event.session_start] = true,
  [protocol.event.processing_end] = true,
  [protocol.event.compaction] = true,
}

--- Fetches a session's context figures (`agentls.listSessions`) for the status line.
function M.refresh_context(client_id, session_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  rpc.exec(client, protocol.command.list_sessions, {}, function(err, res)
    for _, s in ipairs((not err and res and res.sessions) or {}) do
      if s.sessionId == session_id then
        state.set_context(client_id, session_id, s.context)
      end
    end
    return true -- a failed refresh only leaves the old figures
  end)
end

-- The handlers of the server's agentls/* methods; each reads its params through protocol.lua.
local function handlers()
  local M_ = protocol.method
  local function params(method, raw)
    return protocol.decode(protocol.params[method], raw) or {}
  end
  return {
    [M_.event] = function(_, raw, ctx)
      local event = protocol.decode_event(raw)
      state.note_event(ctx.client_id, event)
      require("agentls.chat").on_event(event)
      -- A subagent's events (marked `agent`) change nothing of the session's context.
      if CONTEXT_CHANGES[event.kind] and not event.agent then
        M.refresh_context(ctx.client_id, event.sessionId)
      end
      if event.kind == protocol.event.tool_end then
        local call_id = event.data.call_id
        -- A subagent's call ids are its own session's (marked `agent`).
        local agent_session = event.agent and event.agent.sessionId or nil
        state.remove_permissions_of_call(event.sessionId, call_id, agent_session)
        require("agentls.review").on_call_end(event.sessionId, call_id, agent_session)
      end
    end,
    [M_.review] = function(_, raw, ctx)
      require("agentls.review").receive(ctx.client_id, params(M_.review, raw))
    end,
    [M_.permission] = function(_, raw, ctx)
      require("agentls.permission").ask(ctx.client_id, params(M_.permission, raw))
    end,
    [M_.save_documents] = function(_, raw)
      return require("agentls.server_requests").save_documents(params(M_.save_documents, raw))
    end,
    [M_.diagnostics] = function(_, raw, ctx)
      return require("agentls.server_requests").diagnostics(params(M_.diagnostics, raw), ctx.client_id)
    end,
    [M_.trust_required] = function(_, raw, ctx)
      require("agentls.trust").required(ctx.client_id, params(M_.trust_required, raw))
    end,
  }
end

--- The client configuration (root_dir left to the caller).
local function client_config()
  local o = config.get()
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.experimental = capabilities.experimental or {}
  capabilities.experimental.agentls = protocol.client_capability()
  return {
    name = M.name,
    cmd = require("agentls.transport").cmd(o.cmd, o.cmd_env),
    capabilities = capabilities,
    init_options = dict(o.settings),
    settings = { agentls = dict(o.settings) },
    handlers = handlers(),
    on_init = function(client)
      state.client_started(client.id, client.root_dir)
      rpc.ready(client)
      local r = reopen[client.id]
      if r then
        M.after_restart(client, r)
      end
    end,
    on_exit = function(code, signal, client_id)
      M.on_exit(code, signal, client_id)
    end,
  }
end

local told_missing = false

-- Whether the server command exists; says so once when it does not.
local function server_found()
  local cmd = config.get().cmd[1]
  if vim.fn.executable(cmd) == 1 then
    return true
  end
  if not told_missing then
    told_missing = true
    -- Scheduled: an error message inside a FileType autocommand would abort it.
    vim.schedule_wrap(vim.notify)(
      ("agentls: `%s` was not found; install it (`cargo install --locked --path .` in the agentls repository) or set `cmd` in setup(). :checkhealth agentls tells more."):format(cmd),
      vim.log.levels.ERROR
    )
  end
  return false
end

local function attachable(bufnr)
  return server_found()
    and vim.api.nvim_buf_is_valid(bufnr)
    and vim.bo[bufnr].buftype == ""
    and vim.api.nvim_buf_get_name(bufnr) ~= ""
    and not vim.api.nvim_buf_get_name(bufnr):match("^%a+://")
end

--- Starts a client for `root` attached to `bufs`; returns its id (nil when it could not start).
local function start_client(root, bufs)
  local cfg = client_config()
  cfg.root_dir = root
  local id = has_011 and vim.lsp.start(cfg, { attach = false }) or vim.lsp.start_client(cfg)
  for _, bufnr in ipairs(id and bufs or {}) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      vim.lsp.buf_attach_client(bufnr, id)
    end
  end
  if not id then
    vim.notify("agentls: could not start " .. table.concat(config.get().cmd, " "), vim.log.levels.ERROR)
  end
  return id
end

-- Starts the server of `root` again (for `bufs`); once it is up, `session` is reopened and the
-- chat says `what` happened.
local function start_again(root, bufs, session, what, active)
  local id = start_client(root, bufs)
  if id then
    reopen[id] = { session = session, what = what, active = active }
    left_stopped[root] = nil
  end
end

local function minutes(ms)
  return ("%d minutes"):format(ms / 60000)
end

-- A server stopped without being asked to: its session's running calls are marked interrupted
-- and it is started again, unless it crashed too often lately.
local function crashed(root, bufs, session, active, how)
  local chat = require("agentls.chat")
  local short = session and session:sub(1, 8)
  if session then
    chat.interrupted(session)
  end
  local now = vim.uv.now()
  local recent = vim.tbl_filter(function(t)
    return now - t < RESTART_WINDOW_MS
  end, restarts[root] or {})
  restarts[root] = recent
  if #recent >= RESTARTS then
    left_stopped[root] = session or false
    local msg = ("agentls stopped unexpectedly (%s) after %d restarts within %s and is left stopped; :AgentRestart starts it again%s"):format(
      how,
      #recent,
      minutes(RESTART_WINDOW_MS),
      short and (" and reopens session " .. short) or ""
    )
    chat.note({ "", "✗ " .. msg }, "AgentlsError")
    vim.notify(("agentls: %s (:checkhealth agentls names the server's log)"):format(msg), vim.log.levels.ERROR)
    return
  end
  table.insert(recent, now)
  chat.note({
    "",
    ("⚠ agentls stopped unexpectedly (%s)%s; restarting it (%d of %d within %s)"):format(
      how,
      short and (" with session " .. short .. " open") or "",
      #recent,
      RESTARTS,
      minutes(RESTART_WINDOW_MS)
    ),
  }, "AgentlsWarning")
  start_again(root, bufs, session, "stopped unexpectedly and was restarted", active)
end

--- A client's server exited: its questions are dropped, and unless the client stopped it
--- (vim.lsp's stop, :LspStop, quitting Neovim) it is restarted.
function M.on_exit(code, signal, client_id)
  local c = vim.lsp.get_client_by_id(client_id)
  local root = (c and c.root_dir) or state.root(client_id)
  local open, active = state.client_stopped(client_id)
  rpc.stopped(client_id)
  -- A restarted server that died before its session was reopened still owes it.
  local pending = reopen[client_id]
  reopen[client_id] = nil
  local session = (open and open.id) or (pending and pending.session)
  active = active or (pending and pending.active) or false
  -- Nothing of a question the dead server asked can be answered any more.
  if package.loaded["agentls.review"] then
    require("agentls.review").on_client_exit(client_id)
  end
  if package.loaded["agentls.permission"] then
    require("agentls.permission").on_client_exit(client_id)
  end
  local again = restart_asked[client_id]
  restart_asked[client_id] = nil
  local asked = c and c.rpc.stop_asked and c.rpc.stop_asked()
  if leaving or not root or (asked and not again) then
    return
  end
  local bufs = {}
  for bufnr in pairs(c and c.attached_buffers or {}) do
    table.insert(bufs, bufnr)
  end
  if again then
    start_again(root, bufs, session, "was restarted", active)
  else
    local how = signal ~= 0 and ("signal %d"):format(signal) or ("exit code %d"):format(code)
    crashed(root, bufs, session, active, how)
  end
end

--- A restarted server is up: the session that was open is reopened with its history.
function M.after_restart(c, r)
  local chat = require("agentls.chat")
  if r.active then
    state.set_active(c.id)
  end
  if not r.session then
    reopen[c.id] = nil
    chat.note({ "", ("── agentls %s ──"):format(r.what) })
    vim.notify("agentls: the server " .. r.what, vim.log.levels.INFO)
    return
  end
  local reopened = ("; session %s reopened"):format(r.session:sub(1, 8))
  require("agentls.resume").reopen(c, r.session, {
    header = function(res)
      reopen[c.id] = nil
      vim.notify(("agentls: the server %s%s"):format(r.what, reopened), vim.log.levels.INFO)
      return { "", ("── agentls %s%s (%s) ──"):format(r.what, reopened, res.model or "?") }
    end,
    on_error = function(err)
      reopen[c.id] = nil
      local msg = ("agentls %s, but session %s could not be reopened: %s; :Agent starts a new session"):format(
        r.what,
        r.session:sub(1, 8),
        err.message or vim.inspect(err)
      )
      chat.note({ "", "✗ " .. msg }, "AgentlsError")
      vim.notify(msg, vim.log.levels.WARN)
      return true
    end,
    fold_history = true,
  })
end

--- :AgentRestart: stops the server of the current project (or starts the one left stopped after
--- crashes) and starts it again; the session that was open is reopened.
function M.restart()
  local c = vim.lsp.get_clients({ name = M.name, bufnr = 0 })[1]
  local id = not c and state.active_client_id()
  c = c or (id and vim.lsp.get_client_by_id(id)) or nil
  if c then
    restart_asked[c.id] = true
    if has_011 then
      c:stop()
    else
      c.stop()
    end
    -- A server that does not answer `shutdown` is ended.
    vim.defer_fn(function()
      if vim.lsp.get_client_by_id(c.id) then
        c.rpc.terminate()
      end
    end, 3000)
    return
  end
  if not server_found() then
    return
  end
  local root = M.root_for(0)
  local bufs = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and attachable(bufnr) and M.root_for(bufnr) == root then
      table.insert(bufs, bufnr)
    end
  end
  start_again(root, bufs, left_stopped[root] or nil, "was restarted", true)
  restarts[root] = nil
end

--- Attaches `bufnr` to the client of its root (starting it when needed).
function M.attach(bufnr)
  if not attachable(bufnr) then
    return
  end
  local cfg = client_config()
  cfg.root_dir = M.root_for(bufnr)
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("agentls.leave", { clear = true }),
  callback = function()
    leaving = true
  end,
})

local group

--- Registers the client so every normal buffer gets it.
function M.enable()
  group = vim.api.nvim_create_augroup("agentls.client", { clear = true })
  if has_011 then
    local cfg = client_config()
    cfg.root_dir = function(bufnr, on_dir)
      if attachable(bufnr) then
        on_dir(M.root_for(bufnr))
      end
    end
    vim.lsp.config(M.name, cfg)
    vim.lsp.enable(M.name)
    -- vim.lsp.enable starts clients on FileType; a buffer without a filetype never has one.
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = group,
      callback = function(args)
        vim.schedule(function()
          if vim.api.nvim_buf_is_valid(args.buf) and vim.bo[args.buf].filetype == "" then
            M.attach(args.buf)
          end
        end)
      end,
    })
  else
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost" }, {
      group = group,
      callback = function(args)
        M.attach(args.buf)
      end,
    })
  end
  -- Buffers loaded before now (vim.lsp.enable re-runs FileType only after VimEnter).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and not vim.lsp.get_clients({ name = M.name, bufnr = bufnr })[1] then
      M.attach(bufnr)
    end
  end
  -- The client of the buffer the user is in is the one commands go to.
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    callback = function(args)
      local c = vim.lsp.get_clients({ name = M.name, bufnr = args.buf })[1]
      if c then
        state.set_active(c.id)
      end
    end,
  })
end

--- The client for the current buffer (one still starting included: commands to it wait in
--- rpc.lua until it is up), else the last one used, else a new one for the cwd.
---@return vim.lsp.Client?
function M.current()
  local c = vim.lsp.get_clients({ name = M.name, bufnr = 0 })[1]
  if c then
    state.set_active(c.id)
    return c
  end
  -- vim.lsp lists only initialized clients; vim.lsp.start finds the project's client that is
  -- starting (or starts it).
  local id = M.attach(vim.api.nvim_get_current_buf())
  if id then
    return vim.lsp.get_client_by_id(id)
  end
  id = state.active_client_id()
  c = id and vim.lsp.get_client_by_id(id) or vim.lsp.get_clients({ name = M.name })[1]
  if c then
    return c
  end
  if not server_found() then
    return nil
  end
  id = start_client(vim.fn.getcwd(), {})
  return id and vim.lsp.get_client_by_id(id)
end

return M
