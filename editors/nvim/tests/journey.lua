-- The headless journey on Neovim 0.11: the real plugin, the real server, the fake provider.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local H = dofile(vim.env.AGENTLS_TEST_DIR .. "/helpers.lua")

local SEVEN = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
local notes_buf, second_buf

local function events_done(n)
  -- processing_end count in the chat is not visible; wait on the provider having been asked n times
  return #H.requests() >= n
end

T.test("one client per project root, announcing experimental.agentls, attached to every buffer", function()
  vim.cmd.edit(H.path("notes.txt"))
  notes_buf = vim.api.nvim_get_current_buf()
  T.wait(10000, function()
    local c = H.client()
    return c and c.initialized and vim.lsp.buf_is_attached(notes_buf, c.id)
  end, "the client to attach to notes.txt")
  local c = H.client()
  T.eq(c.config.capabilities.experimental.agentls, { protocolVersion = 1 }, "announced capability")
  T.eq(c.root_dir, H.ws, "root is the folder with .git")
  T.eq(c.server_capabilities.experimental.agentls.protocolVersion, 1, "the server speaks the extension")
  -- A file without a filetype attaches too, to the same client.
  vim.cmd.edit(H.path("NOTES"))
  local plain = vim.api.nvim_get_current_buf()
  T.wait(5000, function()
    return vim.lsp.buf_is_attached(plain, c.id)
  end, "the filetype-less buffer to attach")
  -- Another project gets its own client.
  vim.cmd.edit(H.path("other/x.txt"))
  local other = vim.api.nvim_get_current_buf()
  T.wait(10000, function()
    local oc = vim.lsp.get_clients({ name = "agentls", bufnr = other })[1]
    return oc and oc.id ~= c.id and oc.root_dir == H.path("other")
  end, "a second client for the other root")
  T.eq(#vim.lsp.get_clients({ name = "agentls" }), 2, "two clients")
  vim.cmd.edit(H.path("notes.txt"))
end)

T.test(":Agent sends the unsaved text; the answer streams into the chat; the review tab opens", function()
  vim.api.nvim_buf_set_lines(notes_buf, 3, 4, false, { "4 (typed)" })
  T.truthy(vim.bo[notes_buf].modified, "the edit is unsaved")
  local patch = table.concat({
    "*** Begin Patch",
    "*** Update File: notes.txt",
    "@@",
    " one",
    "-two",
    "+TWO",
    " three",
    "@@",
    " five",
    "-six",
    "+SIX",
    " seven",
    "*** Update File: second.txt",
    "@@",
    " alpha",
    "-beta",
    "+BETA",
    " gamma",
    "*** End Patch",
  }, "\n")
  H.push({
    { { text = "Reading the notes first." }, { tool = "read_file", id = "r1", input = { file_path = "notes.txt" } } },
    { { text = "Capitalising now." }, { tool = "apply_patch", id = "p1", input = { patch = patch } } },
    { { text = "Understood, six stays." } },
  })
  vim.cmd("3,4Agent capitalise two and six")
  T.wait(10000, function()
    return H.chat_text():find("Reading the notes first.", 1, true) ~= nil
  end, "the streamed answer in the chat")
  T.truthy(H.request_has(1, "4 (typed)"), "the prompt's context holds the unsaved line")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the review tab")
  T.truthy(H.request_has(2, "4 (typed)"), "read_file read the unsaved buffer")
  local chat = H.chat_text()
  T.contains(chat, "## You")
  T.contains(chat, "capitalise two and six")
  T.contains(chat, "read_file notes.txt", "the tool call line")
  T.eq(vim.bo[require("agentls.chat").buf()].filetype, "agentls", "chat filetype")
end)

T.test("review: accept one hunk, reject the other with a reason, edit the second file", function()
  local review = require("agentls.review")
  local r, index, side = review.current_review()
  T.truthy(r, "the review tab is current")
  T.eq({ #r.files, index, side }, { 2, 1, "right" }, "two files, the first shown on the proposed side")
  local list = vim.api.nvim_buf_get_lines(r.ui.list_buf, 0, -1, false)
  T.contains(list[1], "M [pending]")
  T.contains(list[2], "second.txt")
  -- Left: the buffer's current text, read-only; right: the proposed text.
  local left = vim.api.nvim_win_get_buf(r.ui.left_win)
  T.eq(vim.api.nvim_buf_get_lines(left, 0, -1, false)[4], "4 (typed)", "left is the buffer as it is now")
  T.truthy(not vim.bo[left].modifiable, "left is read-only")
  T.truthy(vim.wo[r.ui.left_win].diff and vim.wo[r.ui.right_win].diff, "diff mode")
  T.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { "one", "TWO", "three", "4 (typed)", "five", "SIX", "seven" }, "proposed")
  T.contains(vim.wo[r.ui.right_win].winbar, "accept hunk", "the key hint")

  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd("AgentAcceptHunk")
  T.eq(vim.api.nvim_win_get_cursor(0)[1], 6, "the cursor moved to the next undecided hunk")
  local signs = vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { details = true, type = "sign" })
  T.truthy(#signs >= 1 and vim.trim(signs[1][4].sign_text) == "✓", "the accepted hunk has a sign")
  vim.cmd("AgentRejectHunk leave six alone")
  -- The first file is decided: the second one is shown.
  r, index = review.current_review()
  T.eq(index, 2, "the second file is shown")
  T.contains(vim.api.nvim_buf_get_lines(r.ui.list_buf, 0, 1, false)[1], "[1/2 hunks]")
  T.eq(vim.api.nvim_buf_get_lines(0, 0, -1, false), { "alpha", "BETA", "gamma" }, "second file proposed")
  vim.api.nvim_buf_set_lines(0, 1, 2, false, { "Beta (mine)" })
  vim.cmd("write")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 1
  end, "the review tab to close")
  T.wait(10000, function()
    return H.buf_text(notes_buf) == "one\nTWO\nthree\n4 (typed)\nfive\nsix\nseven\n"
  end, "the accepted hunk in notes.txt's buffer, with the user's text")
  second_buf = vim.fn.bufnr(H.path("second.txt"))
  T.wait(10000, function()
    return second_buf > 0 and H.buf_text(second_buf) == "alpha\nBeta (mine)\ngamma\n"
  end, "the user's text in second.txt's buffer")
  T.eq(H.disk("notes.txt"), SEVEN, "notes.txt on disk untouched")
  T.eq(H.disk("second.txt"), "alpha\nbeta\ngamma\n", "second.txt on disk untouched")
  T.wait(10000, function()
    return events_done(3)
  end, "the next model request")
  T.truthy(H.request_has(3, "rejected hunks [1]"), "the model is told which hunk was rejected")
  T.truthy(H.request_has(3, "leave six alone"), "and why")
  T.truthy(H.request_has(3, "edited"), "and that second.txt was edited")
  T.wait(10000, function()
    return H.chat_text():find("Understood, six stays.", 1, true) ~= nil
  end, "the final answer in the chat")
  T.contains(H.chat_text(), "review: notes.txt 1/2 hunks, second.txt edited")
end)

T.test("permission through vim.ui.select; saveDocuments writes exactly the agent's files", function()
  vim.cmd.edit(H.path("untouched.txt"))
  local untouched = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(untouched, 0, -1, false, { "unsaved and not the agent's" })
  local asked = H.stub_ui(H.choose("Allow once"))
  H.push({ { { tool = "shell", id = "s1", input = { command = "echo plugin-run; cat notes.txt" } } }, { { text = "ran" } } })
  local before = #H.requests()
  vim.cmd("Agent run it")
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the command's result to reach the model")
  T.eq(#asked.select, 1, "asked once")
  T.contains(asked.select[1].prompt, "agentls wants to run")
  T.contains(asked.select[1].prompt, "plugin-run")
  T.truthy(H.request_has(before + 2, "plugin-run"), "the command ran")
  T.truthy(H.request_has(before + 2, "TWO"), "it saw the saved buffer")
  T.eq(H.disk("notes.txt"), "one\nTWO\nthree\n4 (typed)\nfive\nsix\nseven\n", "the agent's file was saved")
  T.eq(H.disk("untouched.txt"), "original\n", "a buffer the agent did not touch is not written")
  T.truthy(vim.bo[untouched].modified, "and stays modified")

  asked = H.stub_ui(H.choose("Deny"), function()
    return "not now"
  end)
  H.push({ { { tool = "shell", id = "s2", input = { command = "echo denied-run" } } }, { { text = "ok" } } })
  before = #H.requests()
  vim.cmd("Agent run another")
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the denial to reach the model")
  T.eq(#asked.input, 1, "a reason was asked")
  T.truthy(H.request_has(before + 2, "not now"), "the reason reaches the model")
  T.truthy(not H.request_has(before + 2, "denied-run\\n"), "the command did not run")
end)

T.test(":AgentCancel during a long command stops it", function()
  H.stub_ui(H.choose("Allow once"))
  H.push({ { { tool = "shell", id = "s3", input = { command = "echo started-long; sleep 30" } } } })
  vim.cmd("Agent wait a while")
  -- Running (not waiting for permission): its first output is streamed into the chat.
  T.wait(10000, function()
    local chat = H.chat_text()
    return chat:find("[running] shell", 1, true) ~= nil and chat:find("\nstarted%-long") ~= nil
  end, "the command to start and print")
  T.contains(H.chat_text(), "⋮ output of shell", "the output streams into a fold")
  local started = vim.uv.hrtime()
  vim.cmd("AgentCancel")
  local ok = vim.wait(10000, function()
    return H.chat_text():find("[cancelled", 1, true) ~= nil
  end, 20)
  T.truthy(ok, "the command to be cancelled; the chat:\n" .. H.chat_text())
  T.truthy((vim.uv.hrtime() - started) / 1e9 < 10, "stopped well before the command would end")
  T.wait(5000, function()
    return require("agentls").status():find("idle", 1, true) ~= nil
  end, "the session to be idle")
end)

T.test(":AgentSessions resumes a stored session and shows its history", function()
  -- Yesterday's session: asked in a new session, then the server is stopped (its transcript stays).
  H.push({ { { text = "noted" } } })
  vim.cmd("AgentNew")
  T.wait(5000, function()
    return H.chat_text():find("new session", 1, true) ~= nil
  end, "the new session")
  vim.cmd("Agent remember the blue door")
  T.wait(10000, function()
    return H.chat_text():find("noted", 1, true) ~= nil
  end, "the answer")
  T.wait(5000, function()
    return require("agentls").status():find("idle", 1, true) ~= nil
  end, "the session to be idle")
  local old = vim.tbl_map(function(c)
    return c.id
  end, vim.lsp.get_clients({ name = "agentls" }))
  vim.lsp.stop_client(old)
  T.wait(10000, function()
    return #vim.lsp.get_clients({ name = "agentls" }) == 0
  end, "the servers to stop")
  vim.cmd.edit(H.path("fresh.txt"))
  T.wait(10000, function()
    local c = H.client()
    return c and c.initialized and not vim.tbl_contains(old, c.id)
  end, "a new server")

  local asked = H.stub_ui(function(items, opts)
    for _, s in ipairs(items) do
      if not s.open and opts.format_item(s):find("remember the blue door", 1, true) then
        return s
      end
    end
  end)
  vim.cmd("AgentSessions")
  T.wait(10000, function()
    return H.chat_text():find("resumed session", 1, true) ~= nil
  end, "the resumed session")
  T.truthy(#asked.select[1].items >= 2, "the stored sessions are offered")
  T.wait(10000, function()
    return H.chat_text():find("history of session", 1, true) ~= nil
  end, "the stored session's history in the chat")
  H.push({ { { text = "the door was blue" } } })
  local before = #H.requests()
  vim.cmd("Agent what colour was the door?")
  T.wait(10000, function()
    return #H.requests() > before
  end, "the follow-up request")
  T.truthy(H.request_has(before + 1, "remember the blue door"), "the resumed session's history goes to the model")
  T.truthy(H.request_has(before + 1, "what colour was the door?"), "with the new prompt")
  T.wait(10000, function()
    return H.chat_text():find("the door was blue", 1, true) ~= nil
  end, "the answer")
end)

T.test(":checkhealth agentls runs clean", function()
  vim.cmd("checkhealth agentls")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  T.contains(text, "Neovim 0.11")
  T.contains(text, "agentls 0.1")
  T.contains(text, "provider: anthropic")
  T.contains(text, "key: ANTHROPIC_API_KEY (set)")
  T.truthy(not text:find("sk-ant-fake-key", 1, true), "the key is never shown")
  T.truthy(not text:find("ERROR", 1, true) and not text:find("WARNING", 1, true), "no error or warning:\n" .. text)
end)

return T.run()
