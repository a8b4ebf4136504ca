-- One function per user command (|agentls-commands|). Each finds the client of the current
-- buffer (client.current) and its session, and sends one `agentls.*` command.
local chat = require("agentls.chat")
local client = require("agentls.client")
local config = require("agentls.config")
local protocol = require("agentls.protocol")
local rpc = require("agentls.rpc")
local state = require("agentls.state")

local C = protocol.command
local M = {}

local function start_session(c, callback)
  local o = config.get()
  rpc.exec(c, C.new_session, { profile = o.profile, rootUri = vim.uri_from_fname(c.root_dir) }, function(err, res)
    if err or not res then
      return
    end
    state.set_session(c.id, { id = res.sessionId, model = res.model, profile = res.profile, state = "idle" })
    if callback then
      callback(state.session(c.id))
    end
  end)
end

-- Runs `callback(client, session)` with the current client's session, starting one when needed.
local function with_session(callback)
  local c = client.current()
  if not c then
    return
  end
  local s = state.session(c.id)
  if s then
    return callback(c, s)
  end
  start_session(c, function(session)
    callback(c, session)
  end)
end

-- Runs `callback(client, session)` only when a session exists.
local function with_existing_session(callback)
  local c = client.current()
  local s = c and state.session(c.id)
  if not s then
    vim.notify("agentls: no session yet (:Agent starts one)", vim.log.levels.WARN)
    return
  end
  callback(c, s)
end

-- The user is about to write a prompt: the server opens the provider's connection meanwhile.
local function user_typing()
  local c = client.current()
  if c then
    local s = state.session(c.id)
    rpc.notify(c, protocol.notification.user_typing, { sessionId = s and s.id })
  end
end

local function ask_text(prompt, callback)
  user_typing()
  vim.ui.input({ prompt = prompt }, function(text)
    if text and text ~= "" then
      callback(text)
    end
  end)
end

