-- Commands to the server on their own (rpc.lua, a stand-in client): nothing waits for a client
-- that is still initializing; its commands are queued and sent in order once it is up, and
-- dropped with one message when it stops or does not come up in time.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h"))
local rpc = require("agentls.rpc")

local messages = {}
vim.notify = function(msg, level)
  table.insert(messages, { msg = msg, level = level })
end

local next_id = 900
-- A client as vim.lsp has it, answering every command with {sessionId = <the command>, extra = 1}.
local function fake_client(initialized)
  next_id = next_id + 1
  local c = { id = next_id, initialized = initialized, sent = {}, stopped = false }
  function c:is_stopped()
    return self.stopped
  end
  function c:request(method, params, handler)
    table.insert(self.sent, { method = method, command = params.command, arguments = params.arguments })
    handler(nil, { sessionId = params.command, extra = 1 })
  end
  return c
end

local function commands(c)
  return vim.tbl_map(function(s)
    return s.command
  end, c.sent)
end

T.test("a command to a client that is up is sent at once, as workspace/executeCommand with one object", function()
  local c = fake_client(true)
  local answers = {}
  rpc.exec(c, "agentls.newSession", { rootUri = "file:///w" }, function(err, res)
    table.insert(answers, { err = err, res = res })
  end)
  rpc.exec(c, "agentls.listSessions", {})
  T.eq(c.sent, {
    { method = "workspace/executeCommand", command = "agentls.newSession", arguments = { { rootUri = "file:///w" } } },
    { method = "workspace/executeCommand", command = "agentls.listSessions", arguments = { vim.empty_dict() } },
  }, "sent")
  T.eq(answers, { { res = { sessionId = "agentls.newSession" } } }, "the answer, with the fields protocol.lua declares")
end)

T.test("an argument protocol.lua does not declare is a programming error, and nothing is sent", function()
  local c = fake_client(true)
  local ok, err = pcall(rpc.exec, c, "agentls.prompt", { sessionId = "s1", text = "hi", context = { uri = "file:///w/a", line = 3 } })
  T.eq(ok, false, "an error")
  T.contains(err, "protocol.lua declares no argument `context.line` of agentls.prompt")
  ok, err = pcall(rpc.exec, c, "agentls.resolveReview", { reviewId = "r", decision = "accept", files = { { uri = "u", hunks = {} } } })
  T.contains(err, "`files[0].hunks`", "inside a list")
  ok, err = pcall(rpc.exec, c, "agentls.unknown", {})
  T.contains(err, "agentls.unknown is not a command of protocol.lua")
  T.eq(c.sent, {}, "nothing sent")
end)

T.test("a command to a client still initializing returns at once and is sent, in order, once it is up", function()
  local c = fake_client(false)
  local answered = {}
  local started = vim.uv.hrtime()
  rpc.exec(c, "agentls.newSession", { rootUri = "file:///w" }, function()
    table.insert(answered, "agentls.newSession")
  end)
  rpc.exec(c, "agentls.prompt", { text = "hello" }, function()
    table.insert(answered, "agentls.prompt")
  end)
  T.truthy((vim.uv.hrtime() - started) / 1e6 < 50, "exec returned at once")
  T.eq(c.sent, {}, "nothing sent before the client is up")
  T.eq(rpc.queued(c.id), 2, "both queued")
  c.initialized = true
  rpc.ready(c)
  -- Sent after vim.lsp opened the buffers attached meanwhile (scheduled), and a command issued
  -- in between still goes after the queued ones.
  rpc.exec(c, "agentls.steer", { text = "later" })
  T.eq(c.sent, {}, "not inside the client's on_init")
  T.wait(1000, function()
    return #c.sent == 3
  end, "the queued commands to be sent")
  T.eq(commands(c), { "agentls.newSession", "agentls.prompt", "agentls.steer" }, "in the order they were issued")
  T.eq(answered, { "agentls.newSession", "agentls.prompt" }, "the callbacks got their answers")
  T.eq(rpc.queued(c.id), 0, "nothing left queued")
  T.eq(messages, {}, "no message")
end)

T.test("a client that stops before it is up drops its queue with one message; nothing is sent", function()
  local c = fake_client(false)
  local called = false
  rpc.exec(c, "agentls.newSession", {}, function()
    called = true
  end)
  rpc.exec(c, "agentls.listSessions", {})
  c.stopped = true
  rpc.stopped(c.id)
  T.eq(messages, {
    { msg = "agentls: the server is not running; not sent: agentls.newSession, agentls.listSessions", level = vim.log.levels.ERROR },
  }, "one message naming what was not sent")
  T.eq(called, false, "no callback")
  rpc.ready(c)
  vim.wait(50)
  T.eq(c.sent, {}, "nothing sent")
  messages = {}
  rpc.exec(c, "agentls.cancel", { sessionId = "s1" })
  T.eq(messages, { { msg = "agentls: the server is not running", level = vim.log.levels.ERROR } }, "a stopped client")
  T.eq(c.sent, {}, "still nothing sent")
  messages = {}
end)

T.test("a client that is not up in time drops its queue with a message", function()
  rpc.start_timeout_ms = 100
  local c = fake_client(false)
  rpc.exec(c, "agentls.newSession", {})
  T.wait(2000, function()
    return #messages > 0
  end, "the message")
  T.eq(messages, {
    { msg = "agentls: the server did not start within 0.1 s; not sent: agentls.newSession", level = vim.log.levels.ERROR },
  }, "the message")
  c.initialized = true
  rpc.ready(c)
  vim.wait(50)
  T.eq(c.sent, {}, "what was dropped is not sent later")
  rpc.start_timeout_ms = 10000
end)

return T.run()
