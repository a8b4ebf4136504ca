-- What the tests share: the workspace, the fake provider (push turns, read the requests it
-- got) and views of the editor's state. Paths come from the environment scripts/test-nvim sets.
local H = {}

H.ws = assert(vim.env.AGENTLS_TEST_WS, "AGENTLS_TEST_WS")
H.requests_file = assert(vim.env.AGENTLS_TEST_REQUESTS, "AGENTLS_TEST_REQUESTS")
H.port = assert(vim.env.AGENTLS_TEST_PORT, "AGENTLS_TEST_PORT")
H.bin = assert(vim.env.AGENTLS_TEST_BIN, "AGENTLS_TEST_BIN")

--- Appends scripted turns to the fake provider (see tests/editors/fake_provider_cli.py).
function H.push(turns)
  local script = [[
import sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:" + sys.argv[1] + "/_push", data=sys.argv[2].encode(), method="POST")
urllib.request.urlopen(req, timeout=5).read()
]]
  local res = vim.system({ "python3", "-c", script, H.port, vim.json.encode(turns) }):wait(10000)
  assert(res.code == 0, "push failed: " .. tostring(res.stderr))
end

--- The request bodies the fake provider got, in order (`file`: another provider's record).
function H.requests(file)
  local out = {}
  for _, line in ipairs(vim.fn.readfile(file or H.requests_file)) do
    -- The provider may be writing the last line right now.
    local ok, body = pcall(vim.json.decode, line)
    if ok then
      table.insert(out, body)
    end
  end
  return out
end

function H.request_text(i)
  local r = H.requests()[i]
  return r and vim.json.encode(r) or ""
end

--- Whether request `i` (1-based) contains `text` (compared as JSON string content).
function H.request_has(i, text)
  local encoded = vim.json.encode(text):sub(2, -2)
  return H.request_text(i):find(encoded, 1, true) ~= nil
end

function H.path(name)
  return vim.fs.joinpath(H.ws, name)
end

function H.disk(name)
  local f = assert(io.open(H.path(name), "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

function H.buf_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
end

function H.chat_text()
  local chat = package.loaded["agentls.chat"]
  if not chat then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false), "\n")
end

--- What the screen shows now (the headless editor keeps its grid): one string per row.
function H.screen()
  vim.cmd("redraw!")
  local rows = {}
  for r = 1, vim.o.lines do
    local cells = {}
    for c = 1, vim.o.columns do
      cells[c] = vim.fn.screenstring(r, c)
    end
    rows[r] = table.concat(cells)
  end
  return table.concat(rows, "\n")
end

--- Redraws every few milliseconds until the returned function is called, as a UI would.
function H.keep_redrawing()
  local timer = vim.uv.new_timer()
  timer:start(5, 5, vim.schedule_wrap(function()
    vim.cmd("redraw")
  end))
  return function()
    timer:stop()
    timer:close()
  end
end

function H.client()
  return vim.lsp.get_clients({ name = "agentls" })[1]
end

--- Replaces vim.ui.select / vim.ui.input with answers picked by `pick(items, opts)` and
--- `answer(opts)`; records what was asked. Returns the record.
function H.stub_ui(pick, answer)
  local asked = { select = {}, input = {} }
  vim.ui.select = function(items, opts, on_choice)
    table.insert(asked.select, { items = items, prompt = opts.prompt })
    vim.schedule(function()
      on_choice(pick(items, opts))
    end)
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(asked.input, opts.prompt)
    vim.schedule(function()
      on_confirm(answer and answer(opts) or nil)
    end)
  end
  return asked
end

--- Picks the select item whose label (format_item) is `label`.
function H.choose(label)
  return function(items, opts)
    for _, item in ipairs(items) do
      local text = opts.format_item and opts.format_item(item) or item
      if text == label then
        return item
      end
    end
  end
end

return H
