-- The headless journey on Neovim 0.11: the real plugin, the real server, the fake provider.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local H = dofile(vim.env.AGENTLS_TEST_DIR .. "/helpers.lua")

local SEVEN = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
local notes_buf, second_buf

local function events_done(n)
  -- processing_end count in the chat is not visible; wait on the provider having been asked n times
  return #H.requests() >= n
end

vim.o.columns, vim.o.lines = 180, 50

T.test("one client per project root, announcing experimental.agentls, attached to every buffer", function()
  vim.cmd.edit(H.path("notes.txt"))
  notes_buf = vim.api.nvim_get_current_buf()
  T.wait(10000, function()
    local c = H.client()
    return c and c.initialized and vim.lsp.buf_is_attached(notes_buf, c.id)
  end, "the client to attach to notes.txt")
  local c = H.client()
  T.eq(c.config.capabilities.experimental.agentls, { protocolVersion = 1, deltaIntervalMs = 16, trust = true }, "announced capability")
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
  T.contains(vim.wo[r.ui.right_win].winbar, "ga/gr accept/reject hunk", "the key hint")
  local screen = H.screen()
  T.contains(screen, "> M [pending]    notes.txt", "the file list on screen")
  T.contains(screen, "]c/[c hunk · ga/gr accept/reject hunk", "the hint on screen")
  T.contains(screen, "current: notes.txt", "the left side's title on screen")

  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd("AgentAcceptHunk")
  T.eq(vim.api.nvim_win_get_cursor(0)[1], 6, "the cursor moved to the next undecided hunk")
  local signs = vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { details = true, type = "sign" })
  T.truthy(#signs >= 1 and vim.trim(signs[1][4].sign_text) == "✓", "the accepted hunk has a sign")
  vim.cmd("AgentRejectHunk leave six alone")
  T.eq(r.files[1].proposed, { "one", "TWO", "three", "4 (typed)", "five", "six", "seven" }, "the rejected hunk left the proposal")
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
  local stop_redrawing = H.keep_redrawing()
  vim.cmd("Agent run it")
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the command's result to reach the model")
  vim.wait(100)
  stop_redrawing()
  -- On screen, the command's whole output (8 lines) is one closed fold under its header.
  local chat_win = vim.fn.win_findbuf(require("agentls.chat").buf())[1]
  T.contains(
    H.screen(),
    "+--  9 lines: ⋮ output of shell: echo plugin-run",
    ("the output fold on screen (chat cursor %s of %d)"):format(
      vim.inspect(chat_win and vim.api.nvim_win_get_cursor(chat_win)),
      vim.api.nvim_buf_line_count(require("agentls.chat").buf())
    )
  )
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

T.test("model, effort and approval go to the session; approval auto applies at once; progress reaches LspProgress", function()
  local progress = {}
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function(args)
      local value = args.data.params.value
      table.insert(progress, { kind = value.kind, title = value.title, message = value.message })
    end,
  })
  local status_events = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = "AgentlsStatus",
    callback = function()
      status_events = status_events + 1
    end,
  })
  vim.cmd("AgentModel claude-other")
  vim.cmd("AgentEffort high")
  vim.cmd("AgentApproval auto")
  T.wait(10000, function()
    return H.chat_text():find("_model claude-other · effort high · approval auto_", 1, true) ~= nil
  end, "the settings confirmed in the chat")
  T.contains(require("agentls").status(), "claude-other", "status() shows the model")
  T.truthy(status_events > 0, "statuslines are told (User AgentlsStatus)")
  local patch = "*** Begin Patch\n*** Update File: NOTES\n@@\n-no filetype\n+NO FILETYPE\n*** End Patch"
  H.push({ { { tool = "apply_patch", id = "p9", input = { patch = patch } } }, { { text = "applied" } } })
  local before = #H.requests()
  vim.cmd("Agent shout")
  local notes = vim.fn.bufnr(H.path("NOTES"))
  T.wait(10000, function()
    return H.buf_text(notes) == "NO FILETYPE\n"
  end, "the change in the buffer without a review")
  T.eq(#vim.api.nvim_list_tabpages(), 1, "no review tab")
  T.eq(H.disk("NOTES"), "no filetype\n", "not written to disk")
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the model to be told")
  T.eq(H.requests()[before + 1].model, "claude-other", "the new model is used")
  local ok = vim.wait(10000, function()
    for _, p in ipairs(progress) do
      if p.kind == "end" then
        return true
      end
    end
  end, 20)
  T.truthy(ok, "a progress end: " .. vim.inspect(progress))
  local titles = vim.tbl_map(function(p)
    return p.title
  end, vim.tbl_filter(function(p)
    return p.kind == "begin"
  end, progress))
  T.truthy(vim.tbl_contains(titles, "agentls"), "the turn's progress: " .. vim.inspect(titles))
  T.truthy(vim.tbl_contains(titles, "apply_patch NOTES"), "the tool call's progress: " .. vim.inspect(titles))
  vim.cmd("AgentApproval review")
  T.wait(10000, function()
    return H.chat_text():find("approval review_", 1, true) ~= nil
  end, "approval back to review")
end)

