-- The chat as data: the `agentls/event` stream, and the plugin's own notes, folded into the
-- lines of an append-only transcript with each line's fold level, line highlight and sign.
-- No buffer, window or timer here (chat.lua renders the model, and batches what it is given).
-- Lines are only ever appended, except the one line of each tool call, which shows the call's
-- outcome when it ends. A subagent's events (marked `agent`) are whole indented lines (its task,
-- calls, answer, end), each run of one subagent's lines a fold of its own; they never stream
-- into the session's text.
local E = require("agentls.protocol").event

local M = {}

---@class agentls.ChatTool
---@field line integer
---@field summary string
---@field session string?
---@field indent string before a subagent's call
---@field running boolean?

---@class agentls.ChatModel
---@field lines string[] the transcript, as the buffer holds it (an empty chat is one empty line)
---@field levels table<integer, string> line → 'foldexpr' level ("0" when absent)
---@field highlights table<integer, string> line → line highlight group
---@field signs table<integer, {[1]: string, [2]: string}> line → sign text and its highlight group
---@field changed table<integer, true> lines changed since take_changes()
---@field tools table<string, agentls.ChatTool> a tool call's line, by call id (a subagent's: "<its key>/<call id>")
---@field block {kind: string, key: string?}? the block streamed text goes into
---@field session string? the session whose events the chat shows last
---@field agent_run string? the subagent whose fold the last lines opened
---@field turns table<string, table<integer, integer>> each session's turns: turn id → its "## You" line
local Chat = {}
Chat.__index = Chat

M.SIGNS = {
  running = { "…", "AgentlsToolRunning" },
  ok = { "✓", "AgentlsToolOk" },
  error = { "✗", "AgentlsToolError" },
  cancelled = { "⊘", "AgentlsToolCancelled" },
  interrupted = { "⊘", "AgentlsToolCancelled" },
}

---@return agentls.ChatModel
function M.new()
  return setmetatable({ lines = { "" }, levels = {}, highlights = {}, signs = {}, changed = {}, tools = {}, turns = {} }, Chat)
end

--- The lines changed since the last call (sorted), and forgets them.
---@return integer[]
function Chat:take_changes()
  local lines = vim.tbl_keys(self.changed)
  table.sort(lines)
  self.changed = {}
  return lines
end

--- The first line of `s`, at most 200 bytes.
function M.first_line(s)
  return (tostring(s or ""):match("^[^\n]*") or ""):sub(1, 200)
end

local first_line = M.first_line

--- The first line of a warning's or error's message, whole: what the user should do comes at
--- its end ("… unknown issuer … set SSL_CERT_FILE or [network] ca_file").
local function notice_line(s)
  return tostring(s or ""):match("^[^\n]*") or ""
end

local function tool_line(summary, status, duration_ms, detail)
  local label = status
  if duration_ms then
    label = ("%s %d ms"):format(status, duration_ms)
  end
  local line = ("- [%s] %s"):format(label, summary)
  if detail and detail ~= "" then
    line = line .. " — " .. detail
  end
  return line
end

-- Editing the transcript.

function Chat:set_line(l, text)
  self.lines[l] = text
  self.changed[l] = true
end

function Chat:highlight(l, group)
  self.highlights[l] = group
  self.changed[l] = true
end

function Chat:sign(l, sign)
  self.signs[l] = sign
  self.changed[l] = true
end

function Chat:is_empty()
  return #self.lines == 1 and self.lines[1] == ""
end

-- Appends text at the end of the last line; newlines in it start new lines (at fold `level`).
function Chat:append_text(text, level)
  local n = #self.lines
  local pieces = vim.split(text, "\n", { plain = true })
  self:set_line(n, self.lines[n] .. pieces[1])
  for i = 2, #pieces do
    if level then
      self.levels[n + i - 1] = level
    end
    self:set_line(n + i - 1, pieces[i])
  end
end

-- Appends whole lines after the last one (which is replaced when it is empty); `fold` gives
-- the fold level of each new line. Returns the line number of the first.
function Chat:append_lines(lines, fold)
  local n = #self.lines
  local first = self.lines[n] == "" and n or n + 1
  for i, text in ipairs(lines) do
    local l = first + i - 1
    self.levels[l] = fold and fold[i] or nil -- a replaced empty line may have been in a fold
    self.highlights[l], self.signs[l] = nil, nil
    self:set_line(l, text)
  end
  return first
