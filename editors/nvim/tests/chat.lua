-- The chat on its own, without a server: the model (chat_model.lua) folds events into lines,
-- fold levels, highlights and signs; the renderer (chat.lua) mirrors the model into the buffer
-- however the events are batched.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local plugin_dir = vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h")
vim.opt.runtimepath:prepend(plugin_dir)
local chat_model = require("agentls.chat_model")

-- The event stream a real server sent for one turn (the VS Code chat model's fixture too).
local recorded = vim.json.decode(table.concat(vim.fn.readfile(plugin_dir .. "/../vscode/test/fixtures/recorded_session.json"), "\n"))
local events = {}
for _, m in ipairs(recorded.messages) do
  if m.method == "agentls/event" then
    table.insert(events, m.params)
  end
end
local S = events[1].sessionId

local function fold(list, model)
  model = model or chat_model.new()
  for _, e in ipairs(list) do
    model:event(e)
  end
  return model
end

local function ev(kind, data, agent, session)
  return { sessionId = session or S, kind = kind, data = data, agent = agent }
end

-- The model as a user sees it: one "level|highlight|sign|text" row per line.
local function rows(model, from)
  local out = {}
  for l = from or 1, #model.lines do
    local sign = model.signs[l]
    out[#out + 1] = ("%s|%s|%s|%s"):format(model.levels[l] or "", model.highlights[l] or "", sign and sign[1] or "", model.lines[l])
  end
  return out
end

T.test("the recorded session becomes prompt, answers, one line per call with its outcome, the output folded", function()
  local got = vim.tbl_map(function(row)
    return (row:gsub("%[ok %d+ ms%]", "[ok N ms]")) -- durations are the recording's
  end, rows(fold(events)))
  T.eq(got, {
    "|||",
    "|||## You",
    "|||",
    "|||Capitalise two and seven in notes.txt, then check.",
    "|||",
    "|||## agentls (claude-test)",
    "|||",
    "|||I'll read the file first.",
    "||✓|- [ok N ms] read_file notes.txt",
    "|||",
    "|||## agentls (claude-test)",
    "|||",
    "||✓|- [ok N ms] write_file notes.txt",
    "|||",
    "|||## agentls (claude-test)",
    "|||",
    "|||Now a quick check.",
    "||✓|- [ok N ms] shell: echo checked",
    ">1|AgentlsOutput||  ⋮ output of shell: echo checked",
    "1|||checked",
    "|||",
    "|||## agentls (claude-test)",
    "|||",
    "|||Done: `two` is now **TWO**; you kept `seven`.",
    "|||",
    "|||```rust",
    "|||fn main() {}",
    "|||```",
    "|||",
  }, "the transcript")
end)

T.test("streamed text, reasoning and output: the same chat however the stream is cut", function()
  local whole = {
    ev("assistant_reasoning_delta", { delta = "thinking hard\nstep two" }),
    ev("assistant_text_delta", { delta = "answer line 1\nline 2 more\n\nend" }),
    ev("tool_call_start", { call_id = "c1", summary = "shell: make" }),
    ev("tool_call_output_delta", { call_id = "c1", delta = "out1\nout2\n" }),
    ev("tool_call_end", { call_id = "c1", summary = "shell: make", status = "ok", duration_ms = 12 }),
  }
  -- The same events with every delta cut into single characters.
  local cut = {}
  for _, e in ipairs(whole) do
    if e.data.delta then
      for ch in e.data.delta:gmatch(".") do
        table.insert(cut, ev(e.kind, { call_id = e.data.call_id, delta = ch }))
      end
    else
      table.insert(cut, e)
    end
  end
  local a, b = fold(whole), fold(cut)
  T.eq(rows(a), {
    ">1|AgentlsReasoning||> _reasoning_",
    "1|||thinking hard",
    "1|||step two",
    "|||answer line 1",
    "|||line 2 more",
    "|||",
    "|||end",
    "||✓|- [ok 12 ms] shell: make",
    ">1|AgentlsOutput||  ⋮ output of shell: make",
    "1|||out1",
    "1|||out2",
    "1|||",
  }, "the reasoning and the output are folds under their headers")
  T.eq(rows(b), rows(a), "cut into characters")
end)

T.test("the answer after reasoning that ended with a newline is not folded into it", function()
  local m = fold({
    ev("assistant_reasoning_delta", { delta = "thinking\n" }),
    ev("assistant_text_delta", { delta = "the answer" }),
  })
  T.eq(rows(m), { ">1|AgentlsReasoning||> _reasoning_", "1|||thinking", "|||the answer" }, "the answer")
end)

T.test("a call's line shows its outcome in place; an error's first line; an end without a start gets a line", function()
  local m = fold({
    ev("tool_call_start", { call_id = "c1", summary = "shell: make" }),
    ev("tool_call_start", { call_id = "c2", tool_name = "grep" }),
    ev("tool_call_end", { call_id = "c1", summary = "shell: make", status = "error", duration_ms = 7, error = "exit 2\nmore" }),
    ev("tool_call_end", { call_id = "zz", tool_name = "read_file", status = "cancelled" }),
  })
  T.eq(rows(m), {
    "||✗|- [error 7 ms] shell: make — exit 2",
    "||…|- [running] grep",
    "||⊘|- [cancelled] read_file",
  }, "the calls")
  T.eq(m.signs[1], { "✗", "AgentlsToolError" }, "the sign's highlight")
end)

T.test("an error's first line is shown whole, however long: what to do comes at its end", function()
  local message = "cannot reach https://api.example.test/v1/messages: the certificate api.example.test presented is "
    .. "signed by an authority agentls does not trust (unknown issuer). If a proxy or company CA re-signs TLS: "
    .. "set SSL_CERT_FILE or [network] ca_file to that CA's certificate (a PEM file)"
  T.truthy(#message > 200, "longer than a tool line's detail")
  local m = fold({ ev("user_input", { content = "go" }), ev("error", { message = message .. "\nmore" }) })
  T.eq(rows(m)[#rows(m)], "|AgentlsError||✗ error: " .. message)
end)

T.test("notices are lines of their own, warnings and errors highlighted", function()
  local m = fold({
    ev("user_input", { content = "go" }),
    ev("warning", { message = "context 90% full\ndetails" }),
    ev("error", { message = "provider said no\ndetails", fatal = false }),
    ev("loop_detection", { message = "the same call three times" }),
    ev("turn_limit", { steps = 5 }),
    ev("compaction", { trigger = "manual", tokens_before = 10, tokens_after = 2, messages_summarized = 4, messages_kept = 2, model = "m" }),
    ev("steering_injected", { content = "only the CLI\nplease" }),
    ev("config_changed", { model = "m2", approval = "auto" }),
    ev("project_docs_reloaded", { message = "AGENTS.md changed" }),
    ev("processing_end", { reason = "completed", state = "idle" }),
    ev("processing_end", { reason = "cancelled", state = "idle" }),
    ev("session_start", { model = "m" }),
  })
  m:note({ "", "✗ the plugin's own note" }, "AgentlsError")
  T.eq(rows(m), {
    "|||",
    "|||## You",
    "|||",
    "|||go",
    "|AgentlsWarning||⚠ warning: context 90% full",
    "|AgentlsError||✗ error: provider said no",
    "|AgentlsWarning||⚠ the same call three times",
    "|AgentlsWarning||⚠ step limit: stopped after 5 model requests for this input",
    "|||",
    "|||⟲ compacted the conversation (as asked): 4 earlier messages summarised by m, 2 kept; ~10 → ~2 tokens",
    "|||",
    "|||> steered: only the CLI",
    "|||_model m2 · effort default · approval auto_",
    "|||_AGENTS.md changed_",
    "|||_(cancelled)_",
    "|AgentlsError||",
    "|AgentlsError||✗ the plugin's own note",
  }, "one line each")
end)

T.test("another session's events start under a header line", function()
  local m = fold({
    ev("user_input", { content = "first" }),
    ev("assistant_text_delta", { delta = "one" }),
    ev("user_input", { content = "second" }, nil, "0b6c1234-other"),
    ev("assistant_text_delta", { delta = "two" }, nil, "0b6c1234-other"),
    ev("session_start", { model = "m" }, nil, "ffff0000-silent"),
  })
  T.eq(m.lines, { "", "## You", "", "first", "one", "", "── session 0b6c1234 ──", "", "## You", "", "second", "two" }, "lines")
end)

T.test("a subagent's lines are indented folds of their own under its spawn call", function()
  local function agent(n, parent)
    parent = parent or S
    return { agentId = "agent-" .. n, sessionId = parent .. "-agent-" .. n, parentSessionId = parent, parentCallId = "sp" .. n }
  end
  local a1, a2 = agent(1), agent(2)
  local deep = agent(1, a1.sessionId)
  local m = fold({
    ev("tool_call_start", { call_id = "sp1", summary = "spawn_agent: subtask" }),
    ev("user_input", { content = "write sub-a" }, a1),
    -- The same call id as the parent's: still the subagent's own line.
    ev("tool_call_start", { call_id = "sp1", summary = "write_file sub-a" }, a1),
    ev("user_input", { content = "write sub-b" }, a2),
    ev("tool_call_end", { call_id = "sp1", summary = "write_file sub-a", status = "ok", duration_ms = 3 }, a1),
    ev("assistant_text_delta", { delta = "never streamed" }, a1),
    ev("assistant_text_end", { text = "wrote sub-a\nfine" }, a1),
    ev("processing_end", { state = "idle", reason = "completed" }, a1),
    ev("user_input", { content = "deeper" }, deep),
    ev("tool_call_end", { call_id = "q9", summary = "shell: q", status = "error", duration_ms = 1 }, a2),
    ev("error", { message = "boom\nx" }, a2),
    ev("processing_end", { state = "idle", reason = "failed" }, a2),
    ev("session_end", { state = "closed" }, a2),
    ev("tool_call_end", { call_id = "sp1", summary = "spawn_agent: subtask", status = "ok", duration_ms = 1 }),
  })
  T.eq(rows(m), {
    "||✓|- [ok 1 ms] spawn_agent: subtask",
    ">1|||  ▸ agent-1: write sub-a",
    "1||✓|    - [ok 3 ms] write_file sub-a",
    ">1|||  ▸ agent-2: write sub-b",
    ">1|||    wrote sub-a",
    "1|||    fine",
    "1|||  agent-1 completed",
    ">1|||    ▸ agent-1: deeper",
    ">1|||    - [error 1 ms] shell: q",
    "1|AgentlsError||  ✗ agent-2 error: boom",
    "1|||  agent-2 failed",
    "1|||  agent-2 closed",
  }, "each run of one subagent's lines is a fold, indented by depth")
end)

T.test("a stopped server's running calls are marked interrupted, its subagents' too, no other session's", function()
  local a1 = { agentId = "agent-1", sessionId = S .. "-agent-1", parentSessionId = S, parentCallId = "sp1" }
  local m = fold({
    ev("tool_call_start", { call_id = "sp1", summary = "spawn_agent: x" }),
    ev("tool_call_start", { call_id = "s1", summary = "shell: sleep" }, a1),
    ev("tool_call_start", { call_id = "done", summary = "read_file a" }),
    ev("tool_call_end", { call_id = "done", summary = "read_file a", status = "ok", duration_ms = 2 }),
    ev("tool_call_start", { call_id = "o1", summary = "shell: other" }, nil, "other-session"),
  })
  m:interrupted(S)
  T.eq(rows(m), {
    "||⊘|- [interrupted] spawn_agent: x",
    ">1||⊘|    - [interrupted] shell: sleep",
    "||✓|- [ok 2 ms] read_file a",
    "|||",
    "|||── session other-se ──",
    "||…|- [running] shell: other",
  }, "interrupted")
end)

T.test("a session's history: the conversation, failed calls with why, in a closed fold after a restart", function()
  local entries = {
    { kind = "user", text = "remember\nthe door" },
    { kind = "assistant", text = "ok", toolCalls = { { summary = "read_file a" }, { toolName = "grep" } } },
    { kind = "assistant", text = vim.NIL, toolCalls = {} },
    { kind = "tool_result", toolName = "shell", isError = true, output = "This call never finished: the server stopped\nmore" },
    { kind = "tool_result", toolName = "grep", isError = true, output = vim.NIL },
    { kind = "tool_result", toolName = "read_file", isError = false, output = "fine" },
    { kind = "steering", text = "only" },
    { kind = "summary", text = "the summary", turnsSummarized = 3 },
  }
  local m = chat_model.new()
  m:note({ "── agentls was restarted ──" })
  m:history(S, entries, true)
  T.eq(rows(m), {
    "|||── agentls was restarted ──",
    "|||",
    ">1|||── history of session " .. S:sub(1, 8) .. " ──",
    "1|||",
    "1|||## You",
    "1|||",
    "1|||remember",
    "1|||the door",
    "1|||",
    "1|||## agentls",
    "1|||",
    "1|||ok",
    "1|||- read_file a",
    "1|||- grep",
    "1|||  ✗ shell failed: This call never finished: the server stopped",
    "1|||  ✗ grep failed",
    "1|||> steered: only",
    "1|||⟲ earlier conversation (3 messages), as summarised for the model:",
    "1|||the summary",
    "|||",
  }, "folded")
  local open = chat_model.new()
  open:history(S, { entries[1] }, false)
  T.eq(rows(open), {
    "|||",
    "|||── history of session " .. S:sub(1, 8) .. " ──",
    "|||",
    "|||## You",
    "|||",
    "|||remember",
    "|||the door",
    "|||",
  }, "not folded")
end)

T.test("a turn's header shows its id; an undo marks it (and its reopened history) undone, a redo clears the mark", function()
  local m = fold({
    ev("user_input", { content = "one", turn_id = 1 }),
    ev("processing_end", { reason = "completed" }),
    ev("user_input", { content = "two", turn_id = 2 }),
    ev("processing_end", { reason = "completed" }),
  })
  m:take_changes()
  m:event(ev("undo_state", { undone = { 2 }, redoable = { 2 }, direction = "undo", turn_ids = { 2 } }))
  T.eq(m:take_changes(), { 6 }, "only the undone turn's header changed")
  -- Turns one and two, the second undone.
  local second_undone = {
    "|||## You · turn 1",
    "|||",
    "|||one",
    "|||",
    "|AgentlsUndone||## You · turn 2 · undone",
    "|||",
    "|||two",
  }
  T.eq(rows(m), vim.list_extend({ "|||" }, second_undone))
  m:event(ev("undo_state", { undone = {}, redoable = {}, direction = "redo", turn_ids = { 2 } }))
  T.eq(rows(m)[6], "|||## You · turn 2")
  m:event(ev("undo_state", { undone = { 1 }, redoable = { 1 } }, nil, "other-session"))
  T.eq(rows(m)[2], "|||## You · turn 1", "another session's turn 1 is not this one")
  local reopened = chat_model.new()
  reopened:history(S, { { kind = "user", text = "one", turnId = 1 }, { kind = "user", text = "two", turnId = 2 } }, false, { 2 })
  T.eq(vim.list_slice(rows(reopened), 4, 10), second_undone)
  reopened:event(ev("undo_state", { undone = {}, redoable = {}, direction = "redo", turn_ids = { 2 } }))
  T.eq(rows(reopened)[8], "|||## You · turn 2", "the history's turns follow later undo states")
end)

T.test("the model says which lines changed: appended ones and a call's line that ended", function()
  local m = fold({
    ev("user_input", { content = "go" }),
    ev("tool_call_start", { call_id = "c1", summary = "shell: make" }),
    ev("assistant_text_delta", { delta = "working" }),
  })
  T.eq(m:take_changes(), { 1, 2, 3, 4, 5, 6 }, "everything, once")
  T.eq(m:take_changes(), {}, "then nothing")
  m:event(ev("tool_call_end", { call_id = "c1", summary = "shell: make", status = "ok", duration_ms = 4 }))
  m:event(ev("assistant_text_delta", { delta = " on it\nnext" }))
  T.eq(m:take_changes(), { 5, 6, 7 }, "the call's line, the streamed line and the new one")
end)

T.test("the buffer mirrors the model whatever the batching: lines, folds, highlights, signs", function()
  local chat = require("agentls.chat")
  local a1 = { agentId = "agent-1", sessionId = S .. "-agent-1", parentSessionId = S, parentCallId = "sp1" }
  local all = vim.list_extend(vim.deepcopy(events), {
    ev("assistant_reasoning_delta", { delta = "thinking\nhard" }),
    ev("tool_call_start", { call_id = "c1", summary = "shell: make" }),
    ev("tool_call_output_delta", { call_id = "c1", delta = "out1\nout2" }),
    ev("tool_call_start", { call_id = "sp1", summary = "spawn_agent: x" }),
    ev("tool_call_output_delta", { call_id = "c1", delta = "\nout3" }),
    ev("tool_call_start", { call_id = "s1", summary = "shell: sub" }, a1),
    ev("warning", { message = "careful" }),
    ev("tool_call_end", { call_id = "c1", summary = "shell: make", status = "error", duration_ms = 5, error = "no" }),
    ev("tool_call_end", { call_id = "s1", summary = "shell: sub", status = "ok", duration_ms = 5 }, a1),
    ev("tool_call_start", { call_id = "r9", summary = "shell: long" }),
  })
  local function buffer_view()
    local buf = chat.buf()
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local marks = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })) do
      local l, d = m[2] + 1, m[4]
      marks[l] = marks[l] or { "", "" }
      if d.line_hl_group then
        marks[l][1] = d.line_hl_group
      end
      if d.sign_text then
        marks[l][2] = vim.trim(d.sign_text)
      end
    end
    local out = {}
    for l, text in ipairs(lines) do
      out[l] = ("%s|%s|%s|%s"):format(chat.foldexpr(l) == "0" and "" or chat.foldexpr(l), marks[l] and marks[l][1] or "", marks[l] and marks[l][2] or "", text)
    end
    return out
  end
  local expected = fold(all)
  expected:interrupted(S)
  for _, every in ipairs({ 1, 3, #all }) do
    vim.cmd("silent! bwipeout! " .. chat.buf()) -- a new chat
    for i, e in ipairs(all) do
      chat.on_event(e)
      if i % every == 0 then
        chat.flush()
      end
    end
    chat.interrupted(S)
    chat.flush()
    T.eq(buffer_view(), rows(expected), ("the buffer, flushed every %d events"):format(every))
  end
end)

return T.run()