T.test(":AgentUndo N reverts the turn the chat shows as turn N (the buffer through the editor, a command's file on disk) and the chat marks it undone; :AgentRedo redoes it", function()
  vim.cmd("AgentApproval auto")
  H.stub_ui(H.choose("Allow once"))
  local notes = vim.fn.bufnr(H.path("NOTES"))
  local before_text = H.buf_text(notes)
  local patch = "*** Begin Patch\n*** Update File: NOTES\n@@\n-NO FILETYPE\n+undo me\n*** End Patch"
  H.push({
    { { tool = "shell", id = "u1", input = { command = "echo made > undo-made.txt" } } },
    { { tool = "apply_patch", id = "u2", input = { patch = patch } } },
    { { text = "made and changed" } },
  })
  local told = {}
  local notify = vim.notify
  vim.notify = function(message, level)
    table.insert(told, message)
    return notify(message, level)
  end
  vim.cmd("Agent make a file and change NOTES")
  T.wait(10000, function()
    return H.chat_text():find("made and changed", 1, true) ~= nil
  end, "the turn to end")
  -- The answer shows before the turn ends (its checkpoint is stored then): undo waits for idle.
  T.wait(10000, function()
    return require("agentls").status():find("idle", 1, true) ~= nil
  end, "the session to be idle")
  T.eq(H.buf_text(notes), "undo me\n", "the edit in the buffer")
  T.eq(H.disk("undo-made.txt"), "made\n", "the command's file")
  local turns = {}
  for id in H.chat_text():gmatch("## You · turn (%d+)\n") do
    table.insert(turns, id)
  end
  local turn = turns[#turns]
  T.truthy(turn, "the chat shows the turn's id: " .. H.chat_text())
  local undone = ("## You · turn %s · undone"):format(turn)
  vim.cmd("AgentUndo " .. turn)
  T.wait(10000, function()
    return H.buf_text(notes) == before_text and vim.fn.filereadable(H.path("undo-made.txt")) == 0
  end, "the buffer and the file back as they were")
  T.wait(5000, function()
    return vim.iter(told):any(function(m)
      return m:find("agentls: undid turn", 1, true) ~= nil and m:find("D undo-made.txt", 1, true) ~= nil
    end)
  end, "the undo told: " .. vim.inspect(told))
  T.wait(5000, function()
    return H.chat_text():find(undone, 1, true) ~= nil
  end, "the chat marks the turn undone")
  vim.cmd("AgentRedo")
  T.wait(10000, function()
    return H.buf_text(notes) == "undo me\n" and vim.fn.filereadable(H.path("undo-made.txt")) == 1
  end, "the turn redone")
  T.wait(5000, function()
    return H.chat_text():find(undone, 1, true) == nil and H.chat_text():find(("## You · turn %s\n"):format(turn), 1, true) ~= nil
  end, "the mark gone")
  vim.notify = notify
  vim.cmd("AgentApproval review")
  T.wait(10000, function()
    return H.chat_text():find("approval review_", 1, true) ~= nil
  end, "approval back to review")
end)

T.test(":AgentSteer reaches the running turn", function()
  H.stub_ui(H.choose("Allow once"))
  H.push({ { { tool = "shell", id = "s5", input = { command = "echo steer-wait; sleep 2" } } }, { { text = "steered" } } })
  local before = #H.requests()
  vim.cmd("Agent do the long thing")
  T.wait(10000, function()
    return H.chat_text():find("\nsteer%-wait") ~= nil
  end, "the command to run")
  vim.cmd("AgentSteer only the CLI, not the library")
  T.wait(15000, function()
    return #H.requests() >= before + 2
  end, "the next model request")
  T.truthy(H.request_has(before + 2, "only the CLI, not the library"), "the steering message reaches the model")
  T.wait(5000, function()
    return H.chat_text():find("> steered: only the CLI", 1, true) ~= nil
  end, "the steering shown in the chat")
end)

T.test("a closed review tab leaves the review pending; :AgentReview reopens it; :AgentReject outside rejects it all", function()
  local patch = "*** Begin Patch\n*** Update File: second.txt\n@@\n alpha\n-Beta (mine)\n+BETA\n gamma\n*** End Patch"
  H.push({ { { tool = "apply_patch", id = "p10", input = { patch = patch } } }, { { text = "fine" } } })
  local before = #H.requests()
  vim.cmd("Agent again")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the review tab")
  local r = require("agentls.review").current_review()
  T.eq(r.ui.list_buf, nil, "no file list for one file")
  vim.cmd("tabclose")
  T.contains(require("agentls").status(), "1 review", "still pending")
  vim.cmd("AgentReview")
  T.eq(#vim.api.nvim_list_tabpages(), 2, "reopened")
  vim.cmd("tabclose")
  vim.cmd("AgentReject not this way")
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the model to be told")
  T.truthy(H.request_has(before + 2, "rejected"), "rejected")
  T.truthy(H.request_has(before + 2, "not this way"), "with the reason")
  T.eq(H.buf_text(vim.fn.bufnr(H.path("second.txt"))), "alpha\nBeta (mine)\ngamma\n", "the buffer is unchanged")
  T.wait(5000, function()
    return not require("agentls").status():find("review", 1, true)
  end, "no review pending")
end)

T.test(":AgentCancel with a review open rejects it and closes the tab", function()
  local patch = "*** Begin Patch\n*** Update File: second.txt\n@@\n alpha\n-Beta (mine)\n+B\n gamma\n*** End Patch"
  H.push({ { { tool = "apply_patch", id = "p11", input = { patch = patch } } } })
  vim.cmd("Agent once more")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the review tab")
  vim.cmd("AgentCancel")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 1
  end, "the tab to close")
  T.wait(5000, function()
    return not require("agentls").status():find("review", 1, true)
  end, "no review pending")
  T.wait(5000, function()
    return H.chat_text():find("review closed unanswered: the turn was cancelled or the review timed out", 1, true) ~= nil
  end, "the chat to say so")
  T.eq(H.buf_text(vim.fn.bufnr(H.path("second.txt"))), "alpha\nBeta (mine)\ngamma\n", "the buffer is unchanged")
end)

T.test("a review whose server stops is closed with a message", function()
  local patch = "*** Begin Patch\n*** Update File: second.txt\n@@\n alpha\n-Beta (mine)\n+Bx\n gamma\n*** End Patch"
  H.push({ { { tool = "apply_patch", id = "p13", input = { patch = patch } } } })
  vim.cmd("Agent yet again")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the review tab")
  local old = H.client().id
  vim.lsp.stop_client(old, true)
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 1
  end, "the tab to close")
  T.wait(5000, function()
    return H.chat_text():find("review closed: the server stopped", 1, true) ~= nil
  end, "the chat to say so")
  T.eq(require("agentls").status(), "", "no session, no review")
  -- The next file opened starts a new server.
  vim.cmd.edit(H.path("notes.txt"))
  vim.cmd("edit")
  T.wait(10000, function()
    local c = H.client()
    return c and c.id ~= old and c.initialized
  end, "a new server")
end)