end

-- Whole lines of their own (closing any streamed block), highlighted with `group`.
function Chat:add_lines(lines, group, fold)
  self.block = nil
  local first = self:append_lines(lines, fold)
  if group then
    for l = first, first + #lines - 1 do
      self:highlight(l, group)
    end
  end
  return first
end

-- Starts a block of streamed text of `kind` ("text", "reasoning", "output") unless it is open.
function Chat:enter_block(kind, key, header)
  local b = self.block
  if b and b.kind == kind and b.key == key then
    return
  end
  self.block = { kind = kind, key = key }
  local n = #self.lines
  if header then
    local l = self:append_lines({ header, "" }, { ">1", "1" })
    self:highlight(l, kind == "reasoning" and "AgentlsReasoning" or "AgentlsOutput")
  elseif self.lines[n] ~= "" then
    self:append_text("\n")
  elseif self.levels[n] then
    -- The empty line a folded block (reasoning, output) ended with: the text is not folded.
    self.levels[n] = nil
    self.changed[n] = true
  end
end

-- The events of another session start under a header line.
function Chat:enter_session(session)
  if not session or self.session == session then
    return
  end
  self.session = session
  self.block, self.agent_run = nil, nil
  if not self:is_empty() then
    self:append_lines({ "", ("── session %s ──"):format(session:sub(1, 8)), "" })
  end
end

function Chat:tool_start(call_id, summary, session)
  local l = self:add_lines({ tool_line(summary, "running") })
  self:sign(l, M.SIGNS.running)
  self.tools[call_id] = { line = l, summary = summary, session = session, indent = "", running = true }
end

function Chat:tool_end(d)
  local summary = d.summary or d.tool_name
  local text = tool_line(summary, d.status, d.duration_ms, d.status ~= "ok" and first_line(d.error) or nil)
  local sign = M.SIGNS[d.status] or M.SIGNS.error
  local tool = self.tools[d.call_id]
  if tool then
    tool.running = nil
    self:set_line(tool.line, text)
    self:sign(tool.line, sign)
  else
    self:sign(self:add_lines({ text }), sign)
  end
  if self.block and self.block.kind == "output" and self.block.key == d.call_id then
    self.block = nil
  end
end

--- What a `turn_limit` event says.
function M.limit_text(d)
  if d.round then
    return ("⚠ turn limit: stopped after %d tool rounds for this input"):format(d.round)
  elseif d.steps then
    return ("⚠ step limit: stopped after %d model requests for this input"):format(d.steps)
  elseif d.time_limit_secs then
    return ("⚠ time limit: stopped after %d s for this input"):format(d.time_limit_secs)
  end
  return ("⚠ turn limit: the session reached %s model turns"):format(tostring(d.total_turns or "its"))
end

--- What a `compaction` event says.
function M.compaction_text(d)
  local why = ({ manual = "as asked", auto = "the context window was filling up", overflow = "the provider found it too long" })[d.trigger]
    or tostring(d.trigger)
  return ("⟲ compacted the conversation (%s): %d earlier messages summarised by %s, %d kept; ~%d → ~%d tokens"):format(
    why,
    d.messages_summarized or 0,
    tostring(d.model),
    d.messages_kept or 0,
    d.tokens_before or 0,
    d.tokens_after or 0
  )
end

--- The header of a user's input: with its turn's id (what `:AgentUndo [turn]` takes), marked
--- when the turn is undone.
function M.you_line(turn_id, undone)
  if not turn_id then
    return "## You"
  end
  return ("## You · turn %d%s"):format(turn_id, undone and " · undone" or "")
end

-- Remembers the header line of `session`'s turn `turn_id`.
function Chat:turn_line(session, turn_id, line)
  if turn_id and session then
    self.turns[session] = self.turns[session] or {}
    self.turns[session][turn_id] = line
  end
end

--- Marks `session`'s turns in `undone` undone (and the others not) on their header lines.
function Chat:mark_undone(session, undone)
  local set = {}
  for _, id in ipairs(undone or {}) do
    set[id] = true
  end
  for id, line in pairs(self.turns[session] or {}) do
    local text = M.you_line(id, set[id])
    if self.lines[line] ~= text then
      self:set_line(line, text)
      self:highlight(line, set[id] and "AgentlsUndone" or nil)
    end
  end
end

