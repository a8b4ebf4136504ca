-- The review tab: per file the buffer's current text (read-only) beside the proposed text
-- (editable) in diff mode, a file list on top for multi-file reviews, decisions per hunk,
-- per file and for the whole review. Decisions live in the model (hunks.lua); this module
-- shows it, takes the user's actions and sends `agentls.resolveReview` once all is decided.
-- The plugin never writes the files: the accepted change comes back as workspace/applyEdit.
local config = require("agentls.config")
local hunks = require("agentls.hunks")
local protocol = require("agentls.protocol")
local rpc = require("agentls.rpc")
local state = require("agentls.state")

local M = {}

local ns = vim.api.nvim_create_namespace("agentls.review")
local owners = {} ---@type table<integer, {review: string, file: integer?, side: string?}> buffer → what it shows
local OPS = { create = "A", modify = "M", delete = "D", rename = "R" }

local function read(uri)
  local bufnr = require("agentls.server_requests").loaded_buf(uri)
  if bufnr then
    return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  end
  local path = vim.uri_to_fname(uri)
  return vim.fn.filereadable(path) == 1 and vim.fn.readfile(path) or {}
end

local function text_of(lines)
  return #lines == 0 and "" or table.concat(lines, "\n") .. "\n"
end

local function hint()
  local k = config.get().review.keys
  return ("%%#AgentlsReviewHint# ]c/[c hunk · %s/%s accept/reject hunk · %s/%s file · :w keeps your edit"):format(
    k.accept_hunk,
    k.reject_hunk,
    k.accept,
    k.reject
  )
end

local function tab_valid(review)
  return review.ui and review.ui.tab and vim.api.nvim_tabpage_is_valid(review.ui.tab)
end

local function scratch(name, lines, filetype)
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, name)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].bufhidden = "wipe"
  vim.bo[bufnr].swapfile = false
  if filetype then
    vim.bo[bufnr].filetype = filetype
  end
  return bufnr
end