T.test(":Agent while the project's server is starting returns at once; the prompt is sent once it is up", function()
  local old = H.client().id
  vim.lsp.stop_client(old)
  T.wait(10000, function()
    return vim.lsp.get_client_by_id(old) == nil
  end, "the server to stop")
  H.push({ { { text = "up and answering" } } })
  local before = #H.requests()
  vim.cmd("edit")
  local started = vim.uv.hrtime()
  vim.cmd("Agent asked while starting")
  T.truthy((vim.uv.hrtime() - started) / 1e6 < 100, "the command returned at once")
  -- vim.lsp lists initialized clients only.
  T.eq(vim.lsp.get_clients({ name = "agentls", bufnr = 0 }), {}, "the project's server is not up yet (nothing waited for it)")
  T.wait(10000, function()
    local c = vim.lsp.get_clients({ name = "agentls", bufnr = 0 })[1]
    return c and c.id ~= old
  end, "the new server")
  local roots = vim.tbl_map(function(c)
    return c.root_dir
  end, vim.lsp.get_clients({ name = "agentls" }))
  T.eq(roots, { H.ws }, "one server, the project's")
  T.wait(10000, function()
    return #H.requests() > before
  end, "the prompt to reach the model")
  T.truthy(H.request_has(before + 1, "asked while starting"), "the prompt")
  T.truthy(H.request_has(before + 1, "notes.txt"), "with the current file as its context")
  T.wait(10000, function()
    return H.chat_text():find("up and answering", 1, true) ~= nil
  end, "the answer in the chat")
end)

