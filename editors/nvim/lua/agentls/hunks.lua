-- Reviews as data: each file's current and proposed lines, where every hunk sits on both
-- sides, the user's decisions, and the `agentls.resolveReview` arguments they add up to.
-- No windows or buffers here (review.lua shows this model).
local M = {}

--- Text → lines, without the empty piece after a final newline.
function M.lines(text)
  if text == nil or text == "" then
    return {}
  end
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

local function matches(lines, at, expected)
  for i, l in ipairs(expected) do
    if lines[at + i] ~= l then
      return false
    end
  end
  return at >= 0 and at + #expected <= #lines
end

-- Where `old` sits in `lines` (0-based), the match nearest to `hint`, or `hint` when nowhere.
local function locate(lines, old, hint)
  if matches(lines, hint, old) then
    return hint
  end
  for d = 1, #lines do
    if matches(lines, hint - d, old) then
      return hint - d
    end
    if matches(lines, hint + d, old) then
      return hint + d
    end
  end
  return math.max(0, math.min(hint, #lines))
end

--- Places the hunks of a file on `current`: returns the proposed lines (a rejected hunk keeps
--- the current text), and sets each hunk's `left` and `right` ranges ({start, end}, 0-based,
--- end exclusive).
function M.place(current, hunks)
  local proposed, shift, copied = {}, 0, 0
  for _, h in ipairs(hunks) do
    local old = M.lines(h.oldText)
    local new = h.decision == "rejected" and old or M.lines(h.newText)
    local at = math.max(locate(current, old, h.oldStart + shift), copied)
    shift = at - h.oldStart
    for i = copied + 1, at do
      proposed[#proposed + 1] = current[i]
    end
    h.left = { at, at + #old }
    h.right = { #proposed, #proposed + #new }
    vim.list_extend(proposed, new)
    copied = at + #old
  end
  for i = copied + 1, #current do
    proposed[#proposed + 1] = current[i]
  end
  return proposed
end

---@class agentls.ReviewFile
---@field uri string
---@field path string
---@field op string
---@field new_uri string?
---@field hunks table[]
---@field current string[]
---@field proposed string[]
---@field decision string? nil (pending) | "accepted" | "rejected" | "edited" | "hunks"
---@field reason string?
---@field final_text string?

--- The model of one `agentls/review`; `read(uri)` gives a file's current lines.
function M.review(client_id, params, read)
  local review = {
    id = params.reviewId,
    session_id = params.sessionId,
    call_id = params.callId,
    -- A subagent's review: its calls' ids are its own session's.
    agent_session = params.agent and params.agent.sessionId or nil,
    client_id = client_id,
    files = {},
  }
  for _, f in ipairs(params.files or {}) do
    local current = f.op == "create" and {} or read(f.uri)
    local hunks = vim.deepcopy(f.hunks or {})
    local proposed = M.place(current, hunks)
    if f.op == "delete" then
      proposed = {}
      for _, h in ipairs(hunks) do
        h.right = { 0, 0 }
      end
    end
    table.insert(review.files, {
      uri = f.uri,
      path = f.path,
      op = f.op,
      new_uri = f.newUri,
      hunks = hunks,
      current = current,
      proposed = proposed,
    })
  end
  return review
end

--- The hunk of `file` under 0-based `row` on `side` ("left" or "right"), or nil.
function M.at(file, side, row)
  for _, h in ipairs(file.hunks) do
    local s, e = h[side][1], h[side][2]
    if (row >= s and row < e) or (s == e and (row == s or row == s - 1)) then
      return h
    end
  end
end

function M.decided(file)
  return file.decision ~= nil
end

--- Records a hunk decision; the file counts as decided once all its hunks are.
function M.decide_hunk(file, hunk, accepted, reason)
  hunk.decision = accepted and "accepted" or "rejected"
  hunk.reason = reason
  if file.decision == "edited" then
    return
  end
  if file.op ~= "delete" then
    file.proposed = M.place(file.current, file.hunks)
  end
  for _, h in ipairs(file.hunks) do
    if not h.decision then
      file.decision = nil
      return
    end
  end
  file.decision = "hunks"
end

function M.decide_file(file, accepted, reason)
  file.decision = accepted and "accepted" or "rejected"
  file.reason = reason
  for _, h in ipairs(file.hunks) do
    h.decision = file.decision
  end
end

--- The user's own text of the proposed side (nil clears it).
function M.edit(file, text)
  file.final_text = text
  file.decision = text and "edited" or nil
end

function M.all_decided(review)
  for _, f in ipairs(review.files) do
    if not f.decision then
      return false
    end
  end
  return true
end

function M.label(file)
  if file.decision == "hunks" then
    local n = 0
    for _, h in ipairs(file.hunks) do
      n = n + (h.decision == "accepted" and 1 or 0)
    end
    return n == #file.hunks and "accepted" or n == 0 and "rejected" or ("%d/%d hunks"):format(n, #file.hunks)
  end
  return file.decision or "pending"
end

--- The arguments of `agentls.resolveReview` for a fully decided review; `reject_all` (with
--- its reason) rejects the whole review.
function M.resolution(review, reject_all, reason)
  local feedback = {}
  if reason and reason ~= "" then
    table.insert(feedback, reason)
  end
  if reject_all then
    return { reviewId = review.id, decision = "reject", feedback = feedback[1] }
  end
  local files, any_accepted = {}, false
  for _, f in ipairs(review.files) do
    if f.decision == "edited" then
      table.insert(files, { uri = f.uri, finalText = f.final_text })
      any_accepted = true
    elseif f.decision == "rejected" then
      table.insert(files, { uri = f.uri, acceptedHunks = {} })
      if f.reason and f.reason ~= "" then
        table.insert(feedback, ("%s: %s"):format(f.path, f.reason))
      end
    else
      local accepted, rejected = {}, 0
      for _, h in ipairs(f.hunks) do
        if h.decision == "rejected" then
          rejected = rejected + 1
          if h.reason and h.reason ~= "" then
            table.insert(feedback, ("%s hunk %d: %s"):format(f.path, h.index, h.reason))
          end
        else
          table.insert(accepted, h.index)
        end
      end
      any_accepted = any_accepted or #accepted > 0
      if rejected > 0 then
        table.insert(files, { uri = f.uri, acceptedHunks = accepted })
      end
    end
  end
  local text = #feedback > 0 and table.concat(feedback, "\n") or nil
  if not any_accepted then
    return { reviewId = review.id, decision = "reject", feedback = text }
  end
  return { reviewId = review.id, decision = "accept", files = #files > 0 and files or nil, feedback = text }
end

return M
