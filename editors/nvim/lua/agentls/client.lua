-- The language client's lifetime: one client per project root (vim.lsp.config/enable on 0.11,
-- vim.lsp.start on 0.10), attached to every normal buffer under it, with the handlers of the
-- agentls extension. Also the one place commands are sent from (`exec`).
local config = require("agentls.config")
local protocol = require("agentls.protocol")
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
  M.exec(client, protocol.command.list_sessions, {}, function(err, res)
    for _, s in ipairs((not err and res and res.sessions) or {}) do
      if s.sessionId == session_id then
        state.set_context(client_id, session_id, s.context)
      end
    end
    return true -- a failed refresh only leaves the old figures
  end)
end

local function handlers()
  local M_ = protocol.method
  return {
    [M_.event] = function(_, event, ctx)
      state.note_event(ctx.client_id, event)
      require("agentls.chat").on_event(event)
      -- A subagent's events (marked `agent`) change nothing of the session's context.
      if CONTEXT_CHANGES[event.kind] and not event.agent then
        M.refresh_context(ctx.client_id, event.sessionId)
      end
      if event.kind == protocol.event.tool_end then
        local call_id = (event.data or {}).call_id
        -- A subagent's call ids are its own session's (marked `agent`).
        local agent_session = event.agent and event.agent.sessionId or nil
        state.remove_permissions_of_call(event.sessionId, call_id, agent_session)
        require("agentls.review").on_call_end(event.sessionId, call_id, agent_session)
      end
    end,
    [M_.review] = function(_, params, ctx)
      require("agentls.review").receive(ctx.client_id, params)
    end,
    [M_.permission] = function(_, params, ctx)
      require("agentls.permission").ask(ctx.client_id, params)
    end,
    [M_.save_documents] = function(_, params)
      return require("agentls.server_requests").save_documents(params)
    end,
    [M_.diagnostics] = function(_, params, ctx)
      return require("agentls.server_requests").diagnostics(params, ctx.client_id)
    end,
    [M_.trust_required] = function(_, params, ctx)
      require("agentls.trust").required(ctx.client_id, params)
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
    end,
    on_exit = function(_, _, client_id)
      state.client_stopped(client_id)
      if package.loaded["agentls.review"] then
        require("agentls.review").on_client_exit(client_id)
      end
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

--- Attaches `bufnr` to the client of its root (starting it when needed).
function M.attach(bufnr)
  if not attachable(bufnr) then
    return
  end
  local cfg = client_config()
  cfg.root_dir = M.root_for(bufnr)
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

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

--- The client for the current buffer, else the last one used, else a new one for the cwd.
---@return vim.lsp.Client?
function M.current()
  local c = vim.lsp.get_clients({ name = M.name, bufnr = 0 })[1]
  if c then
    state.set_active(c.id)
    return c
  end
  local id = state.active_client_id()
  c = id and vim.lsp.get_client_by_id(id) or vim.lsp.get_clients({ name = M.name })[1]
  if c then
    return c
  end
  if not server_found() then
    return nil
  end
  local cfg = client_config()
  cfg.root_dir = vim.fn.getcwd()
  id = has_011 and vim.lsp.start(cfg, { attach = false }) or vim.lsp.start_client(cfg)
  c = id and vim.lsp.get_client_by_id(id)
  if not c then
    vim.notify("agentls: could not start " .. table.concat(config.get().cmd, " "), vim.log.levels.ERROR)
  end
  return c
end

--- Sends `agentls.<command>` with one object argument; `callback(err, result)` on the answer.
--- Errors are shown unless the callback returns true for them.
function M.exec(client, command, args, callback)
  local function stopped()
    if has_011 then
      return client:is_stopped()
    end
    return client.is_stopped()
  end
  -- A client started a moment ago (the first :Agent in a project) is still initializing.
  local ok = client.initialized or vim.wait(10000, function()
    return client.initialized or stopped()
  end, 10)
  if not ok or stopped() then
    vim.notify("agentls: the server is not running", vim.log.levels.ERROR)
    return
  end
  local params = { command = command, arguments = { dict(args) } }
  local function handler(err, result)
    local handled = callback and callback(err, result)
    if err and not handled then
      vim.notify(("agentls: %s failed: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
  if has_011 then
    client:request("workspace/executeCommand", params, handler)
  else
    client.request("workspace/executeCommand", params, handler)
  end
end

return M
