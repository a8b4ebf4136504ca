-- The chat benchmark, run inside a real terminal UI (scripts/bench-nvim starts it in tmux):
-- the plugin's client gets 10,000 `assistant_text_delta` events a second for 10 s from
-- stream_server.py; measured: whether the chat holds exactly the streamed text, the longest
-- main-loop stall (gap between ticks of a 2 ms timer), and how long a keypress-sized piece of
-- work waits for the main loop (vim.schedule latency, sampled every 10 ms).
local out_path = assert(vim.env.AGENTLS_BENCH_OUT)
local rate, seconds = tonumber(vim.env.AGENTLS_BENCH_RATE), tonumber(vim.env.AGENTLS_BENCH_SECONDS)
local uv = vim.uv

local function finish(result)
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(result))
  f:close()
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

  -- Main-loop probes.
  local max_gap, last_tick, ticks, stalls = 0, uv.hrtime(), 0, {}
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
    ticks = ticks + 1
  end)
  local latencies = {}
  local probe = uv.new_timer()
  local scratch = vim.api.nvim_create_buf(false, true)
  probe:start(10, 10, function()
    local queued = uv.hrtime()
    vim.schedule(function()
      -- What a keystroke costs: one character typed into a buffer.
      vim.api.nvim_buf_set_text(scratch, 0, 0, 0, 0, { "x" })
      table.insert(latencies, (uv.hrtime() - queued) / 1e6)
    end)
  end)

  local started = uv.hrtime()
  local usage0 = uv.getrusage()
  vim.cmd("Agent go")
  local chat = require("agentls.chat")
  local done = vim.wait((seconds + 60) * 1000, function()
    local buf = chat.buf()
    local last = vim.api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ""
    return last:find("<<end>>", 1, true) ~= nil
  end, 5)
  local elapsed = (uv.hrtime() - started) / 1e9
  local usage1 = uv.getrusage()
  local function cpu(u)
    return u.utime.sec + u.utime.usec / 1e6 + u.stime.sec + u.stime.usec / 1e6
  end
  tick:stop()
  probe:stop()
  vim.wait(100)

  -- The streamed text as the server sent it, and as the chat holds it.
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
  table.sort(latencies)
  local function pct(p)
    return latencies[math.max(1, math.ceil(#latencies * p))] or 0
  end
  finish({
    done = done,
    identical = got == expected,
    expected_bytes = #expected,
    got_bytes = #got,
    deltas = total,
    elapsed_s = elapsed,
    cpu_s = cpu(usage1) - cpu(usage0),
    max_stall_ms = max_gap,
    timer_ticks = ticks,
    stalls_over_50ms = stalls,
    schedule_latency_ms = { p50 = pct(0.5), p99 = pct(0.99), max = pct(1.0), samples = #latencies },
    chat_lines = #lines,
    chat_visible = require("agentls.chat").is_open(),
    flush = require("agentls.chat").stats,
  })
end)
if not ok then
  finish({ error = tostring(err) })
end
