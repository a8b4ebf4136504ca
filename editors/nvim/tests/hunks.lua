-- The review model (hunks.lua) on its own: where hunks land on a buffer the user changed, which
-- hunk is under the cursor, and the resolveReview arguments decisions add up to.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h"))
local hunks = require("agentls.hunks")

local function review(current)
  return hunks.review(1, {
    reviewId = "r1",
    sessionId = "s1",
    callId = "c1",
    files = {
      {
        uri = "file:///w/notes.txt",
        path = "notes.txt",
        op = "modify",
        hunks = {
          { index = 0, oldStart = 1, oldLines = 1, newStart = 1, newLines = 1, oldText = "two\n", newText = "TWO\n" },
          { index = 1, oldStart = 5, oldLines = 1, newStart = 5, newLines = 2, oldText = "six\n", newText = "SIX\nSIX+\n" },
        },
      },
      {
        uri = "file:///w/b.txt",
        path = "b.txt",
        op = "modify",
        hunks = { { index = 0, oldStart = 0, oldLines = 0, newStart = 0, newLines = 1, oldText = "", newText = "top\n" } },
      },
    },
  }, function(uri)
    return uri:find("notes") and current or { "b" }
  end)
end

T.test("hunks land where their old text is, also after lines the user added above", function()
  local r = review({ "zero", "one", "two", "three", "four", "five", "six", "seven" })
  local f = r.files[1]
  T.eq(f.proposed, { "zero", "one", "TWO", "three", "four", "five", "SIX", "SIX+", "seven" }, "proposed")
  T.eq({ f.hunks[1].left, f.hunks[1].right }, { { 2, 3 }, { 2, 3 } }, "hunk 0 shifted by one line")
  T.eq({ f.hunks[2].left, f.hunks[2].right }, { { 6, 7 }, { 6, 8 } }, "hunk 1")
  T.eq(r.files[2].proposed, { "top", "b" }, "an insertion at the top")
  T.eq(r.files[2].hunks[1].right, { 0, 1 }, "its place")
end)

T.test("the hunk under the cursor, on either side", function()
  local f = review({ "one", "two", "three", "four", "five", "six", "seven" }).files[1]
  T.eq(hunks.at(f, "right", 1).index, 0, "right, hunk 0")
  T.eq(hunks.at(f, "right", 6).index, 1, "right, second line of hunk 1")
  T.eq(hunks.at(f, "left", 5).index, 1, "left, hunk 1")
  T.eq(hunks.at(f, "left", 3), nil, "no hunk on an unchanged line")
end)

T.test("decisions add up to resolveReview arguments", function()
  local r = review({ "one", "two", "three", "four", "five", "six", "seven" })
  local f = r.files[1]
  hunks.decide_hunk(f, f.hunks[1], true)
  T.truthy(not hunks.decided(f), "one hunk left")
  hunks.decide_hunk(f, f.hunks[2], false, "leave six")
  T.eq(f.proposed, { "one", "TWO", "three", "four", "five", "six", "seven" }, "the rejected hunk left the proposal")
  T.eq(hunks.label(f), "1/2 hunks")
  T.truthy(not hunks.all_decided(r), "the second file is pending")
  hunks.edit(r.files[2], "mine\nb\n")
  T.truthy(hunks.all_decided(r), "all decided")
  T.eq(hunks.resolution(r), {
    reviewId = "r1",
    decision = "accept",
    files = { { uri = "file:///w/notes.txt", acceptedHunks = { 0 } }, { uri = "file:///w/b.txt", finalText = "mine\nb\n" } },
    feedback = "notes.txt hunk 1: leave six",
  }, "arguments")
end)

T.test("rejecting every file is a rejection with every reason; accepting all lists no file", function()
  local r = review({ "one", "two", "three", "four", "five", "six", "seven" })
  hunks.decide_file(r.files[1], false, "no")
  hunks.decide_file(r.files[2], false)
  T.eq(hunks.resolution(r), { reviewId = "r1", decision = "reject", feedback = "notes.txt: no" }, "rejected")
  T.eq(hunks.resolution(r, true, "stop"), { reviewId = "r1", decision = "reject", feedback = "stop" }, "the whole review")
  r = review({ "one", "two", "three", "four", "five", "six", "seven" })
  hunks.decide_file(r.files[1], true)
  hunks.decide_file(r.files[2], true)
  T.eq(hunks.resolution(r), { reviewId = "r1", decision = "accept" }, "accepted as proposed")
end)

return T.run()
