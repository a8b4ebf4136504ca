-- When the server dies (issue 30), on Neovim 0.11 with the real plugin, server and fake
-- provider: the server is SIGKILLed mid-turn, the plugin restarts it (at most 3 times within 3
-- minutes), reopens the session with its history and says so in the chat; a review or a
-- permission question of the dead server is dropped and nothing of it reaches the new one; a
-- stop the user asked for is not a crash.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local H = dofile(vim.env.AGENTLS_TEST_DIR .. "/helpers.lua")

vim.o.columns, vim.o.lines = 180, 50

local state = require("agentls.state")
local session_id ---@type string the session every test expects back

-- What the plugin sends and says: every command (rpc.exec) and every vim.notify message.
local sent, notified = {}, {}
do
  local rpc = require("agentls.rpc")
  local exec = rpc.exec
  rpc.exec = function(c, command, args, callback)
    table.insert(sent, { command = command, args = args })
    return exec(c, command, args, callback)
  end
  local notify = vim.notify
  vim.notify = function(msg, level, opts)
    table.insert(notified, msg)
    return notify(msg, level, opts)
  end
end

local function commands_sent(name, from)
  local n = 0
  for i = from or 1, #sent do
    if sent[i].command == name then
      n = n + 1
    end
  end
  return n
end

local function ws_client()
  for _, c in ipairs(vim.lsp.get_clients({ name = "agentls" })) do
    if c.root_dir == H.ws and not c:is_stopped() then
      return c
    end
  end
end

-- The chat after the first occurrence of `marker` ("" when it is not there yet).
local function chat_after(marker)
  local text = H.chat_text()
  local at = text:find(marker, 1, true)
  return at and text:sub(at) or ""
end

local function kill(c)
  T.truthy(c.rpc.pid, "the transport knows the server's pid")
  T.eq(vim.uv.kill(c.rpc.pid, "sigkill"), 0, "SIGKILL sent")
end

local function count(text)
  return select(2, H.chat_text():gsub(vim.pesc(text), ""))
end

local function was_notified(text)
  for _, msg in ipairs(notified) do
    if msg:find(text, 1, true) then
      return true
    end
  end
  return false
end

-- Runs `action`, then waits for a server other than `old` to be up and the chat to say (once
-- more) that the session was reopened; returns the new client.
local function reopened_after(action, old, what)
  local line = ("agentls %s; session %s reopened"):format(what, session_id:sub(1, 8))
  local seen = count(line)
  action()
  T.wait(15000, function()
    local c = ws_client()
    return c and c.id ~= old and c.initialized and count(line) > seen
  end, "a new server and the chat's line: " .. line .. "\n" .. H.chat_text():sub(-1500))
  local c = ws_client()
  T.wait(5000, function()
    local s = state.session(c.id)
    return s and s.id == session_id
  end, "the session to be the new client's")
  return c
end