-- The LSP position of a byte column on a line of `bufnr`.
local function position(bufnr, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  col = math.max(0, math.min(col, #line))
  return { line = row, character = vim.lsp.util.character_offset(bufnr, row, col, encoding or "utf-16") }
end

--- The context of a prompt: the current file, and the selection when there is one.
--- `sel` = {start = {row, col}, finish = {row, col}} (0-based rows, byte columns, finish exclusive).
local function context(c, sel)
  local bufnr = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype ~= "" or name == "" then
    return nil
  end
  local ctx = { uri = vim.uri_from_bufnr(bufnr) }
  if sel then
    ctx.range = {
      start = position(bufnr, sel.start[1], sel.start[2], c.offset_encoding),
      ["end"] = position(bufnr, sel.finish[1], sel.finish[2], c.offset_encoding),
    }
  end
  return ctx
end

local function line_selection(line1, line2)
  local last = vim.api.nvim_buf_get_lines(0, line2 - 1, line2, false)[1] or ""
  return { start = { line1 - 1, 0 }, finish = { line2 - 1, #last } }
end

-- The selection of the last visual mode, charwise when it was.
local function visual_selection()
  local s, e = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  if vim.fn.visualmode() == "v" then
    local last = vim.api.nvim_buf_get_lines(0, e[2] - 1, e[2], false)[1] or ""
    local finish = math.min(#last, e[3] + (vim.str_utf_end and vim.str_utf_end(last, e[3]) or 0))
    return { start = { s[2] - 1, s[3] - 1 }, finish = { e[2] - 1, finish } }
  end
  return line_selection(s[2], e[2])
end

--- Sends `text` as a prompt with the current file (and `sel`) as context.
function M.prompt(text, sel)
  with_session(function(c, s)
    rpc.exec(c, C.prompt, { sessionId = s.id, text = text, context = context(c, sel) })
    if config.get().chat.auto_open then
      chat.open(false)
    end
  end)
end

--- :[range]Agent {prompt}
function M.agent(opts)
  local sel
  if opts.range > 0 then
    local vs, ve = vim.fn.line("'<"), vim.fn.line("'>")
    sel = (vs == opts.line1 and ve == opts.line2) and visual_selection() or line_selection(opts.line1, opts.line2)
  end
  if opts.args ~= "" then
    return M.prompt(opts.args, sel)
  end
  ask_text("Ask agentls: ", function(text)
    M.prompt(text, sel)
  end)
end

--- <Plug>(agentls-ask) in visual mode.
function M.ask_visual()
  local sel = visual_selection()
  ask_text("Ask agentls about the selection: ", function(text)
    M.prompt(text, sel)
  end)
end

function M.steer(opts)
  local function send(text)
    with_existing_session(function(c, s)
      rpc.exec(c, C.steer, { sessionId = s.id, text = text })
    end)
  end
  if opts.args ~= "" then
    return send(opts.args)
  end
  ask_text("Steer agentls: ", send)
end

function M.cancel()
  with_existing_session(function(c, s)
    rpc.exec(c, C.cancel, { sessionId = s.id })
  end)
end

local op_letter = { create = "A", modify = "M", delete = "D", rename = "R" }

--- What an undo or a redo did, as one message.
local function reverted_text(verb, result)
  local turns = table.concat(vim.tbl_map(tostring, result.turnIds or {}), ", ")
  local lines = { ("agentls: %s turn %s"):format(verb, turns) }
  for _, file in ipairs(result.files or {}) do
    local name = vim.fn.fnamemodify(vim.uri_to_fname(file.uri), ":~:.")
    if file.newUri then
      name = name .. " → " .. vim.fn.fnamemodify(vim.uri_to_fname(file.newUri), ":~:.")
    end
    table.insert(lines, ("  %s %s"):format(op_letter[file.op] or "?", name))
  end
  for _, file in ipairs(result.notCovered or {}) do
    local name = vim.fn.fnamemodify(vim.uri_to_fname(file.uri), ":~:.")
    table.insert(lines, ("  not covered (%s): %s"):format(file.reason, name))
  end
  if result.rewound then
    table.insert(lines, ("  the conversation was cut back by %d entries"):format(result.rewound))
  end
  return table.concat(lines, "\n")
end

--- :AgentUndo [turn]: reverts the latest turn that changed files (or `turn` and every later
--- one), keeping the user's edits since; with !, also cuts the conversation back (rewind).
function M.undo(opts)
  local turn = tonumber(opts and opts.args or "")
  if opts and opts.args ~= "" and not turn then
    vim.notify("agentls: :AgentUndo takes a turn number", vim.log.levels.ERROR)
    return
  end
  with_existing_session(function(c, s)
    local args = { sessionId = s.id, turnId = turn, rewind = opts and opts.bang or nil }
    rpc.exec(c, C.undo_turn, args, function(err, result)
      if not err then
        vim.notify(reverted_text("undid", result), vim.log.levels.INFO)
      end
    end)
  end)
end

--- :AgentRedo: re-applies the turns the latest undo reverted.
function M.redo()
  with_existing_session(function(c, s)
    rpc.exec(c, C.redo_turn, { sessionId = s.id }, function(err, result)
      if not err then
        vim.notify(reverted_text("redid", result), vim.log.levels.INFO)
      end
    end)
  end)
end

--- :AgentCompact: summarise the session's older messages (after the running turn).
function M.compact()
  with_existing_session(function(c, s)
    rpc.exec(c, C.compact, { sessionId = s.id }, function(err)
      if not err then
        vim.notify("agentls: compacting the conversation…", vim.log.levels.INFO)
      end
    end)
  end)
end

--- :AgentStatus: the session's state and how full its context window is.
function M.status()
  local line = state.status()
  if line == "" then
    vim.notify("agentls: no session yet (:Agent starts one)", vim.log.levels.INFO)
    return
  end
  local percent, ctx = state.context()
  if percent then
    line = line
      .. ("\ncontext: ~%d of %d tokens (%d%%), estimate calibrated ×%.2f by the provider's counts"):format(
        ctx.estimateTokens or 0,
        ctx.contextWindow,
        percent,
        ctx.calibration or 1
      )
  end
  vim.notify(line, vim.log.levels.INFO)
end

function M.new()
  local c = client.current()
  if c then
    start_session(c, function(s)
      chat.note({ "", ("── new session %s (%s) ──"):format(s.id:sub(1, 8), s.model or "?") })
    end)
  end
end

--- :AgentSessions: pick an open or stored session and make it the current one.
function M.sessions()
  local c = client.current()
  if not c then
    return
  end
  rpc.exec(c, C.list_sessions, {}, function(err, res)
    if err or not res then
      return
    end
    local sessions = res.sessions or {}
    if #sessions == 0 then
      vim.notify("agentls: no sessions", vim.log.levels.INFO)
      return
    end
    vim.ui.select(sessions, {
      prompt = "agentls sessions",
      kind = "agentls.session",
      format_item = function(s)
        local title = s.title ~= vim.NIL and s.title or nil
        return ("%s  %s  %s  %s"):format(
          s.sessionId:sub(1, 8),
          s.open and (s.state or "open") or (s.created or "stored"),
          s.model or "",
          title or ""
        )
      end,
    }, function(choice)
      if not choice then
        return
      end
      require("agentls.resume").reopen(c, choice.sessionId, {
        header = function(r)
          if config.get().chat.auto_open then
            chat.open(false)
          end
          return { "", ("── resumed session %s (%s) ──"):format(r.sessionId:sub(1, 8), r.model or "?") }
        end,
      })
    end)
  end)
end

local function configure(key, value)
  with_session(function(c, s)
    rpc.exec(c, C.configure, { sessionId = s.id, [key] = value }, function(err, res)
      if not err and res then
        state.update_session(c.id, { model = res.model or s.model })
        vim.notify(("agentls: %s set to %s"):format(key, value), vim.log.levels.INFO)
      end
    end)
  end)
end

local function choose(opts, key, choices, prompt)
  if opts.args ~= "" then
    return configure(key, opts.args)
  end
  vim.ui.select(choices, { prompt = prompt }, function(choice)
    if choice then
      configure(key, choice)
    end
  end)
end

function M.model(opts)
  if opts.args ~= "" then
    return configure("model", opts.args)
  end
  local c = client.current()
  local s = c and state.session(c.id)
  vim.ui.input({ prompt = "Model: ", default = s and s.model or "" }, function(model)
    if model and model ~= "" then
      configure("model", model)
    end
  end)
end

function M.effort(opts)
  choose(opts, "reasoningEffort", protocol.efforts, "Reasoning effort")
end

function M.approval(opts)
  choose(opts, "approval", protocol.approvals, "Approval mode")
end

function M.chat()
  chat.toggle()
end

-- Review commands act on the review tab (review.lua).
function M.review()
  require("agentls.review").reopen()
end

function M.accept()
  require("agentls.review").accept()
end

function M.reject(opts)
  require("agentls.review").reject(opts.args ~= "" and opts.args or nil)
end

function M.accept_hunk()
  require("agentls.review").accept_hunk()
end

function M.reject_hunk(opts)
  require("agentls.review").reject_hunk(opts.args ~= "" and opts.args or nil)
end

--- :AgentRestart: restarts the current project's server and reopens its session.
function M.restart()
  client.restart()
end

--- :AgentTrust: trusts the current project's folder (its .agentls.toml applies in full).
function M.trust()
  local c = client.current()
  if c then
    require("agentls.trust").trust_root(c)
  end
end

--- The data directory the server stores transcripts in.
-- :AgentMcp: the MCP servers a session of the current project uses (`agentls.mcpServers`), through
-- vim.ui.select; a picked server shows its tools or restarts (`agentls.mcpRestart`).
-- `:AgentMcp restart NAME` restarts one directly.
local function mcp_restart(c, root_uri, name)
  rpc.exec(c, C.mcp_restart, { name = name, rootUri = root_uri }, function(err, res)
    if err or not res then
      return
    end
    vim.notify(("agentls: the MCP server %s is %s"):format(res.name, protocol.mcp_state_text(res.state)), vim.log.levels.INFO)
  end)
end

local function mcp_server_text(s)
  local tools = s.state == "running" and ("  %d tools"):format(#(s.tools or {})) or ""
  local last_error = s.lastError ~= nil and s.lastError ~= vim.NIL and ("  last error: " .. s.lastError) or ""
  return ("%s  %s%s%s"):format(s.name, protocol.mcp_state_text(s.state), tools, last_error)
end

function M.mcp(opts)
  local c = client.current()
  if not c then
    return
  end
  local root_uri = vim.uri_from_fname(c.root_dir)
  local args = opts and opts.fargs or {}
  if args[1] == "restart" and args[2] then
    return mcp_restart(c, root_uri, args[2])
  end
  rpc.exec(c, C.mcp_servers, { rootUri = root_uri }, function(err, res)
    if err or not res then
      return
    end
    local servers = res.servers or {}
    if #servers == 0 then
      vim.notify("agentls: no MCP servers are configured (.mcp.json, or [mcp_servers] in the agentls config)", vim.log.levels.INFO)
      return
    end
    vim.ui.select(servers, { prompt = "agentls MCP servers", kind = "agentls.mcp_server", format_item = mcp_server_text }, function(server)
      if not server then
        return
      end
      local actions = {}
      if server.state == "running" or server.state == "failed" or server.state == "starting" then
        table.insert(actions, { label = "Restart", restart = true })
      end
      for _, t in ipairs(server.tools or {}) do
        table.insert(actions, { label = ("tool %s (%s)%s"):format(t.name, t.toolName, t.readOnlyHint and ", read-only" or "") })
      end
      if #actions == 0 then
        vim.notify("agentls: " .. mcp_server_text(server), vim.log.levels.INFO)
        return
      end
      vim.ui.select(actions, {
        prompt = ("MCP server %s: %s"):format(server.name, protocol.mcp_state_text(server.state)),
        kind = "agentls.mcp_action",
        format_item = function(a)
          return a.label
        end,
      }, function(action)
        if action and action.restart then
          mcp_restart(c, root_uri, server.name)
        end
      end)
    end)
  end)
end

function M.data_dir()
  local env = config.get().cmd_env or {}
  local dir = env.AGENTLS_DATA_DIR or vim.env.AGENTLS_DATA_DIR
  if dir and dir ~= "" then
    return dir
  end
  local base = vim.env.XDG_DATA_HOME
  if not base or base == "" then
    base = vim.fs.joinpath(vim.env.HOME or "~", ".local", "share")
  end
  return vim.fs.joinpath(base, "agentls")
end

--- :AgentTranscript: the current session's transcript file, read-only, in a new tab.
function M.transcript()
  with_existing_session(function(_, s)
    local path = vim.fs.joinpath(M.data_dir(), "sessions", s.id .. ".jsonl")
    if vim.fn.filereadable(path) == 0 then
      vim.notify("agentls: no transcript yet at " .. path, vim.log.levels.WARN)
      return
    end
    vim.cmd("tabnew " .. vim.fn.fnameescape(path))
    vim.bo.readonly = true
    vim.bo.modifiable = false
  end)
end

return M
