-- The chat benchmark, run inside a real terminal UI (scripts/bench-nvim starts it in tmux):
-- the plugin's client gets RATE `assistant_text_delta` events a second for SECONDS s from
-- stream_server.py while the user types into another window (keys sent through tmux by
-- type_keys.py). Measured: whether the chat holds exactly the streamed text; the time from a
-- key reaching the terminal to its character being inserted; the longest gap between ticks of
-- a 2 ms timer (main-loop stall). With AGENTLS_BENCH_CONTROL=1 nothing is streamed (the
-- machine's own noise). The editor stays in its normal loop (no vim.wait) so keys are handled
-- as a user's are.
local out_path = assert(vim.env.AGENTLS_BENCH_OUT)
local rate, seconds = tonumber(vim.env.AGENTLS_BENCH_RATE), tonumber(vim.env.AGENTLS_BENCH_SECONDS)
local control = vim.env.AGENTLS_BENCH_CONTROL == "1"
local uv = vim.uv

local function cpu()
  local u = uv.getrusage()
  return u.utime.sec + u.utime.usec / 1e6 + u.stime.sec + u.stime.usec / 1e6
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function fail(err)
  write(out_path, vim.json.encode({ error = tostring(err) }))
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  vim.cmd.edit(vim.env.AGENTLS_BENCH_FILE)
  assert(
    vim.wait(10000, function()
      local c = vim.lsp.get_clients({ name = "agentls" })[1]
      return c and c.initialized
    end, 10),
    "the client did not start"
  )
  local chat = require("agentls.chat")
  chat.open(false)
  -- Time spent in the plugin's event handler (the rest of the CPU time is Neovim's LSP client:
  -- reading, JSON decoding, scheduling) and in applying batches (chat.stats).
  local client = vim.lsp.get_clients({ name = "agentls" })[1]
  local handler_ns = 0
  local handler = client.handlers["agentls/event"]
  client.handlers["agentls/event"] = function(...)
    local t = uv.hrtime()
    handler(...)
    handler_ns = handler_ns + (uv.hrtime() - t)
  end

  -- Keys typed into the file's window, and main-loop ticks.
  local typed = {}
  vim.api.nvim_create_autocmd("InsertCharPre", {
    callback = function()
      typed[#typed + 1] = uv.hrtime()
    end,
  })
  local max_gap, last_tick, stalls = 0, uv.hrtime(), {}
  local t0 = uv.hrtime()
  local tick = uv.new_timer()
  tick:start(2, 2, function()
    local now = uv.hrtime()
    local gap = (now - last_tick) / 1e6
    max_gap = math.max(max_gap, gap)
    if gap > 50 then
      table.insert(stalls, { at_s = (last_tick - t0) / 1e9, ms = gap })
    end
    last_tick = now
  end)

  local started, cpu0 = uv.hrtime(), cpu()
  local function finish(extra)
    tick:stop()
    local lines = vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false)
    local result = vim.tbl_extend("force", {
      control = control,
      elapsed_s = (uv.hrtime() - started) / 1e9,
      cpu_s = cpu() - cpu0,
      max_stall_ms = max_gap,
      stalls_over_50ms = stalls,
      typed_ns = typed,
      chat_lines = #lines,
      chat_visible = chat.is_open(),
      flush = chat.stats,
      handler_s = handler_ns / 1e9,
    }, extra or {})
    write(out_path, vim.json.encode(result))
    vim.cmd("qa!")
  end

  local function check_text()
    local total = math.floor(rate * seconds)
    local parts = {}
    for i = 0, total - 1 do
      parts[#parts + 1] = i == total - 1 and "<<end>>" or ("w" .. i .. (i % 50 == 49 and "\n" or " "))
    end
    local expected = table.concat(parts)
    local lines = vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false)
    local header
    for i, l in ipairs(lines) do
      if l:find("^## agentls") then
        header = i
      end
    end
    local got = header and table.concat(vim.list_slice(lines, header + 2), "\n") or ""
    return { deltas = total, identical = got == expected, expected_bytes = #expected, got_bytes = #got }
  end

  local deadline = uv.hrtime() + (seconds + 60) * 1e9
  local poll = uv.new_timer()
  local stream_done = false
  poll:start(50, 50, vim.schedule_wrap(function()
    if stream_done then
      return
    end
    -- The typist says when it is done (it starts and stops on its own clock).
    local typing_done = uv.fs_stat(out_path .. ".done") ~= nil
    if control then
      if typing_done or uv.hrtime() > deadline then
        stream_done = true
        poll:stop()
        finish()
      end
      return
    end
    local last = vim.api.nvim_buf_get_lines(chat.buf(), -2, -1, false)[1] or ""
    if (last:find("<<end>>", 1, true) and typing_done) or uv.hrtime() > deadline then
      stream_done = true
      poll:stop()
      finish(vim.tbl_extend("force", check_text(), { done = last:find("<<end>>", 1, true) ~= nil }))
    end
  end))

  if not control then
    vim.cmd("Agent go")
  end
  vim.api.nvim_create_autocmd("InsertEnter", {
    once = true,
    callback = function()
      write(out_path .. ".ready", "")
    end,
  })
  vim.cmd("startinsert")
end)
if not ok then
  fail(err)
end