T.test("SIGKILL mid-turn: the server is restarted and the session reopened with its history", function()
  vim.cmd.edit(H.path("notes.txt"))
  local notes = vim.api.nvim_get_current_buf()
  T.wait(10000, function()
    local c = ws_client()
    return c and c.initialized
  end, "the client")
  H.stub_ui(H.choose("Allow once"))
  H.push({ { { text = "noted, the green gate" } } })
  vim.cmd("Agent remember the green gate")
  T.wait(10000, function()
    return H.chat_text():find("noted, the green gate", 1, true) ~= nil
  end, "the first answer")
  T.wait(5000, function()
    return require("agentls").status():find("idle", 1, true) ~= nil
  end, "the session to be idle")
  local old = ws_client()
  session_id = state.session(old.id).id

  H.push({ { { text = "Building now." }, { tool = "shell", id = "k1", input = { command = "echo slow-build-started; sleep 20" } } } })
  vim.cmd("Agent run the slow build")
  T.wait(10000, function()
    return H.chat_text():find("\nslow%-build%-started") ~= nil
  end, "the command to run")
  T.contains(require("agentls").status(), "processing", "mid-turn")
  local new = reopened_after(function()
    kill(old)
  end, old.id, "stopped unexpectedly and was restarted")
  T.contains(
    H.chat_text(),
    ("⚠ agentls stopped unexpectedly (signal 9) with session %s open; restarting it (1 of 3 within 3 minutes)"):format(session_id:sub(1, 8))
  )
  T.truthy(vim.lsp.buf_is_attached(notes, new.id), "the new server has the buffers of the old one")
  T.contains(H.chat_text(), "[interrupted] shell: echo slow-build-started", "the running call is marked interrupted")
  T.truthy(
    was_notified(("agentls: the server stopped unexpectedly and was restarted; session %s reopened"):format(session_id:sub(1, 8))),
    "vim.notify says so too: " .. vim.inspect(notified)
  )
  -- The history the server reloaded follows the line that says the session was reopened.
  T.wait(10000, function()
    return chat_after("reopened"):find("history of session " .. session_id:sub(1, 8), 1, true) ~= nil
  end, "the reopened session's history in the chat")
  local history = chat_after("history of session " .. session_id:sub(1, 8))
  T.contains(history, "remember the green gate", "the completed exchange")
  T.contains(history, "noted, the green gate", "its answer")
  -- The chat above shows the conversation already: the reloaded one is a closed fold.
  local chat = require("agentls.chat")
  local lines = vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false)
  local header
  for i, l in ipairs(lines) do
    header = header or (l:find("history of session", 1, true) and i)
  end
  local levels = vim.tbl_map(chat.foldexpr, { header - 1, header, header + 1, #lines - 1, #lines })
  T.eq(levels, { "0", ">1", "1", "1", "0" }, "the history's fold: from its header to its last line")

  -- The session goes on where it was.
  H.push({ { { text = "the gate was green" } } })
  local before = #H.requests()
  vim.cmd("Agent what colour was the gate?")
  T.wait(10000, function()
    return #H.requests() > before
  end, "the next request")
  T.truthy(H.request_has(before + 1, "remember the green gate"), "the reopened session's history goes to the model")
  T.truthy(H.request_has(before + 1, "what colour was the gate?"), "with the new prompt")
  T.wait(10000, function()
    return H.chat_text():find("the gate was green", 1, true) ~= nil
  end, "the answer")
  T.wait(5000, function()
    return require("agentls").status():find("idle", 1, true) ~= nil
  end, "the session to be idle")
  -- The server writes the transcript as the turn happens: the interrupted turn is reloaded too.
  T.contains(history, "run the slow build", "the interrupted turn's prompt in the reopened history")
  T.contains(history, "✗ shell failed: This call never finished", "the call the kill cut, closed by the server")
  T.truthy(H.request_has(before + 1, "run the slow build"), "and in the model's next request")
end)

T.test("a review open when the server dies is closed; nothing of it is applied or sent to the new server", function()
  vim.fn.writefile({ "alpha", "beta", "gamma" }, H.path("dead.txt"))
  local patch = "*** Begin Patch\n*** Update File: dead.txt\n@@\n alpha\n-beta\n+BETA-DEAD\n gamma\n*** End Patch"
  H.push({ { { tool = "apply_patch", id = "k2", input = { patch = patch } } } })
  vim.cmd("Agent shout beta")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the review tab")
  local from = #sent + 1
  local old = ws_client()
  reopened_after(function()
    kill(old)
  end, old.id, "stopped unexpectedly and was restarted")
  T.eq(#vim.api.nvim_list_tabpages(), 1, "the review tab is closed")
  T.contains(H.chat_text(), "review closed: the server stopped before it was answered; nothing of it was applied (dead.txt)")
  T.contains(H.chat_text(), "restarting it (2 of 3 within 3 minutes)")
  T.truthy(not require("agentls").status():find("review", 1, true), "no review pending: " .. require("agentls").status())
  vim.cmd("AgentAccept")
  T.eq(notified[#notified], "agentls: no pending review", "nothing left to accept")
  T.eq(commands_sent("agentls.resolveReview", from), 0, "no answer to the dead server's review was sent")
  local dead = vim.fn.bufnr(H.path("dead.txt"))
  T.truthy(dead == -1 or H.buf_text(dead) == "alpha\nbeta\ngamma\n", "no buffer got the change")
  T.eq(H.disk("dead.txt"), "alpha\nbeta\ngamma\n", "the file is unchanged")
end)

T.test("a permission question open when the server dies is dropped; answering it later sends nothing", function()
  local answer ---@type fun(item: any)?
  local prompt
  vim.ui.select = function(items, opts, on_choice)
    prompt = opts.prompt
    answer = function(label)
      for _, item in ipairs(items) do
        if opts.format_item(item) == label then
          on_choice(item)
        end
      end
    end
  end
  H.push({ { { tool = "shell", id = "k3", input = { command = "echo never-run" } } } })
  vim.cmd("Agent run it once")
  T.wait(10000, function()
    return answer ~= nil
  end, "the permission question")
  T.contains(prompt, "echo never-run")
  T.contains(require("agentls").status(), "permission asked")
  local from = #sent + 1
  local old = ws_client()
  reopened_after(function()
    kill(old)
  end, old.id, "stopped unexpectedly and was restarted")
  T.contains(H.chat_text(), "permission question dropped: the server stopped before it was answered; echo never-run did not run")
  T.contains(H.chat_text(), "restarting it (3 of 3 within 3 minutes)")
  T.truthy(not require("agentls").status():find("permission", 1, true), "no question pending: " .. require("agentls").status())
  -- The user answers the stale prompt: it is not sent, and they are told.
  answer("Allow once")
  T.eq(commands_sent("agentls.resolvePermission", from), 0, "no answer to the dead server's question was sent")
  T.contains(notified[#notified], "that permission question was dropped", "the user is told")
end)

T.test("a fourth crash within 3 minutes leaves the server stopped; :AgentRestart starts it and reopens the session", function()
  local old = ws_client()
  kill(old)
  local said = ("after 3 restarts within 3 minutes and is left stopped; :AgentRestart starts it again and reopens session %s"):format(session_id:sub(1, 8))
  T.wait(10000, function()
    return H.chat_text():find(said, 1, true) ~= nil
  end, "the chat to say it is left stopped")
  T.truthy(was_notified(said), "and an error message: " .. vim.inspect(notified))
  vim.wait(1500)
  T.eq(ws_client(), nil, "no server was started")
  vim.cmd.edit(H.path("notes.txt"))
  local new = reopened_after(function()
    vim.cmd("AgentRestart")
  end, old.id, "was restarted")
  T.truthy(vim.lsp.buf_is_attached(vim.fn.bufnr(H.path("notes.txt")), new.id), "the project's buffers are attached")
end)

T.test(":AgentRestart and vim.lsp's stop are not crashes", function()
  local old = ws_client()
  local stops = count("stopped unexpectedly")
  local new = reopened_after(function()
    vim.cmd("AgentRestart")
  end, old.id, "was restarted")
  vim.lsp.stop_client(new.id)
  T.wait(10000, function()
    return vim.lsp.get_client_by_id(new.id) == nil
  end, "the server to stop")
  vim.wait(1500)
  T.eq(ws_client(), nil, "no server was started after the stop")
  T.eq(count("stopped unexpectedly"), stops, "the chat reports no crash")
end)

return T.run()