T.test("a review of a create, a delete and a rename marks them; the file list rejects the whole review", function()
  vim.fn.writefile({ "bye" }, H.path("gone.txt"))
  vim.fn.writefile({ "alpha", "beta" }, H.path("old.txt"))
  local patch = table.concat({
    "*** Begin Patch",
    "*** Add File: added.txt",
    "+new file",
    "*** Delete File: gone.txt",
    "*** Update File: old.txt",
    "*** Move to: moved.txt",
    "@@",
    "-alpha",
    "+ALPHA",
    " beta",
    "*** End Patch",
  }, "\n")
  H.push({ { { tool = "apply_patch", id = "p12", input = { patch = patch } } }, { { text = "as you wish" } } })
  local before = #H.requests()
  vim.cmd("Agent reorganise")
  T.wait(10000, function()
    return #vim.api.nvim_list_tabpages() == 2
  end, "the review tab")
  local r = require("agentls.review").current_review()
  local list = vim.api.nvim_buf_get_lines(r.ui.list_buf, 0, -1, false)
  local marks = vim.tbl_map(function(l)
    return l:sub(3, 3) .. " " .. l:match("%] +(.*)$")
  end, list)
  table.sort(marks)
  T.eq(marks, { "A added.txt", "D gone.txt", "R old.txt → moved.txt" }, "the file list")
  -- A delete shows the file on the left and nothing (read-only) on the right.
  for i, f in ipairs(r.files) do
    if f.op == "delete" then
      require("agentls.review").show_file(r, i)
      T.eq(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(r.ui.left_win), 0, -1, false), { "bye" }, "left of a delete")
      T.truthy(not vim.bo[vim.api.nvim_win_get_buf(r.ui.right_win)].modifiable, "a delete cannot be edited")
    end
  end
  H.stub_ui(nil, function()
    return "keep the layout"
  end)
  vim.api.nvim_set_current_win(r.ui.list_win)
  vim.api.nvim_feedkeys("gR", "x", false)
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the model to be told")
  T.truthy(H.request_has(before + 2, "keep the layout"), "the reason reaches the model")
  T.truthy(H.request_has(before + 2, "rejected"), "rejected")
  T.eq(vim.fn.filereadable(H.path("added.txt")), 0, "nothing created")
  T.eq(H.disk("gone.txt"), "bye\n", "nothing deleted")
  T.eq(vim.fn.filereadable(H.path("moved.txt")), 0, "nothing moved")
end)

T.test("the agent's diagnostics tool gets what vim.diagnostic holds", function()
  vim.cmd.edit(H.path("notes.txt"))
  local ns = vim.api.nvim_create_namespace("journey")
  vim.diagnostic.set(ns, 0, { { lnum = 1, col = 0, end_col = 3, message = "shouting two", severity = vim.diagnostic.severity.WARN, source = "lint" } })
  H.push({ { { tool = "diagnostics", id = "d1", input = { path = "notes.txt" } } }, { { text = "seen" } } })
  local before = #H.requests()
  vim.cmd("Agent check")
  T.wait(10000, function()
    return #H.requests() >= before + 2
  end, "the diagnostics to reach the model")
  T.truthy(H.request_has(before + 2, "shouting two"), "the message reaches the model: " .. H.request_text(before + 2):sub(-600))
end)

T.test("a visual selection is sent as the prompt's context", function()
  vim.cmd.edit(H.path("notes.txt"))
  H.push({ { { text = "selected" } } })
  H.stub_ui(nil, function()
    return "explain this"
  end)
  local before = #H.requests()
  -- What a user's `xmap <leader>a <Plug>(agentls-ask)` does.
  vim.api.nvim_win_set_cursor(0, { 2, 1 })
  vim.api.nvim_feedkeys(vim.keycode("vj<Plug>(agentls-ask)"), "x", false)
  T.wait(10000, function()
    return #H.requests() > before
  end, "the request")
  T.truthy(H.request_has(before + 1, "explain this"), "the prompt")
  T.truthy(H.request_has(before + 1, "WO\nth"), "the selected text: " .. H.request_text(before + 1):sub(-400))
end)

