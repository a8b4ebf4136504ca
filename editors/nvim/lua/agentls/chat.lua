-- The chat buffer (filetype `agentls`): one append-only transcript of the sessions' events.
-- Events are queued and applied at most once per `chat.flush_ms` (one buffer change per batch),
-- so a fast stream never blocks typing. Folds (reasoning, command output) come from a
-- line → level table that only grows, because lines are only ever appended. A subagent's events
-- (marked `agent`) are whole indented lines (its task, calls, answer, end), each run of one
-- subagent's lines an indented fold of its own; they never stream into the session's text.
local config = require("agentls.config")

local M = {}

local ns = vim.api.nvim_create_namespace("agentls.chat")
local buf ---@type integer?
local queue = {} ---@type table[]
local flush_pending = false
local levels = {} ---@type table<integer, string> 1-based line → foldexpr level
local block ---@type {kind: string, key: string?}? the block streamed text goes into
-- A tool call's line; `running` until its end, `indent` before a subagent's.
local tools = {} ---@type table<string, {row: integer, summary: string, mark: integer, session: string?, indent: string, running: boolean?}>
local shown_session ---@type string?
local queued_session ---@type string? the session of the last queued event
local agent_run ---@type string? the subagent whose fold the last lines opened

local SIGNS = {
  running = { "…", "AgentlsToolRunning" },
  ok = { "✓", "AgentlsToolOk" },
  error = { "✗", "AgentlsToolError" },
  cancelled = { "⊘", "AgentlsToolCancelled" },
  interrupted = { "⊘", "AgentlsToolCancelled" },
}

local function ensure_buf()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "agentls://chat")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "agentls"
  vim.bo[buf].syntax = "markdown"
  vim.bo[buf].modifiable = false
  levels, tools, block, shown_session, queued_session, agent_run = {}, {}, nil, nil, nil, nil
  return buf
end

--- The chat buffer (created on first use).
function M.buf()
  return ensure_buf()
end

--- The fold level of chat line `lnum` (1-based), for 'foldexpr'.
function M.foldexpr(lnum)
  return levels[lnum] or "0"
end

-- Buffer edits, only ever called from flush().

local function line_count()
  return vim.api.nvim_buf_line_count(buf)
end

local function last_line()
  local n = line_count()
  return n - 1, vim.api.nvim_buf_get_lines(buf, n - 1, n, false)[1] or ""
end

local function buffer_is_empty()
  return line_count() == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
end

-- Fold levels are set before the lines exist: Neovim evaluates 'foldexpr' as lines change.

-- Appends text at the end of the buffer; newlines in it start new lines (at fold `level`).
local function append_text(text, level)
  local row, last = last_line()
  local pieces = vim.split(text, "\n", { plain = true })
  if level then
    for l = row + 2, row + #pieces do
      levels[l] = level
    end
  end
  vim.api.nvim_buf_set_text(buf, row, #last, row, #last, pieces)
end

-- Appends whole lines after the last one (which is replaced when it is empty); `fold` gives
-- the fold level of each new line. Returns the 0-based row of the first.
local function append_lines(lines, fold)
  local row, last = last_line()
  local first = last == "" and row or row + 1
  for i = 1, #lines do
    levels[first + i] = fold and fold[i] or nil -- a replaced empty line may have been in a fold
  end
  vim.api.nvim_buf_set_lines(buf, first, row + 1, false, lines)
  return first
end

local function mark(row, group, sign)
  vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
    sign_text = sign,
    sign_hl_group = sign and group or nil,
    line_hl_group = not sign and group or nil,
  })
end

-- Starts a block of streamed text of `kind` ("text", "reasoning", "output") unless it is open.
local function enter_block(kind, key, header)
  if block and block.kind == kind and block.key == key then
    return
  end
  block = { kind = kind, key = key }
  if header then
    local row = append_lines({ header, "" }, { ">1", "1" })
    mark(row, kind == "reasoning" and "AgentlsReasoning" or "AgentlsOutput")
  else
    local _, last = last_line()
    if last ~= "" then
      append_text("\n")
    end
  end
end

local function tool_line(summary, status, duration_ms, detail)
  local label = status
  if duration_ms then
    label = ("%s %d ms"):format(status, duration_ms)
  end
  local line = ("- [%s] %s"):format(label, summary)
  if detail and detail ~= "" then
    line = line .. " — " .. detail
  end
  return line