local function render_list(review)
  local ui = review.ui
  if not (ui.list_buf and vim.api.nvim_buf_is_valid(ui.list_buf)) then
    return
  end
  local lines = {}
  for i, f in ipairs(review.files) do
    local name = f.path
    if f.op == "rename" and f.new_uri then
      name = name .. " → " .. vim.fn.fnamemodify(vim.uri_to_fname(f.new_uri), ":.")
    end
    lines[i] = ("%s %s %-12s %s"):format(i == ui.current and ">" or " ", OPS[f.op] or "?", "[" .. hunks.label(f) .. "]", name)
  end
  vim.bo[ui.list_buf].modifiable = true
  vim.api.nvim_buf_set_lines(ui.list_buf, 0, -1, false, lines)
  vim.bo[ui.list_buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(ui.list_buf, ns, 0, -1)
  for i, f in ipairs(review.files) do
    vim.api.nvim_buf_set_extmark(ui.list_buf, ns, i - 1, 0, {
      line_hl_group = hunks.decided(f) and "AgentlsFileDecided" or "AgentlsFilePending",
    })
  end
end

local function render_signs(review, index)
  local f, ui = review.files[index], review.ui
  for _, side in ipairs({ "left", "right" }) do
    local bufnr = ui.bufs[index] and ui.bufs[index][side]
    if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
      vim.api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
      local count = vim.api.nvim_buf_line_count(bufnr)
      for _, h in ipairs(f.hunks) do
        if h.decision then
          local accepted = h.decision == "accepted"
          local row = math.max(0, math.min(h[side][1], count - 1))
          local last = math.max(row, math.min(h[side][2] - 1, count - 1))
          for r = row, last do
            vim.api.nvim_buf_set_extmark(bufnr, ns, r, 0, {
              sign_text = accepted and "✓" or "✗",
              sign_hl_group = accepted and "AgentlsHunkAccepted" or "AgentlsHunkRejected",
            })
          end
        end
      end
    end
  end
end

local function refresh(review)
  if tab_valid(review) then
    render_list(review)
    if review.ui.current then
      render_signs(review, review.ui.current)
    end
  end
end

local function close(review)
  if not tab_valid(review) then
    return
  end
  local tab = review.ui.tab
  if #vim.api.nvim_list_tabpages() == 1 then
    vim.cmd("tabnew")
  end
  vim.cmd("tabclose " .. vim.api.nvim_tabpage_get_number(tab))
  review.ui = nil
end

local function forget(review)
  state.remove_review(review.id)
  close(review)
  for bufnr, owner in pairs(owners) do
    if owner.review == review.id then
      owners[bufnr] = nil
    end
  end
end

local function outcome(review, args)
  if args.decision == "reject" then
    return "review: rejected" .. (args.feedback and (" — " .. args.feedback:gsub("\n", "; ")) or "")
  end
  local parts = {}
  for _, f in ipairs(review.files) do
    table.insert(parts, f.path .. " " .. hunks.label(f))
  end
  return "review: " .. table.concat(parts, ", ") .. (args.feedback and (" — " .. args.feedback:gsub("\n", "; ")) or "")
end

--- Sends the decision once every file is decided (or the whole review is rejected).
local function finish(review, reject_all, reason)
  if not reject_all and not hunks.all_decided(review) then
    refresh(review)
    return false
  end
  local args = hunks.resolution(review, reject_all, reason)
  local c = vim.lsp.get_client_by_id(review.client_id)
  if not c then
    vim.notify("agentls: the server of this review is gone", vim.log.levels.ERROR)
    return false
  end
  review.resolving = true
  rpc.exec(c, protocol.command.resolve_review, args, function(err)
    review.resolving = false
    if not err then
      require("agentls.chat").note({ outcome(review, args) })
      forget(review)
    end
  end)
  return true
end

local function on_proposed_change(review, index)
  local f = review.files[index]
  local bufnr = review.ui and review.ui.bufs[index] and review.ui.bufs[index].right
  if not bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local text = text_of(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
  if text ~= text_of(f.proposed) then
    hunks.edit(f, text)
  elseif f.decision == "edited" then
    hunks.edit(f, nil)
  end
  render_list(review)
end

local function file_buffers(review, index)
  local ui, f = review.ui, review.files[index]
  ui.bufs[index] = ui.bufs[index] or {}
  local b = ui.bufs[index]
  if b.left and vim.api.nvim_buf_is_valid(b.left) then
    return b
  end
  local short = review.id:sub(1, 8)
  local ft = vim.filetype.match({ filename = f.path })
  b.left = scratch(("agentls://review/%s/current/%s"):format(short, f.path), f.current, ft)
  vim.bo[b.left].modifiable = false
  vim.bo[b.left].readonly = true
  local proposed = f.decision == "edited" and hunks.lines(f.final_text) or f.proposed
  b.right = scratch(("agentls://review/%s/proposed/%s"):format(short, f.path), proposed, ft)
  vim.bo[b.right].buftype = "acwrite"
  vim.bo[b.right].modified = false
  if f.op == "delete" then
    vim.bo[b.right].modifiable = false
  end
  owners[b.left] = { review = review.id, file = index, side = "left" }
  owners[b.right] = { review = review.id, file = index, side = "right" }
  local group = vim.api.nvim_create_augroup("agentls.review." .. b.right, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = b.right,
    callback = function()
      on_proposed_change(review, index)
    end,
  })
  -- :w in the proposed side confirms the file as edited (or as proposed when unchanged).
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    group = group,
    buffer = b.right,
    callback = function()
      vim.bo[b.right].modified = false
      M.accept()
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = b.right,
    callback = function()
      owners[b.right] = nil
    end,
  })
  for _, bufnr in ipairs({ b.left, b.right }) do
    M.set_keys(bufnr)
  end
  return b
end

--- Buffer-local keys of review buffers (|agentls-review-keys|).
function M.set_keys(bufnr, list)
  local k = config.get().review.keys
  local function map(lhs, fn, desc)
    if lhs and lhs ~= "" then
      vim.keymap.set("n", lhs, fn, { buffer = bufnr, desc = desc, nowait = true })
    end
  end
  -- Asks for an optional reason, then rejects with it (a cancelled prompt rejects nothing).
  local function with_reason(reject)
    return function()
      vim.ui.input({ prompt = "Reason (optional): " }, function(reason)
        if reason then
          reject(reason)
        end
      end)
    end
  end
  map(k.accept, function()
    M.accept()
  end, "agentls: accept file")
  map(k.reject, with_reason(M.reject), "agentls: reject file")
  if list then
    map(k.open, function()
      M.show_file(nil, vim.api.nvim_win_get_cursor(0)[1])
    end, "agentls: show file")
    return
  end
  map(k.accept_hunk, function()
    M.accept_hunk()
  end, "agentls: accept hunk")
  map(k.reject_hunk, with_reason(M.reject_hunk), "agentls: reject hunk")
