-- The plugin's modules form no import circle: every `require("agentls…")` in lua/agentls, at
-- the top of a file or inside a function, is an edge, and the graph has no cycle (a circle is
-- what made client.lua and the modules it calls untestable apart).
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local lua_dir = vim.fn.fnamemodify(vim.env.AGENTLS_TEST_DIR, ":h") .. "/lua/agentls"

-- module → the modules it requires
local function graph()
  local edges = {}
  for name, kind in vim.fs.dir(lua_dir) do
    if kind == "file" and name:match("%.lua$") then
      local module = name == "init.lua" and "agentls" or ("agentls." .. name:gsub("%.lua$", ""))
      edges[module] = {}
      local text = table.concat(vim.fn.readfile(lua_dir .. "/" .. name), "\n")
      for required in text:gmatch("require%s*%(?%s*[\"'](agentls[%w_.]*)[\"']") do
        if required ~= module and not vim.tbl_contains(edges[module], required) then
          table.insert(edges[module], required)
        end
      end
      table.sort(edges[module])
    end
  end
  return edges
end

-- The first cycle found, as a path ending where it started; nil when there is none.
local function cycle(edges)
  local state, stack = {}, {}
  local function visit(m)
    state[m] = "open"
    table.insert(stack, m)
    for _, n in ipairs(edges[m] or {}) do
      if state[n] == "open" then
        local path = {}
        for i = #stack, 1, -1 do
          table.insert(path, 1, stack[i])
          if stack[i] == n then
            break
          end
        end
        table.insert(path, n)
        return path
      elseif not state[n] then
        local found = visit(n)
        if found then
          return found
        end
      end
    end
    table.remove(stack)
    state[m] = "done"
  end
  local names = vim.tbl_keys(edges)
  table.sort(names)
  for _, m in ipairs(names) do
    if not state[m] then
      local found = visit(m)
      if found then
        return found
      end
    end
  end
end

T.test("the cycle finder finds a circle through a lazy require", function()
  T.eq(cycle({ a = { "b" }, b = { "c" }, c = { "a" } }), { "a", "b", "c", "a" }, "a circle")
  T.eq(cycle({ a = { "b", "c" }, b = { "c" }, c = {} }), nil, "a diamond is no circle")
end)

T.test("lua/agentls has no import circle", function()
  local edges = graph()
  T.truthy(vim.tbl_contains(edges["agentls.client"], "agentls.review"), "client's lazy require of review is seen")
  local found = cycle(edges)
  T.eq(found and table.concat(found, " → "), nil, "an import circle")
end)

T.test("the models (review, chat) and the protocol mirror require no editor module", function()
  local edges = graph()
  local allowed = { ["agentls.protocol"] = true }
  for _, model in ipairs({ "agentls.protocol", "agentls.hunks", "agentls.chat_model" }) do
    for _, required in ipairs(edges[model] or {}) do
      T.truthy(allowed[required], ("%s requires %s"):format(model, required))
    end
  end
end)

return T.run()
