-- protocol.lua against docs/protocol.md: every method the plugin handles and command it sends
-- is documented, and every field it reads of a payload or a command's answer, or sends in a
-- command's argument, is in the document's examples of that payload: its ```json blocks, its
-- inline objects and signatures (`{sessionId, text}`), and for event data the events table. The
-- few fields documented only in prose are listed below with the sentence that documents them.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local plugin_dir = vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h")
vim.opt.runtimepath:prepend(plugin_dir)
local protocol = require("agentls.protocol")

local doc_path = vim.fs.normalize(plugin_dir .. "/../../docs/protocol.md")
local doc = table.concat(vim.fn.readfile(doc_path), "\n")

-- Object literals: JSON, and the signatures of the prose (`{a, b?: T, c: {d}}`, `[{…}]`,
-- `"x"|"y"`, `…` for elided values). Objects are tables of their keys, lists are lists,
-- strings are strings and anything else is `true`.
local ARROW = "→"

local function skip_space(text, i)
  return text:find("[^%s]", i) or #text + 1
end

local function read_string(text, i)
  local j, out = i + 1, {}
  while j <= #text do
    local ch = text:sub(j, j)
    if ch == "\\" then
      out[#out + 1] = text:sub(j + 1, j + 1)
      j = j + 2
    elseif ch == '"' then
      return table.concat(out), j + 1
    else
      out[#out + 1] = ch
      j = j + 1
    end
  end
  return nil, j
end

local parse

-- Skips the rest of a value (`|"b"|"c"`, a type) up to the `,`, `}` or `]` that ends it.
local function skip_rest(text, i)
  local depth = 0
  while i <= #text do
    local ch = text:sub(i, i)
    if ch == '"' then
      local _, j = read_string(text, i)
      i = j
    else
      if ch == "{" or ch == "[" then
        depth = depth + 1
      elseif ch == "}" or ch == "]" or ch == "," then
        if depth == 0 then
          return i
        end
        if ch ~= "," then
          depth = depth - 1
        end
      end
      i = i + 1
    end
  end
  return i
end

function parse(text, i)
  i = skip_space(text, i)
  local ch = text:sub(i, i)
  if ch == "{" then
    local obj = {}
    i = i + 1
    while true do
      i = skip_space(text, i)
      ch = text:sub(i, i)
      if ch == "}" then
        return obj, i + 1
      elseif ch == "," then
        i = i + 1
      else
        local key
        if ch == '"' then
          key, i = read_string(text, i)
        else
          key = text:match("^[%w_]+", i)
          if not key then
            return nil, i
          end
          i = i + #key
        end
        i = skip_space(text, i)
        if text:sub(i, i) == "?" then
          i = skip_space(text, i + 1)
        end
        local value = true
        if text:sub(i, i) == ":" then
          value, i = parse(text, i + 1)
          if value == nil then
            return nil, i
          end
          i = skip_rest(text, i)
        end
        obj[key] = value
      end
    end
  elseif ch == "[" then
    local list = {}
    i = i + 1
    while true do
      i = skip_space(text, i)
      ch = text:sub(i, i)
      if ch == "]" then
        return list, i + 1
      elseif ch == "," then
        i = i + 1
      elseif ch == "" then
        return nil, i
      else
        local value
        value, i = parse(text, i)
        if value == nil then
          return nil, i
        end
        list[#list + 1] = value
        i = skip_rest(text, i)
      end
    end
  elseif ch == '"' then
    return read_string(text, i)
  elseif ch == "" then
    return nil, i
  end
  return true, skip_rest(text, i)
end

-- Top-level objects of `text` in order, each with its role: "args" (followed by →), "result"
-- (after →) or nil.
local function objects_of(text)
  local out, i = {}, 1
  while true do
    i = skip_space(text, i)
    if i > #text then
      return out
    end
    local after_arrow = false
    if text:sub(i, i + #ARROW - 1) == ARROW then
      after_arrow = true
      i = skip_space(text, i + #ARROW)
    end
    local value
    value, i = parse(text, i)
    if type(value) ~= "table" then
      return out
    end
    out[#out + 1] = { value = value, role = after_arrow and "result" or nil }
    local next_i = skip_space(text, i)
    if text:sub(next_i, next_i + #ARROW - 1) == ARROW and not after_arrow then
      out[#out].role = "args"
    end
  end
end

-- The document: its headings (level, title, where) and every object in it (value, role, where).
local headings, objects, fenced = {}, {}, {}
do
  local pos = 1
  local lines = vim.split(doc, "\n", { plain = true })
  local in_fence, fence_start, fence_is_json, fence_lines = false, nil, false, {}
  for _, line in ipairs(lines) do
    local fence = line:match("^%s*```(%w*)%s*$")
    if fence and not in_fence then
      in_fence, fence_start, fence_is_json, fence_lines = true, pos, fence == "json", {}
    elseif fence and in_fence and fence == "" then
      in_fence = false
      table.insert(fenced, { from = fence_start, to = pos + #line })
      if fence_is_json then
        for _, o in ipairs(objects_of(table.concat(fence_lines, "\n"))) do
          o.where = fence_start
          table.insert(objects, o)
        end
      end
    elseif in_fence then
      table.insert(fence_lines, line)
    else
      local hashes, title = line:match("^(#+) (.*)$")
      if hashes then
        table.insert(headings, { level = #hashes, title = title, where = pos })
      end
    end
    pos = pos + #line + 1
  end
end

-- The prose with fenced blocks and ``double`` spans blanked (positions kept).
local prose = doc
for _, f in ipairs(fenced) do
  prose = prose:sub(1, f.from - 1) .. (" "):rep(f.to - f.from) .. prose:sub(f.to)
end
prose = prose:gsub("``.-``", function(s)
  return (" "):rep(#s)
end)

-- Inline objects: a span `{…}` after → is a result, one followed by → (before the next span)
-- an argument.
do
  local spans = {}
  for from, text, to in prose:gmatch("()`([^`]*)`()") do
    spans[#spans + 1] = { from = from, text = text, to = to }
  end
  for k, span in ipairs(spans) do
    if span.text:match("^{") then
      local value = parse(span.text, 1)
      if type(value) == "table" then
        local before = prose:sub(spans[k - 1] and spans[k - 1].to or 1, span.from - 1)
        local after = prose:sub(span.to, spans[k + 1] and spans[k + 1].from - 1 or #prose)
        local role = before:find(ARROW, 1, true) and "result" or after:find(ARROW, 1, true) and "args" or nil
        table.insert(objects, { value = value, role = role, where = span.from })
      end
    end
  end
end

-- The extent of each heading's section (up to the next heading of its level or above).
local function extent(h)
  for _, other in ipairs(headings) do
    if other.where > h.where and other.level <= h.level then
      return h.where, other.where
    end
  end
  return h.where, #doc + 1
end

local function slug(title)
  return (title:lower():gsub("[^%w%s-]", ""):gsub("%s", "-"))
end

-- Name (a method or command) → the sections that document it: a heading that names it, and the
-- section the contents list points to for it.
local sections = {}
do
  local function add(name, h)
    sections[name] = sections[name] or {}
    table.insert(sections[name], h)
  end
  for _, h in ipairs(headings) do
    for name in h.title:gmatch("`([^`]+)`") do
      add(name, h)
    end
  end
  local contents_from, contents_to
  for _, h in ipairs(headings) do
    if h.title == "Contents" then
      contents_from, contents_to = extent(h)
    end
  end
  local contents = doc:sub(contents_from, contents_to - 1):gsub("\n%s+", " ")
  for anchor, names in contents:gmatch("%]%(#([%w-]+)%)%s*%(([^)]*)%)") do
    for _, h in ipairs(headings) do
      if slug(h.title) == anchor then
        for name in names:gmatch("`([^`]+)`") do
          add(name, h)
        end
      end
    end
  end
end

local function objects_in(h, role_ok)
  local from, to = extent(h)
  local out = {}
  for _, o in ipairs(objects) do
    if o.where >= from and o.where < to and role_ok(o.role) then
      table.insert(out, o.value)
    end
  end
  return out
end

local function objects_where(pred)
  local out = {}
  for _, o in ipairs(objects) do
    if pred(o.value) then
      table.insert(out, o.value)
    end
  end
  return out
end

-- The paths of `shape`'s fields that none of `docs` (objects) has.
local function missing(shape, docs, path, out)
  out = out or {}
  for name, field in pairs(shape) do
    local where = (path or "") .. name
    local values = {}
    for _, d in ipairs(docs) do
      if type(d) == "table" and d[name] ~= nil then
        values[#values + 1] = d[name]
      end
    end
    if #values == 0 then
      table.insert(out, where)
    elseif type(field) == "table" and field[1] then
      local items = {}
      for _, v in ipairs(values) do
        if type(v) == "table" then
          vim.list_extend(items, v)
        end
      end
      missing(field[1], items, where .. "[].", out)
    elseif type(field) == "table" then
      missing(field, values, where .. ".", out)
    end
  end
  table.sort(out)
  return out
end

-- Fields documented in prose only (no example shows them yet), with the sentence that does.
local function said(sentence)
  local flat = doc:gsub("%s+", " ")
  T.truthy(flat:find(sentence, 1, true), "docs/protocol.md no longer says: " .. sentence)
end

local function is_event(v)
  return type(v.kind) == "string" and v.data ~= nil and v.sessionId ~= nil
end

local function subagent()
  local events = objects_where(function(v)
    return is_event(v) and type(v.agent) == "table"
  end)
  T.truthy(#events > 0, "docs/protocol.md has a subagent's event")
  return events[1].agent
end

T.test("the checker reads JSON and signatures, and names what is missing", function()
  T.eq(parse('{"a": "x", "b": [{"c": 1}, …], "d": null}', 1), { a = "x", b = { { c = true }, true }, d = true }, "JSON")
  T.eq(
    parse('{sessionId?: string, files?: [{uri, acceptedHunks?: [int]}], op: "a"|"b", context?: {uri: string}}', 1),
    { sessionId = true, files = { { uri = true, acceptedHunks = { true } } }, op = "a", context = { uri = true } },
    "a signature"
  )
  T.eq(
    missing({ a = true, b = { { c = true, d = true } }, e = { f = true } }, { { a = 1, b = { { c = 1 } } }, { e = { g = 1 } } }),
    { "b[].d", "e.f" },
    "the missing fields"
  )
end)

T.test("every method the plugin handles has its place in docs/protocol.md", function()
  for _, method in pairs(protocol.method) do
    T.truthy(sections[method], method .. " is in no heading or contents entry of docs/protocol.md")
  end
end)

T.test("every notification the plugin sends is documented, with every field it may send", function()
  for _, method in pairs(protocol.notification) do
    T.truthy(sections[method], method .. " is in no heading or contents entry of docs/protocol.md")
    local params = {}
    for _, v in ipairs(objects_where(function(v)
      return v.method == method
    end)) do
      table.insert(params, v.params)
    end
    T.truthy(#params > 0, "docs/protocol.md has an example of " .. method)
    T.eq(missing(protocol.notification_params[method], params), {}, method)
  end
end)

T.test("every command the plugin sends has its place in docs/protocol.md", function()
  for _, command in pairs(protocol.command) do
    T.truthy(sections[command], command .. " is in no heading or contents entry of docs/protocol.md")
  end
end)

T.test("agentls/event: every field and every kind's data field the plugin reads is documented", function()
  local events = objects_where(is_event)
  T.truthy(#events > 0, "docs/protocol.md has events")
  T.eq(missing(protocol.params[protocol.method.event], events), {}, "agentls/event fields")
  -- The events table: "| `kind` | `field`, `field` … |".
  local events_section = assert(sections[protocol.method.event], "the events section")[1]
  local from, to = extent(events_section)
  local table_rows = {}
  for kind, cell in doc:sub(from, to - 1):gmatch("\n| `([%w_]+)` | ([^\n]*) |") do
    local row = {}
    for name in cell:gmatch("`([%w_]+)`") do
      row[name] = true
    end
    table_rows[kind] = row
  end
  local gaps = {}
  for kind, shape in pairs(protocol.event_data) do
    local docs = { table_rows[kind] }
    for _, e in ipairs(events) do
      if e.kind == kind then
        table.insert(docs, e.data)
      end
    end
    for _, field in ipairs(missing(shape, docs)) do
      table.insert(gaps, kind .. ".data." .. field)
    end
  end
  table.sort(gaps)
  T.eq(gaps, {}, "event data the plugin reads that no example or table row documents")
end)

T.test("agentls/review, agentls/permission, agentls/trustRequired: every field the plugin reads is documented", function()
  local agent = subagent()
  said("`agentls/review` and `agentls/permission` of a subagent's call carry the same `agent` object")
  said("(then `newUri` is the target)")
  local reviews = objects_where(function(v)
    return v.reviewId ~= nil and v.files ~= nil and v.sessionId ~= nil
  end)
  table.insert(reviews, { agent = agent, files = { { newUri = true } } })
  T.eq(missing(protocol.params[protocol.method.review], reviews), {}, "agentls/review")
  local permissions = objects_where(function(v)
    return v.requestId ~= nil and v.options ~= nil
  end)
  table.insert(permissions, { agent = agent })
  T.eq(missing(protocol.params[protocol.method.permission], permissions), {}, "agentls/permission")
  local trust = objects_where(function(v)
    return v.rootUri ~= nil and v.ignored ~= nil
  end)
  T.eq(missing(protocol.params[protocol.method.trust_required], trust), {}, "agentls/trustRequired")
end)

T.test("agentls/saveDocuments and agentls/diagnostics: every field the plugin reads is documented", function()
  for _, method in ipairs({ protocol.method.save_documents, protocol.method.diagnostics }) do
    local docs = {}
    for _, h in ipairs(sections[method] or {}) do
      vim.list_extend(
        docs,
        vim.tbl_filter(function(v)
          return v.files == nil
        end, objects_in(h, function()
          return true
        end))
      )
    end
    T.eq(missing(protocol.params[method], docs), {}, method)
  end
end)

-- The objects documenting `command`'s argument or answer (`role`) in its sections; the
-- `{"command": …, "arguments": [{…}]}` examples anywhere document its argument too.
local function command_docs(command, role)
  local docs = {}
  for _, h in ipairs(sections[command] or {}) do
    for _, v in
      ipairs(objects_in(h, function(r)
        return r == role or r == nil
      end))
    do
      if v.command == nil then
        table.insert(docs, v)
      end
    end
  end
  if role == "args" then
    for _, v in
      ipairs(objects_where(function(v)
        return v.command == command and type(v.arguments) == "table"
      end))
    do
      vim.list_extend(docs, v.arguments)
    end
  end
  return docs
end

T.test("every field the plugin sends in a command's argument is documented for that command", function()
  local gaps = {}
  for command, shape in pairs(protocol.command_args) do
    for _, field in ipairs(missing(shape, command_docs(command, "args"))) do
      table.insert(gaps, command .. ": " .. field)
    end
  end
  table.sort(gaps)
  T.eq(gaps, {}, "arguments the document does not show")
end)

T.test("every field the plugin reads of a command's answer is documented for that command", function()
  said("→ the session's `listSessions` entry")
  said("After a compaction the conversation starts with `{\"kind\": \"summary\"")
  local sessions = {}
  for _, v in ipairs(command_docs(protocol.command.list_sessions, "result")) do
    vim.list_extend(sessions, type(v.sessions) == "table" and v.sessions or {})
  end
  local summary = vim.tbl_filter(function(v)
    return v.kind == "summary"
  end, command_docs(protocol.command.history, "result"))
  local prose = {
    [protocol.command.configure] = sessions,
    [protocol.command.history] = { { entries = summary } },
  }
  local gaps = {}
  for command, shape in pairs(protocol.command_result) do
    local docs = vim.list_extend(command_docs(command, "result"), prose[command] or {})
    for _, field in ipairs(missing(shape, docs)) do
      table.insert(gaps, command .. ": " .. field)
    end
  end
  table.sort(gaps)
  T.eq(gaps, {}, "answers' fields the document does not show")
end)

return T.run()