end

local function first_line(s)
  return (tostring(s or ""):match("^[^\n]*") or ""):sub(1, 200)
end

local render = {}

function render.session(op)
  if shown_session == op.session then
    return
  end
  shown_session = op.session
  block = nil
  if not buffer_is_empty() then
    append_lines({ "", ("── session %s ──"):format(op.session:sub(1, 8)), "" })
  end
end

function render.lines(op)
  block = nil
  local row = append_lines(op.lines, op.fold)
  if op.group then
    for i = 0, #op.lines - 1 do
      mark(row + i, op.group)
    end
  end
end

function render.text(op)
  enter_block("text")
  append_text(table.concat(op.parts))
end

function render.reasoning(op)
  enter_block("reasoning", nil, "> _reasoning_")
  append_text(table.concat(op.parts), "1")
end

function render.output(op)
  local tool = tools[op.call_id]
  enter_block("output", op.call_id, "  ⋮ output of " .. (tool and tool.summary or op.call_id))
  append_text(table.concat(op.parts), "1")
end

function render.tool_start(op)
  block = nil
  local row = append_lines({ tool_line(op.summary, "running") })
  local sign = SIGNS.running
  tools[op.call_id] = {
    row = row,
    summary = op.summary,
    mark = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { sign_text = sign[1], sign_hl_group = sign[2] }),
    session = op.session,
    indent = "",
    running = true,
  }
end

function render.tool_end(op)
  local tool = tools[op.call_id]
  local text = tool_line(op.summary, op.status, op.duration_ms, op.status ~= "ok" and first_line(op.error) or nil)
  local sign = SIGNS[op.status] or SIGNS.error
  if tool then
    tool.running = nil
    vim.api.nvim_buf_set_lines(buf, tool.row, tool.row + 1, false, { text })
    vim.api.nvim_buf_set_extmark(buf, ns, tool.row, 0, { id = tool.mark, sign_text = sign[1], sign_hl_group = sign[2] })
  else
    block = nil
    local row = append_lines({ text })
    vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { sign_text = sign[1], sign_hl_group = sign[2] })
  end
  if block and block.kind == "output" and block.key == op.call_id then
    block = nil
  end
end

-- A subagent's lines: a fold of their own, continued while the same subagent goes on.
function render.agent_lines(op)
  block = nil
  local fold = {}
  for i = 1, #op.lines do
    fold[i] = (i == 1 and agent_run ~= op.key) and ">1" or "1"
  end
  local row = append_lines(op.lines, fold)
  if op.group then
    for i = 0, #op.lines - 1 do
      mark(row + i, op.group)
    end
  end
  if op.call_id then
    local sign = SIGNS.running
    tools[op.key .. "/" .. op.call_id] = {
      row = row,
      summary = op.summary,
      mark = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { sign_text = sign[1], sign_hl_group = sign[2] }),
      session = op.session,
      indent = op.indent,
      running = true,
    }
  end
  agent_run = op.key
end

-- A subagent's call ended: its line (in its fold) shows the outcome.
function render.agent_tool_end(op)
  local tool = tools[op.key .. "/" .. op.call_id]
  if not tool then
    return render.agent_lines({ key = op.key, lines = { op.indent .. tool_line(op.summary, op.status, op.duration_ms) } })
  end
  local detail = op.status ~= "ok" and first_line(op.error) or nil
  local sign = SIGNS[op.status] or SIGNS.error
  tool.running = nil
  vim.api.nvim_buf_set_lines(buf, tool.row, tool.row + 1, false, { op.indent .. tool_line(op.summary, op.status, op.duration_ms, detail) })
  vim.api.nvim_buf_set_extmark(buf, ns, tool.row, 0, { id = tool.mark, sign_text = sign[1], sign_hl_group = sign[2] })
end

-- The server of a session stopped: its calls still running never end.
function render.interrupted(op)
  local sign = SIGNS.interrupted
  for _, tool in pairs(tools) do
    if tool.running and tool.session == op.session then
      tool.running = nil
      vim.api.nvim_buf_set_lines(buf, tool.row, tool.row + 1, false, { tool.indent .. tool_line(tool.summary, "interrupted") })
      vim.api.nvim_buf_set_extmark(buf, ns, tool.row, 0, { id = tool.mark, sign_text = sign[1], sign_hl_group = sign[2] })
    end
  end
