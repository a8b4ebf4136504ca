-- MCP on Neovim 0.11, the real plugin and server, and a real MCP server nobody here wrote
-- (@modelcontextprotocol/server-everything, installed by scripts/install-mcp-servers): a project
-- whose .mcp.json names it is trusted through the plugin's question; an MCP call is asked about
-- with its arguments, and its answer reaches the model and the chat; :AgentMcp lists the server
-- with its state and tools and restarts it; :checkhealth agentls has its section.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local H = dofile(vim.env.AGENTLS_TEST_DIR .. "/helpers.lua")
local trust = require("agentls.trust")
local state = require("agentls.state")

local servers = assert(vim.env.AGENTLS_TEST_MCP_SERVERS, "AGENTLS_TEST_MCP_SERVERS")
local everything = vim.fs.joinpath(servers, "npm/node_modules/.bin/mcp-server-everything")
T.truthy(vim.fn.executable(everything) == 1, "server-everything is installed: " .. everything)

vim.o.columns, vim.o.lines = 180, 50

local root = vim.fs.joinpath(vim.fn.fnamemodify(H.ws, ":h"), "mcp-project")
vim.fn.mkdir(root .. "/.git", "p")
vim.fn.writefile({ "some text" }, root .. "/file.txt")
vim.fn.writefile({ vim.json.encode({ mcpServers = { everything = { command = everything } } }) }, root .. "/.mcp.json")

local c
T.test("trusting the folder lets its .mcp.json server run", function()
  H.stub_ui(H.choose(trust.TRUST))
  vim.cmd.edit(vim.fs.joinpath(root, "file.txt"))
  local buf = vim.api.nvim_get_current_buf()
  T.wait(10000, function()
    c = vim.lsp.get_clients({ name = "agentls", bufnr = buf })[1]
    return c and c.initialized
  end, "a client for " .. root)
  T.wait(10000, function()
    return (state.trust(root) or {}).state == "trusted"
  end, "the folder to be trusted")
end)

T.test("an MCP call asks with its arguments; allowed, its answer reaches the model and the chat", function()
  local asked = H.stub_ui(H.choose("Allow once"))
  H.push({
    { { tool = "mcp__everything__echo", id = "m1", input = { message = "hello from Neovim" } } },
    { { text = "the server echoed it" } },
  })
  local before = #H.requests()
  vim.cmd("Agent echo through the MCP server")
  T.wait(60000, function()
    return H.chat_text():find("the server echoed it", 1, true) ~= nil
  end, "the final answer in the chat")
  T.eq(#asked.select, 1, "asked once")
  T.contains(asked.select[1].prompt, "agentls wants to call the tool echo of the MCP server everything with")
  T.contains(asked.select[1].prompt, '"message":"hello from Neovim"', "the question shows the arguments")
  T.truthy(H.request_has(before + 2, "Echo: hello from Neovim"), "the model read the server's answer")
  T.contains(H.chat_text(), "everything: echo", "the call's line names the server")
end)

-- Runs :AgentMcp with vim.ui.select stubbed: `pick(items, opts)` answers each question.
local function agent_mcp(pick)
  local asked = H.stub_ui(pick)
  vim.cmd("AgentMcp")
  T.wait(10000, function()
    return #asked.select >= 1
  end, ":AgentMcp's list")
  return asked
end

local notified = ""

local function first_line(items, opts)
  return opts.format_item(items[1])
end

T.test(":AgentMcp lists the server with its state and tools and restarts it", function()
  notified = ""
  local notify = vim.notify
  vim.notify = function(msg, ...)
    notified = notified .. msg .. "\n"
    return notify(msg, ...)
  end
  local shown
  local asked = agent_mcp(function(items, opts)
    if opts.kind == "agentls.mcp_server" then
      shown = first_line(items, opts)
      return items[1]
    end
    return items[1] -- Restart comes first
  end)
  T.eq(#asked.select[1].items, 1, "one server")
  T.truthy(shown:match("^everything  running  %d+ tools$"), "the server's line: " .. tostring(shown))
  T.wait(10000, function()
    return #asked.select >= 2
  end, "the server's actions")
  local labels = vim.tbl_map(function(a)
    return a.label
  end, asked.select[2].items)
  T.eq(labels[1], "Restart", "Restart first")
  T.truthy(vim.tbl_contains(labels, "tool echo (mcp__everything__echo), read-only"), vim.inspect(labels))
  T.contains(asked.select[2].prompt, "MCP server everything: running")
  T.wait(10000, function()
    return notified:find("agentls: the MCP server everything is starting", 1, true) ~= nil
  end, "the restart to be told: " .. notified)
  -- Restarted: it runs again.
  local line
  for _ = 1, 100 do
    agent_mcp(function(items, opts)
      if opts.kind == "agentls.mcp_server" then
        line = first_line(items, opts)
      end
    end)
    if line:match("^everything  running") then
      break
    end
    vim.wait(200)
  end
  T.truthy(line:match("^everything  running  %d+ tools$"), "the server running again: " .. line)
end)

T.test(":checkhealth agentls has an MCP servers section", function()
  vim.cmd("checkhealth agentls")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  T.contains(text, "agentls: MCP servers")
  T.contains(text, "everything: running (" .. everything .. "), tools: echo")
  vim.cmd("bwipeout")
end)

return T.run()