end

--- Shows file `index` of the review (of the current tab when nil) in the diff windows.
function M.show_file(review, index)
  review = review or M.current_review()
  if not (review and tab_valid(review) and review.files[index]) then
    return
  end
  local ui = review.ui
  local b = file_buffers(review, index)
  ui.current = index
  vim.api.nvim_win_call(ui.left_win, function()
    vim.cmd("diffoff")
  end)
  vim.api.nvim_win_call(ui.right_win, function()
    vim.cmd("diffoff")
  end)
  vim.api.nvim_win_set_buf(ui.left_win, b.left)
  vim.api.nvim_win_set_buf(ui.right_win, b.right)
  for _, win in ipairs({ ui.left_win, ui.right_win }) do
    vim.api.nvim_win_call(win, function()
      vim.cmd("diffthis")
    end)
    vim.wo[win].signcolumn = "yes:1"
    vim.wo[win].foldenable = false
  end
  vim.wo[ui.right_win].winbar = hint()
  vim.wo[ui.left_win].winbar = "%#AgentlsReviewHint# current: " .. review.files[index].path
  vim.api.nvim_set_current_win(ui.right_win)
  local first = review.files[index].hunks[1]
  if first then
    local count = vim.api.nvim_buf_line_count(b.right)
    pcall(vim.api.nvim_win_set_cursor, ui.right_win, { math.max(1, math.min(first.right[1] + 1, count)), 0 })
  end
  refresh(review)
end

