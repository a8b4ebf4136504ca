-- The chat buffer (filetype `agentls`): renders the chat model (chat_model.lua) of the sessions'
-- events. What arrives (events, the plugin's notes) is queued and folded into the model at most
-- once per `chat.flush_ms`, then the lines that changed are written in one buffer change, so a
-- fast stream never blocks typing; streamed pieces that arrive together are joined first. Folds
-- (reasoning, command output, a subagent's lines) come from the model's fold levels.
local chat_model = require("agentls.chat_model")
local config = require("agentls.config")
local protocol = require("agentls.protocol")

local M = {}

local ns = vim.api.nvim_create_namespace("agentls.chat")
local buf ---@type integer?
local model = chat_model.new()
-- What the next flush folds into the model, in order: {event, parts?} (parts: the deltas joined
-- into it), {note, group}, {interrupted} or {history, entries, folded}.
local queue = {} ---@type table[]
local flush_pending = false

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
  model = chat_model.new()
  return buf
end

--- The chat buffer (created on first use).
function M.buf()
  return ensure_buf()
end

--- The fold level of chat line `lnum` (1-based), for 'foldexpr'.
function M.foldexpr(lnum)
  return model.levels[lnum] or "0"
end

local function line_count()
  return vim.api.nvim_buf_line_count(buf)
end

-- Writes the model's changed lines (`changed`, sorted) into the buffer, with their marks.
-- Fold levels need no writing: 'foldexpr' reads them from the model as the lines change.
-- A rewritten line's marks are cleared before it is written (a replaced line's marks would move
-- below it) and set again after.
local function render(changed)
  local count, n = line_count(), #model.lines
  -- The tail: from the last line when it changed (streamed text goes on), else after it.
  local tail = count + 1
  for _, l in ipairs(changed) do
    if l == count then
      tail = count
    end
  end
  for _, l in ipairs(changed) do
    if l >= tail then
      break
    end
    vim.api.nvim_buf_clear_namespace(buf, ns, l - 1, l)
    vim.api.nvim_buf_set_lines(buf, l - 1, l, false, { model.lines[l] })
  end
  if n >= tail then
    local written = {}
    for l = tail, n do
      written[#written + 1] = model.lines[l]
    end
    vim.api.nvim_buf_clear_namespace(buf, ns, tail - 1, -1)
    vim.api.nvim_buf_set_lines(buf, tail - 1, count, false, written)
  end
  for _, l in ipairs(changed) do
    local group, sign = model.highlights[l], model.signs[l]
    if group then
      vim.api.nvim_buf_set_extmark(buf, ns, l - 1, 0, { line_hl_group = group })
    end
    if sign then
      vim.api.nvim_buf_set_extmark(buf, ns, l - 1, 0, { sign_text = sign[1], sign_hl_group = sign[2] })
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

local function apply(item)
  if item.event then
    local e = item.event
    if item.parts then
      e = { sessionId = e.sessionId, kind = e.kind, data = { call_id = e.data.call_id, delta = table.concat(item.parts) } }
    end
    model:event(e)
  elseif item.note then
    model:note(item.note, item.group)
  elseif item.interrupted then
    model:interrupted(item.interrupted)
  elseif item.history then
    model:history(item.history, item.entries, item.folded, item.undone)
  end
end

local function flush()
  local started = vim.uv.hrtime()
  flush_pending = false
  if #queue == 0 then
    return
  end
  ensure_buf()
  local items = queue
  queue = {}
  for _, item in ipairs(items) do
    apply(item)
  end
  local old_last = line_count()
  vim.bo[buf].modifiable = true
  render(model:take_changes())
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

local function push(item)
  queue[#queue + 1] = item
  schedule_flush()
end

-- Streamed pieces: one session's deltas of one kind (and call) are joined until the next flush.
local STREAMED = {
  [protocol.event.text_delta] = true,
  [protocol.event.reasoning_delta] = true,
  [protocol.event.tool_output] = true,
}

--- Applies what is queued now (tests and benchmarks use it to wait for nothing).
function M.flush()
  flush()
end

--- Lines of notes from the plugin itself (review outcomes, resumed sessions), highlighted with `group`.
function M.note(lines, group)
  push({ note = type(lines) == "table" and lines or { lines }, group = group })
end

--- The server of `session_id` stopped: the session's calls shown as running are marked interrupted.
function M.interrupted(session_id)
  push({ interrupted = session_id })
end

--- Shows a session's conversation (`entries` of `agentls.history`); `folded`: in a closed fold
--- under its header line (after a restart, when the chat above already shows it); `undone`:
--- the turns undone now.
function M.history(session_id, entries, folded, undone)
  push({ history = session_id, entries = entries, folded = folded, undone = undone })
end

--- Shows one `agentls/event` (queued; folded into the chat on the next flush).
function M.on_event(event)
  if STREAMED[event.kind] and not event.agent then
    local last = queue[#queue]
    local d = event.data or {}
    local joined = last and last.parts and last.event
    if joined and joined.kind == event.kind and joined.sessionId == event.sessionId and joined.data.call_id == d.call_id then
      last.parts[#last.parts + 1] = d.delta or ""
      return
    end
    return push({ event = { sessionId = event.sessionId, kind = event.kind, data = d }, parts = { d.delta or "" } })
  end
  push({ event = event })
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