T.test(":Agent tells the server the user is writing a prompt (agentls/userTyping) as its prompt opens", function()
  vim.cmd.edit(H.path("notes.txt"))
  local c = H.client()
  local session = require("agentls.state").session(c.id)
  T.truthy(session, "a session from the tests before")
  local sent = {}
  -- The client's own notify, seen on its way out.
  local notify = c.notify
  c.notify = function(self, method, params)
    if method == "agentls/userTyping" then
      table.insert(sent, params)
    end
    return notify(self, method, params)
  end
  local told_when_asked
  H.push({ { { text = "typed" } } })
  H.stub_ui(nil, function()
    told_when_asked = vim.deepcopy(sent)
    return "after typing"
  end)
  local before = #H.requests()
  vim.cmd("Agent")
  T.wait(10000, function()
    return #H.requests() > before
  end, "the request")
  c.notify = nil
  T.eq(told_when_asked, { { sessionId = session.id } }, "agentls/userTyping, once, before the prompt opened")
  T.truthy(H.request_has(before + 1, "after typing"), "the prompt still goes out")
end)

T.test("the chat: a subagent's lines are indented folds of their own under its spawn call", function()
  local chat = require("agentls.chat")
  local session = require("agentls.state").session(H.client().id).id
  local function agent(n)
    return { agentId = "agent-" .. n, sessionId = session .. "-agent-" .. n, parentSessionId = session, parentCallId = "sp" .. n }
  end
  local a1, a2 = agent(1), agent(2)
  local state_before = require("agentls.state").session(H.client().id).state
  chat.on_event({ sessionId = session, kind = "tool_call_start", data = { call_id = "sp1", summary = "spawn_agent: subtask" } })
  chat.on_event({ sessionId = session, kind = "user_input", data = { content = "write sub-a" }, agent = a1 })
  -- The same call id as the parent's: still the subagent's own line.
  chat.on_event({ sessionId = session, kind = "tool_call_start", data = { call_id = "sp1", summary = "write_file sub-a" }, agent = a1 })
  chat.on_event({ sessionId = session, kind = "user_input", data = { content = "write sub-b" }, agent = a2 })
  chat.on_event({ sessionId = session, kind = "tool_call_end", data = { call_id = "sp1", summary = "write_file sub-a", status = "ok", duration_ms = 3 }, agent = a1 })
  chat.on_event({ sessionId = session, kind = "assistant_text_end", data = { text = "wrote sub-a\nfine" }, agent = a1 })
  chat.on_event({ sessionId = session, kind = "processing_end", data = { state = "idle", reason = "completed" }, agent = a1 })
  chat.on_event({ sessionId = session, kind = "processing_end", data = { state = "idle", reason = "failed" }, agent = a2 })
  chat.on_event({ sessionId = session, kind = "tool_call_end", data = { call_id = "sp1", summary = "spawn_agent: subtask", status = "ok", duration_ms = 1 } })
  chat.flush()
  local lines = vim.api.nvim_buf_get_lines(chat.buf(), 0, -1, false)
  local first
  for i, l in ipairs(lines) do
    if l:find("spawn_agent: subtask", 1, true) then
      first = i
    end
  end
  T.truthy(first, "the spawn call's line")
  local got = {}
  for i = first, first + 7 do
    got[#got + 1] = chat.foldexpr(i) .. "|" .. (lines[i] or "")
  end
  T.eq(got, {
    "0|- [ok 1 ms] spawn_agent: subtask",
    ">1|  ▸ agent-1: write sub-a",
    "1|    - [ok 3 ms] write_file sub-a",
    ">1|  ▸ agent-2: write sub-b",
    ">1|    wrote sub-a",
    "1|    fine",
    "1|  agent-1 completed",
    ">1|  agent-2 failed",
  }, "each run of one subagent's lines is a fold, indented under the call")
  T.eq(require("agentls.state").session(H.client().id).state, state_before, "a subagent's end is not the session's")
end)

T.test("the chat: toggles, opens as a float by option, folds command output and reasoning", function()
  local chat = require("agentls.chat")
  -- The fake provider streams no reasoning: this event is handed to the chat directly.
  local session = require("agentls.state").session(H.client().id).id
  chat.on_event({ sessionId = session, kind = "assistant_reasoning_delta", data = { delta = "thinking hard\nstep two" } })
  chat.on_event({ sessionId = session, kind = "warning", data = { message = "context 90% full" } })
  chat.on_event({ sessionId = session, kind = "error", data = { message = "provider said no\ndetails", fatal = false } })
  chat.flush()
  local text = H.chat_text()
  T.contains(text, "⚠ warning: context 90% full")
  T.contains(text, "✗ error: provider said no")
  if chat.is_open() then
    vim.cmd("AgentChat")
  end
  T.truthy(not chat.is_open(), "closed")
  require("agentls.config").set(vim.tbl_deep_extend("force", require("agentls.config").get(), { chat = { layout = "float" } }))
  vim.cmd("AgentChat")
  local win = vim.api.nvim_get_current_win()
  T.eq(vim.api.nvim_win_get_buf(win), chat.buf(), "the chat is focused")
  T.truthy(vim.api.nvim_win_get_config(win).relative ~= "", "a float")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local folds = {}
  for i, l in ipairs(lines) do
    for _, header in ipairs({ "⋮ output of shell", "> _reasoning_" }) do
      if l:find(header, 1, true) and not folds[header] then
        folds[header] = true
        T.eq(chat.foldexpr(i), ">1", header .. " starts a fold")
        T.eq(chat.foldexpr(i + 1), "1", "what follows " .. header .. " is inside it")
        T.truthy(vim.fn.foldclosed(i) ~= -1, "and it is closed")
      end
    end
  end
  T.eq(folds, { ["⋮ output of shell"] = true, ["> _reasoning_"] = true }, "both folds seen")
  -- The whole output of a command is inside its fold (plugin-run and the 7 lines of notes.txt).
  local output_header
  for i, l in ipairs(lines) do
    if l:find("⋮ output of shell: echo plugin-run", 1, true) then
      output_header = i
    end
  end
  T.truthy(output_header, "the output of the first command")
  T.eq(vim.list_slice(lines, output_header + 1, output_header + 2), { "plugin-run", "one" }, "the output")
  T.truthy(
    vim.fn.foldclosedend(output_header) >= output_header + 8,
    ("the fold covers it all: %d..%d"):format(output_header, vim.fn.foldclosedend(output_header))
  )
  T.contains(table.concat(lines, "\n"), "thinking hard\nstep two")
  vim.cmd("AgentChat")
  T.truthy(not chat.is_open(), "toggled off")
  require("agentls.config").set(vim.tbl_deep_extend("force", require("agentls.config").get(), { chat = { layout = "split" } }))
end)

T.test(":AgentTranscript opens the session's transcript", function()
  vim.cmd("AgentTranscript")
  T.truthy(vim.api.nvim_buf_get_name(0):find("/sessions/.*%.jsonl$"), "the transcript file")
  T.contains(table.concat(vim.api.nvim_buf_get_lines(0, 0, 1, false)), "sessionId")
  vim.cmd("tabclose")
end)

T.test("doc/agentls.txt has a tag for every command, option and highlight group", function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/doc", "p")
  local doc = vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h") .. "/doc/agentls.txt"
  vim.fn.writefile(vim.fn.readfile(doc), dir .. "/doc/agentls.txt")
  vim.cmd("helptags " .. dir .. "/doc")
  local tags = {}
  for _, line in ipairs(vim.fn.readfile(dir .. "/doc/tags")) do
    tags[line:match("^[^\t]+")] = true
  end
  local missing = {}
  for name in pairs(vim.api.nvim_get_commands({})) do
    if name:match("^Agent") and not tags[":" .. name] then
      table.insert(missing, ":" .. name)
    end
  end
  local defaults = require("agentls.config").defaults
  for key, value in pairs(defaults) do
    if not tags["agentls-option-" .. key] then
      table.insert(missing, "agentls-option-" .. key)
    end
    if type(value) == "table" and not vim.islist(value) then
      for sub in pairs(value) do
        if not tags[("agentls-option-%s.%s"):format(key, sub)] then
          table.insert(missing, ("agentls-option-%s.%s"):format(key, sub))
        end
      end
    end
  end
  for group in pairs(require("agentls.highlights").groups) do
    if not tags[group] then
      table.insert(missing, group)
    end
  end
  for _, m in ipairs(vim.api.nvim_get_keymap("n")) do
    local plug = m.lhs:match("^<Plug>%((agentls%-[%w-]+)%)$")
    if plug and not tags["<Plug>(" .. plug .. ")"] then
      table.insert(missing, m.lhs)
    end
  end
  T.eq(missing, {}, "tags missing from doc/agentls.txt")
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