-- The session's own events, by kind: `on[kind](chat, data, session_id)`.
local on = {}
on[E.user_input] = function(c, d, session)
  local first = c:add_lines(vim.list_extend({ "", M.you_line(d.turn_id), "" }, vim.split(d.content or "", "\n", { plain = true })))
  c:turn_line(session, d.turn_id, first + 1)
end
on[E.undo_state] = function(c, d, session)
  c:mark_undone(session, d.undone)
end
on[E.text_start] = function(c, d)
  c:add_lines({ "", ("## agentls (%s)"):format(d.model or "model"), "", "" })
end
on[E.text_delta] = function(c, d)
  c:enter_block("text")
  c:append_text(d.delta or "")
end
on[E.reasoning_delta] = function(c, d)
  c:enter_block("reasoning", nil, "> _reasoning_")
  c:append_text(d.delta or "", "1")
end
on[E.tool_start] = function(c, d, session)
  c:tool_start(d.call_id, d.summary or d.tool_name, session)
end
on[E.tool_output] = function(c, d)
  local tool = c.tools[d.call_id]
  c:enter_block("output", d.call_id, "  ⋮ output of " .. (tool and tool.summary or tostring(d.call_id)))
  c:append_text(d.delta or "", "1")
end
on[E.tool_end] = function(c, d)
  c:tool_end(d)
end
on[E.steering] = function(c, d)
  c:add_lines({ "", "> steered: " .. first_line(d.content) })
end
on[E.warning] = function(c, d)
  c:add_lines({ "⚠ warning: " .. notice_line(d.message) }, "AgentlsWarning")
end
on[E.error] = function(c, d)
  c:add_lines({ "✗ error: " .. notice_line(d.message) }, "AgentlsError")
end
on[E.loop_detection] = function(c, d)
  c:add_lines({ "⚠ " .. first_line(d.message) }, "AgentlsWarning")
end
on[E.turn_limit] = function(c, d)
  c:add_lines({ M.limit_text(d) }, "AgentlsWarning")
end
on[E.compaction] = function(c, d)
  c:add_lines({ "", M.compaction_text(d) })
end
on[E.processing_end] = function(c, d)
  if d.reason and d.reason ~= "completed" then
    c:add_lines({ ("_(%s)_"):format(d.reason) })
  end
end
on[E.config_changed] = function(c, d)
  c:add_lines({
    ("_model %s · effort %s · approval %s_"):format(tostring(d.model), tostring(d.reasoning_effort or "default"), tostring(d.approval)),
  })
end
on[E.project_docs_reloaded] = function(c, d)
  c:add_lines({ "_" .. first_line(d.message) .. "_" })
end

-- A subagent's lines: a fold of their own, continued while the same subagent goes on. With
-- `call`, the first line is that call's, shown as running.
function Chat:agent_lines(key, lines, group, call)
  self.block = nil
  local fold = {}
  for i = 1, #lines do
    fold[i] = (i == 1 and self.agent_run ~= key) and ">1" or "1"
  end
  local first = self:append_lines(lines, fold)
  if group then
    for l = first, first + #lines - 1 do
      self:highlight(l, group)
    end
  end
  if call then
    self:sign(first, M.SIGNS.running)
    call.line, call.running = first, true
    self.tools[key .. "/" .. call.id] = call
    call.id = nil
  end
  self.agent_run = key
end