end

local function follow_windows(old_last)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= old_last then
      vim.api.nvim_win_set_cursor(win, { line_count(), 0 })
    end
  end
end

--- How many batches were applied and how long they took (the benchmark reports it).
M.stats = { flushes = 0, total_ms = 0, max_ms = 0 }

local function flush()
  local started = vim.uv.hrtime()
  flush_pending = false
  if #queue == 0 then
    return
  end
  ensure_buf()
  local ops = queue
  queue = {}
  local old_last = line_count()
  vim.bo[buf].modifiable = true
  for _, op in ipairs(ops) do
    if op.op ~= "agent_lines" and op.op ~= "agent_tool_end" then
      agent_run = nil
    end
    render[op.op](op)
  end
  vim.bo[buf].modifiable = false
  follow_windows(old_last)
  local ms = (vim.uv.hrtime() - started) / 1e6
  M.stats.flushes = M.stats.flushes + 1
  M.stats.total_ms = M.stats.total_ms + ms
  M.stats.max_ms = math.max(M.stats.max_ms, ms)
end

local last_flush = 0 -- ms (hrtime: the loop's cached time stands still while events run)

local function now_ms()
  return vim.uv.hrtime() / 1e6
end

local function schedule_flush()
  local interval = config.get().chat.flush_ms
  if not flush_pending then
    flush_pending = true
    last_flush = now_ms()
    vim.defer_fn(function()
      last_flush = now_ms()
      flush()
    end, interval)
  elseif now_ms() - last_flush >= 2 * interval and not vim.in_fast_event() then
    -- Events arriving without a pause starve the timer (Neovim runs queued events before
    -- timers): apply the batch from here so the chat keeps up. The timer still fires later.
    last_flush = now_ms()
    flush()
    flush_pending = true
  end
end

local function push(op)
  queue[#queue + 1] = op
  schedule_flush()
end

-- Streamed pieces of one kind are joined into one op until the next flush.
local function push_stream(kind, delta, call_id)
  local last = queue[#queue]
  if last and last.op == kind and last.call_id == call_id then
    last.parts[#last.parts + 1] = delta
    return
  end
  push({ op = kind, parts = { delta }, call_id = call_id })
end

--- Applies what is queued now (tests and benchmarks use it to wait for nothing).
function M.flush()
  flush()
end

--- Lines of notes from the plugin itself (review outcomes, resumed sessions), highlighted with `group`.
function M.note(lines, group)
  push({ op = "lines", lines = type(lines) == "table" and lines or { lines }, group = group })
end

--- The server of `session_id` stopped: the session's calls shown as running are marked interrupted.
function M.interrupted(session_id)
  push({ op = "interrupted", session = session_id })
end

--- Shows a session's conversation (`entries` of `agentls.history`); `folded`: in a closed fold
--- under its header line (after a restart, when the chat above already shows it).
function M.history(session_id, entries, folded)
  local lines = { "", ("── history of session %s ──"):format(session_id:sub(1, 8)) }
  for _, e in ipairs(entries) do
    if e.kind == "user" then
      vim.list_extend(lines, { "", "## You", "" })
      vim.list_extend(lines, vim.split(e.text or "", "\n", { plain = true }))
    elseif e.kind == "assistant" then
      if e.text and e.text ~= "" and e.text ~= vim.NIL then
        vim.list_extend(lines, { "", "## agentls", "" })
        vim.list_extend(lines, vim.split(e.text, "\n", { plain = true }))
      end
      for _, call in ipairs(e.toolCalls or {}) do
        table.insert(lines, "- " .. (call.summary or call.toolName or "tool"))
      end
    elseif e.kind == "tool_result" and e.isError then
      -- The first line says why (also "This call never finished: the agentls server stopped …").
      local why = e.output ~= vim.NIL and first_line(e.output) or ""
      table.insert(lines, ("  ✗ %s failed%s"):format(e.toolName or "tool", why ~= "" and (": " .. why) or ""))
    elseif e.kind == "steering" then
      table.insert(lines, "> steered: " .. (e.text or ""))
    elseif e.kind == "summary" then
      table.insert(lines, ("⟲ earlier conversation (%d messages), as summarised for the model:"):format(e.turnsSummarized or 0))
      vim.list_extend(lines, vim.split(e.text or "", "\n", { plain = true }))
    end
  end
  table.insert(lines, "")
  local fold
  if folded then
    fold = { [2] = ">1" }
    for i = 3, #lines - 1 do
      fold[i] = "1"
    end
  end
  push({ op = "lines", lines = lines, fold = fold })
end

local E = require("agentls.protocol").event

local on = {}
on[E.user_input] = function(d)
  push({ op = "lines", lines = vim.list_extend({ "", "## You", "" }, vim.split(d.content or "", "\n", { plain = true })) })
end
on[E.text_start] = function(d)
  push({ op = "lines", lines = { "", ("## agentls (%s)"):format(d.model or "model"), "", "" } })
end
on[E.text_delta] = function(d)
  push_stream("text", d.delta or "")
end
on[E.reasoning_delta] = function(d)
  push_stream("reasoning", d.delta or "")
end
on[E.tool_start] = function(d, session)
  push({ op = "tool_start", call_id = d.call_id, summary = d.summary or d.tool_name, session = session })
end
on[E.tool_output] = function(d)
  push_stream("output", d.delta or "", d.call_id)
end
on[E.tool_end] = function(d)
  push({
    op = "tool_end",
    call_id = d.call_id,
    summary = d.summary or d.tool_name,
    status = d.status,
    duration_ms = d.duration_ms,
    error = d.error,
  })
end
on[E.steering] = function(d)
  push({ op = "lines", lines = { "", "> steered: " .. first_line(d.content) } })
end
on[E.warning] = function(d)
  push({ op = "lines", lines = { "⚠ warning: " .. first_line(d.message) }, group = "AgentlsWarning" })
end
on[E.error] = function(d)
  push({ op = "lines", lines = { "✗ error: " .. first_line(d.message) }, group = "AgentlsError" })
end
on[E.loop_detection] = function(d)
  push({ op = "lines", lines = { "⚠ " .. first_line(d.message) }, group = "AgentlsWarning" })
end
--- What a `turn_limit` event says.
function M.limit_text(d)
  if d.round then
    return ("⚠ turn limit: stopped after %d tool rounds for this input"):format(d.round)
  elseif d.steps then
    return ("⚠ step limit: stopped after %d model requests for this input"):format(d.steps)
  elseif d.time_limit_secs then
    return ("⚠ time limit: stopped after %d s for this input"):format(d.time_limit_secs)
  end
  return ("⚠ turn limit: the session reached %s model turns"):format(tostring(d.total_turns or "its"))
end

--- What a `compaction` event says.
function M.compaction_text(d)
  local why = ({ manual = "as asked", auto = "the context window was filling up", overflow = "the provider found it too long" })[d.trigger]
    or tostring(d.trigger)
  return ("⟲ compacted the conversation (%s): %d earlier messages summarised by %s, %d kept; ~%d → ~%d tokens"):format(
    why,
    d.messages_summarized or 0,
    tostring(d.model),
    d.messages_kept or 0,
    d.tokens_before or 0,
    d.tokens_after or 0
  )
end

on[E.turn_limit] = function(d)
  push({ op = "lines", lines = { M.limit_text(d) }, group = "AgentlsWarning" })
end
on[E.compaction] = function(d)
  push({ op = "lines", lines = { "", M.compaction_text(d) } })
end
on[E.processing_end] = function(d)
  if d.reason and d.reason ~= "completed" then
    push({ op = "lines", lines = { ("_(%s)_"):format(d.reason) } })
  end
end
on[E.config_changed] = function(d)
  push({
    op = "lines",
    lines = {
      ("_model %s · effort %s · approval %s_"):format(
        tostring(d.model),
        tostring(d.reasoning_effort or "default"),
        tostring(d.approval)
      ),
    },
  })
end
on[E.project_docs_reloaded] = function(d)
  push({ op = "lines", lines = { "_" .. first_line(d.message) .. "_" } })
end

-- A subagent's event as indented lines ("  " per level: its session id is its parent's plus
-- `-agent-N`).
local function on_agent(agent, kind, d, session)
  local indent = ("  "):rep(1 + select(2, tostring(agent.parentSessionId or ""):gsub("%-agent%-", "")))
  local id, key = agent.agentId or "agent", agent.sessionId or agent.agentId or "agent"
  local function lines(list, group)
    push({ op = "agent_lines", key = key, lines = list, group = group })
  end
  if kind == E.user_input then
    lines({ ("%s▸ %s: %s"):format(indent, id, first_line(d.content)) })
  elseif kind == E.tool_start then
    local summary = d.summary or d.tool_name
    push({
      op = "agent_lines",
      key = key,
      call_id = d.call_id,
      summary = summary,
      indent = indent .. "  ",
      session = session,
      lines = { indent .. "  " .. tool_line(summary, "running") },
    })
  elseif kind == E.tool_end then
    push({
      op = "agent_tool_end",
      key = key,
      indent = indent .. "  ",
      call_id = d.call_id,
      summary = d.summary or d.tool_name,
      status = d.status,
      duration_ms = d.duration_ms,
      error = d.error,
    })
  elseif kind == E.text_end and d.text and d.text ~= "" then
    local out = {}
    for _, l in ipairs(vim.split(d.text, "\n", { plain = true })) do
      out[#out + 1] = indent .. "  " .. l
    end
    lines(out)
  elseif kind == E.processing_end then
    lines({ ("%s%s %s"):format(indent, id, d.reason or "done") })
  elseif kind == E.error then
    lines({ ("%s✗ %s error: %s"):format(indent, id, first_line(d.message)) }, "AgentlsError")
  elseif kind == E.session_end then
    lines({ ("%s%s closed"):format(indent, id) })
  end
end

--- Renders one `agentls/event` (queued; applied on the next flush).
function M.on_event(event)
  if event.agent then
    if event.sessionId and event.sessionId ~= queued_session then
      queued_session = event.sessionId
      push({ op = "session", session = event.sessionId })
    end
    return on_agent(event.agent, event.kind, event.data or {}, event.sessionId)
  end
  local handler = on[event.kind]
  if handler then
    if event.sessionId and event.sessionId ~= queued_session then
      queued_session = event.sessionId
      push({ op = "session", session = event.sessionId })
    end
    handler(event.data or {}, event.sessionId)
  end
end

-- Windows

local function chat_win()
  for _, win in ipairs(vim.fn.win_findbuf(ensure_buf())) do
    return win
  end
end

local function setup_window(win)
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "yes:1"
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'agentls.chat'.foldexpr(v:lnum)"
  wo.foldlevel = 0
  wo.foldenable = true
end

local function size(total, value)
  return value < 1 and math.floor(total * value) or value
end

--- Shows the chat (in a split or a float, by `chat.layout`); keeps the current window.
function M.open(focus)
  local win = chat_win()
  if not win then
    local o = config.get().chat
    local prev = vim.api.nvim_get_current_win()
    if o.layout == "float" then
      local w, h = size(vim.o.columns, o.float.width), size(vim.o.lines, o.float.height)
      win = vim.api.nvim_open_win(buf, true, {
        relative = "editor",
        width = w,
        height = h,
        row = math.floor((vim.o.lines - h) / 2),
        col = math.floor((vim.o.columns - w) / 2),
        border = o.float.border,
        title = " agentls ",
      })
    else
      local vertical = o.position == "right" or o.position == "left"
      local mods = (o.position == "right" or o.position == "bottom") and "botright" or "topleft"
      local n = size(vertical and vim.o.columns or vim.o.lines, o.size)
      vim.cmd(("%s %d%s"):format(mods, n, vertical and "vsplit" or "split"))
      win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(win, buf)
    end
    setup_window(win)
    vim.api.nvim_win_set_cursor(win, { line_count(), 0 })
    if not focus then
      vim.api.nvim_set_current_win(prev)
    end
  elseif focus then
    vim.api.nvim_set_current_win(win)
  end
  return win
end

function M.close()
  local win = chat_win()
  while win do
    if #vim.api.nvim_list_wins() == 1 then
      vim.cmd("enew")
    else
      vim.api.nvim_win_close(win, true)
    end
    win = chat_win()
  end
end

function M.toggle()
  if chat_win() then
    M.close()
  else
    M.open(true)
  end
end

function M.is_open()
  return chat_win() ~= nil
end

return M