--- Opens (or focuses) the tab of `review`.
function M.open(review)
  if tab_valid(review) then
    vim.api.nvim_set_current_tabpage(review.ui.tab)
    return
  end
  vim.cmd("tabnew")
  local ui = { tab = vim.api.nvim_get_current_tabpage(), bufs = {} }
  review.ui = ui
  local placeholder = vim.api.nvim_get_current_buf()
  vim.bo[placeholder].bufhidden = "wipe"
  ui.left_win = vim.api.nvim_get_current_win()
  vim.cmd("rightbelow vsplit")
  ui.right_win = vim.api.nvim_get_current_win()
  if #review.files > 1 then
    vim.api.nvim_set_current_win(ui.left_win)
    vim.cmd(("topleft %dsplit"):format(#review.files + 1))
    ui.list_win = vim.api.nvim_get_current_win()
    ui.list_buf = scratch(("agentls://review/%s/files"):format(review.id:sub(1, 8)), {})
    vim.bo[ui.list_buf].filetype = "agentls-review"
    vim.api.nvim_win_set_buf(ui.list_win, ui.list_buf)
    vim.wo[ui.list_win].winfixheight = true
    vim.wo[ui.list_win].winbar = "%#AgentlsReviewHint# agentls review: "
      .. #review.files
      .. " files · "
      .. config.get().review.keys.open
      .. " show · "
      .. config.get().review.keys.accept
      .. "/"
      .. config.get().review.keys.reject
      .. " accept/reject all"
    owners[ui.list_buf] = { review = review.id }
    M.set_keys(ui.list_buf, true)
  end
  local first = 1
  for i, f in ipairs(review.files) do
    if not hunks.decided(f) then
      first = i
      break
    end
  end
  M.show_file(review, first)
end

--- The review the current buffer belongs to, with the file index and side.
function M.current_review()
  local owner = owners[vim.api.nvim_get_current_buf()]
  if owner then
    return state.review(owner.review), owner.file, owner.side
  end
end

local function target()
  local review, index, side = M.current_review()
  if review then
    return review, index, side
  end
  local pending = state.reviews()
  return pending[#pending], nil, nil
end

local function next_undecided(review, index)
  local f = review.files[index]
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local _, _, side = M.current_review()
  for _, h in ipairs(f.hunks) do
    if not h.decision and side and h[side][1] > row then
      pcall(vim.api.nvim_win_set_cursor, 0, { h[side][1] + 1, 0 })
      return
    end
  end
  for _, h in ipairs(f.hunks) do
    if not h.decision and side then
      pcall(vim.api.nvim_win_set_cursor, 0, { h[side][1] + 1, 0 })
      return
    end
  end
  if hunks.decided(f) then
    for i, other in ipairs(review.files) do
      if not hunks.decided(other) then
        M.show_file(review, i)
        return
      end
    end
  end
end

local function decide_hunk(accepted, reason)
  local review, index, side = M.current_review()
  if not (review and index) then
    vim.notify("agentls: not in a review's diff window", vim.log.levels.WARN)
    return
  end
  local f = review.files[index]
  local h = hunks.at(f, side, vim.api.nvim_win_get_cursor(0)[1] - 1)
  if not h then
    vim.notify("agentls: no hunk under the cursor", vim.log.levels.WARN)
    return
  end
  local shown = f.proposed
  hunks.decide_hunk(f, h, accepted, reason)
  if f.proposed ~= shown then
    -- A rejected hunk leaves the proposal (an accepted one comes back): the diff shows what lands.
    local bufnr = review.ui.bufs[index].right
    local view = vim.fn.winsaveview()
    vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, f.proposed)
    vim.bo[bufnr].modified = false
    vim.fn.winrestview(view)
  end
  render_signs(review, index)
  if not finish(review) then
    next_undecided(review, index)
  end
end

function M.accept_hunk()
  decide_hunk(true)
end

function M.reject_hunk(reason)
  decide_hunk(false, reason)
end

--- In a file's window: accepts the file (as edited, when it was). In the file list or outside
--- the tab: accepts the whole review (files already decided keep their decision).
function M.accept()
  local review, index = target()
  if not review then
    vim.notify("agentls: no pending review", vim.log.levels.WARN)
    return
  end
  if index then
    local f = review.files[index]
    on_proposed_change(review, index)
    if f.decision ~= "edited" then
      hunks.decide_file(f, true)
    end
    if not finish(review) then
      next_undecided(review, index)
    end
    return
  end
  for _, f in ipairs(review.files) do
    if not hunks.decided(f) then
      hunks.decide_file(f, true)
    end
  end
  finish(review)
end

--- In a file's window: rejects the file. In the file list or outside the tab: rejects the
--- whole review. `reason` goes to the model.
function M.reject(reason)
  local review, index = target()
  if not review then
    vim.notify("agentls: no pending review", vim.log.levels.WARN)
    return
  end
  if index then
    hunks.decide_file(review.files[index], false, reason)
    if not finish(review) then
      next_undecided(review, index)
    end
    return
  end
  finish(review, true, reason)
end

--- A review arrived: keep it and, by `review.auto_open`, show it.
function M.receive(client_id, params)
  local review = hunks.review(client_id, params, read)
  state.add_review(review)
  local paths = vim.tbl_map(function(f)
    return f.path
  end, review.files)
  require("agentls.chat").note({ "review requested: " .. table.concat(paths, ", ") })
  if config.get().review.auto_open then
    vim.schedule(function()
      if state.review(review.id) then
        M.open(review)
      end
    end)
  end
end

--- Reopens the pending review (the latest one, or one picked when there are several).
function M.reopen()
  local pending = state.reviews()
  if #pending == 0 then
    vim.notify("agentls: no pending review", vim.log.levels.INFO)
  elseif #pending == 1 then
    M.open(pending[1])
  else
    vim.ui.select(pending, {
      prompt = "Pending reviews",
      format_item = function(r)
        return table.concat(
          vim.tbl_map(function(f)
            return f.path
          end, r.files),
          ", "
        )
      end,
    }, function(r)
      if r then
        M.open(r)
      end
    end)
  end
end

--- A tool call ended: a review it still had pending was resolved by the server (a cancel).
function M.on_call_end(session_id, call_id, agent_session)
  local review = state.review_of_call(session_id, call_id, agent_session)
  if review and not review.resolving then
    require("agentls.chat").note({ "review closed unanswered: the turn was cancelled or the review timed out" }, "AgentlsWarning")
    vim.schedule(function()
      forget(review)
    end)
  end
end

--- The server of some reviews stopped: they can no longer be answered (a restarted server never
--- gets an answer to them). Nothing of them was applied; the chat says so.
function M.on_client_exit(client_id)
  for _, review in ipairs(state.reviews()) do
    if review.client_id == client_id then
      local paths = table.concat(
        vim.tbl_map(function(f)
          return f.path
        end, review.files),
        ", "
      )
      require("agentls.chat").note(
        { ("review closed: the server stopped before it was answered; nothing of it was applied (%s)"):format(paths) },
        "AgentlsWarning"
      )
      state.remove_review(review.id)
      vim.schedule(function()
        forget(review)
      end)
    end
  end
end

return M