-- A subagent's event as indented lines ("  " per level: its session id is its parent's plus
-- `-agent-N`).
function Chat:agent_event(agent, kind, d, session)
  local depth = select(2, tostring(agent.parentSessionId or ""):gsub("%-agent%-", ""))
  local indent = ("  "):rep(1 + depth)
  local id, key = agent.agentId or "agent", agent.sessionId or agent.agentId or "agent"
  if kind == E.user_input then
    self:agent_lines(key, { ("%s▸ %s: %s"):format(indent, id, first_line(d.content)) })
  elseif kind == E.tool_start then
    local summary = d.summary or d.tool_name
    self:agent_lines(
      key,
      { indent .. "  " .. tool_line(summary, "running") },
      nil,
      { id = d.call_id, summary = summary, session = session, indent = indent .. "  " }
    )
  elseif kind == E.tool_end then
    local summary = d.summary or d.tool_name
    local tool = self.tools[key .. "/" .. tostring(d.call_id)]
    if not tool then
      return self:agent_lines(key, { indent .. "  " .. tool_line(summary, d.status, d.duration_ms) })
    end
    local detail = d.status ~= "ok" and first_line(d.error) or nil
    tool.running = nil
    self:set_line(tool.line, indent .. "  " .. tool_line(summary, d.status, d.duration_ms, detail))
    self:sign(tool.line, M.SIGNS[d.status] or M.SIGNS.error)
  elseif kind == E.text_end and d.text and d.text ~= "" and d.text ~= vim.NIL then
    local out = {}
    for _, l in ipairs(vim.split(d.text, "\n", { plain = true })) do
      out[#out + 1] = indent .. "  " .. l
    end
    self:agent_lines(key, out)
  elseif kind == E.processing_end then
    self:agent_lines(key, { ("%s%s %s"):format(indent, id, d.reason or "done") })
  elseif kind == E.error then
    self:agent_lines(key, { ("%s✗ %s error: %s"):format(indent, id, notice_line(d.message)) }, "AgentlsError")
  elseif kind == E.session_end then
    self:agent_lines(key, { ("%s%s closed"):format(indent, id) })
  end
end

--- Folds one `agentls/event` into the chat.
function Chat:event(event)
  local d = event.data or {}
  if event.agent then
    self:enter_session(event.sessionId)
    return self:agent_event(event.agent, event.kind, d, event.sessionId)
  end
  local handler = on[event.kind]
  if handler then
    self:enter_session(event.sessionId)
    self.agent_run = nil
    handler(self, d, event.sessionId)
  end
end

--- Lines of the plugin's own (review outcomes, resumed sessions), highlighted with `group`.
function Chat:note(lines, group)
  self.agent_run = nil
  self:add_lines(lines, group)
end

--- The server of `session` stopped: its calls shown as running never end; they are marked
--- interrupted.
function Chat:interrupted(session)
  self.agent_run = nil
  for _, tool in pairs(self.tools) do
    if tool.running and tool.session == session then
      tool.running = nil
      self:set_line(tool.line, tool.indent .. tool_line(tool.summary, "interrupted"))
      self:sign(tool.line, M.SIGNS.interrupted)
    end
  end
end

--- A session's conversation (`entries` of `agentls.history`); `folded`: in a closed fold under
--- its header line (after a restart, when the chat above already shows it); `undone`: the
--- turns undone now.
function Chat:history(session_id, entries, folded, undone)
  local lines = { "", ("── history of session %s ──"):format(session_id:sub(1, 8)) }
  local turns = {} -- turn id → its header's index in `lines`
  for _, e in ipairs(entries) do
    if e.kind == "user" then
      vim.list_extend(lines, { "", M.you_line(e.turnId), "" })
      if e.turnId then
        turns[e.turnId] = #lines - 1
      end
      vim.list_extend(lines, vim.split(e.text or "", "\n", { plain = true }))
    elseif e.kind == "assistant" then
      if e.text and e.text ~= "" and e.text ~= vim.NIL then
        vim.list_extend(lines, { "", "## agentls", "" })
        vim.list_extend(lines, vim.split(e.text, "\n", { plain = true }))
      end
      for _, call in ipairs(e.toolCalls or {}) do
        table.insert(lines, "- " .. (call.summary or call.toolName or "tool"))
      end
    elseif e.kind == "tool_result" and e.isError then
      -- The first line says why (also "This call never finished: the agentls server stopped …").
      local why = e.output ~= vim.NIL and first_line(e.output) or ""
      table.insert(lines, ("  ✗ %s failed%s"):format(e.toolName or "tool", why ~= "" and (": " .. why) or ""))
    elseif e.kind == "steering" then
      table.insert(lines, "> steered: " .. (e.text or ""))
    elseif e.kind == "summary" then
      table.insert(lines, ("⟲ earlier conversation (%d messages), as summarised for the model:"):format(e.turnsSummarized or 0))
      vim.list_extend(lines, vim.split(e.text or "", "\n", { plain = true }))
    end
  end
  table.insert(lines, "")
  local fold
  if folded then
    fold = { [2] = ">1" }
    for i = 3, #lines - 1 do
      fold[i] = "1"
    end
  end
  self.agent_run = nil
  local first = self:add_lines(lines, nil, fold)
  for id, index in pairs(turns) do
    self:turn_line(session_id, id, first + index - 1)
  end
  self:mark_undone(session_id, undone)
end

return M
