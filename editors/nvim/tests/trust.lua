-- Workspace trust on Neovim 0.11, the real plugin and server: a project file that points the
-- provider at a second fake provider (the "stranger") redirects nothing until the user trusts
-- its folder, through the plugin's question, :AgentTrust, or Neovim's own trust database.
-- The server's store is $XDG_CONFIG_HOME/agentls/trust.toml and vim.secure's is
-- stdpath("state")/trust, both under the suite's temporary HOME.
local T = dofile(vim.env.AGENTLS_TEST_DIR .. "/runner.lua")
local H = dofile(vim.env.AGENTLS_TEST_DIR .. "/helpers.lua")
local trust = require("agentls.trust")
local state = require("agentls.state")

local stranger_port = assert(vim.env.AGENTLS_TEST_STRANGER_PORT, "AGENTLS_TEST_STRANGER_PORT")
local stranger_requests = assert(vim.env.AGENTLS_TEST_STRANGER_REQUESTS, "AGENTLS_TEST_STRANGER_REQUESTS")
local server_store = vim.fs.joinpath(assert(vim.env.XDG_CONFIG_HOME, "XDG_CONFIG_HOME"), "agentls", "trust.toml")
T.truthy(vim.startswith(vim.fn.stdpath("state"), vim.fn.fnamemodify(H.ws, ":h")), "vim.secure's store is the suite's")

vim.o.columns, vim.o.lines = 180, 50

local PROJECT_FILE = { "[providers.anthropic]", ('base_url = "http://127.0.0.1:%s"'):format(stranger_port) }

-- The folder `name` beside the suite's workspace.
local function beside(name)
  return vim.fs.joinpath(vim.fn.fnamemodify(H.ws, ":h"), name)
end

-- A project folder (a git root) whose .agentls.toml sends requests to the stranger.
local function project(name)
  local root = beside(name)
  vim.fn.mkdir(root .. "/.git", "p")
  vim.fn.writefile({ "some text" }, root .. "/file.txt")
  vim.fn.writefile(PROJECT_FILE, root .. "/.agentls.toml")
  return root
end

-- Every agentls/trustRequired the plugin handled, by root.
local notified = {}
local required = trust.required
trust.required = function(client_id, params)
  local root = vim.uri_to_fname(params.rootUri)
  notified[root] = (notified[root] or 0) + 1
  return required(client_id, params)
end

local function open(root)
  vim.cmd.edit(vim.fs.joinpath(root, "file.txt"))
  local buf = vim.api.nvim_get_current_buf()
  T.wait(10000, function()
    local c = vim.lsp.get_clients({ name = "agentls", bufnr = buf })[1]
    return c and c.initialized
  end, "a client for " .. root)
  return vim.lsp.get_clients({ name = "agentls", bufnr = buf })[1]
end

-- Waits until the plugin holds `wanted` as the trust state of `root`.
local function until_state(root, wanted, what)
  T.wait(10000, function()
    return (state.trust(root) or {}).state == wanted
  end, what)
end

-- A project folder `name` its user has decided about in Neovim's trust database, as a user does:
-- open its project file, run `command` (:trust or :trust ++deny), wipe the buffer (no
-- autocommands: no client starts here).
local function secured_project(name, command)
  local root = project(name)
  vim.cmd("noautocmd edit " .. vim.fn.fnameescape(root .. "/.agentls.toml"))
  vim.cmd(command)
  vim.cmd("noautocmd bwipeout")
  return root
end

-- Opens root's file with the plugin's question (if any) answered `choice`, and waits until the
-- folder's trust state is `wanted`; returns what was asked.
local function decide(root, choice, wanted, what)
  local asked = H.stub_ui(H.choose(choice))
  open(root)
  until_state(root, wanted, what)
  return asked
end

local function store()
  return vim.fn.filereadable(server_store) == 1 and table.concat(vim.fn.readfile(server_store), "\n") or ""
end

-- Sends a prompt from the current buffer; returns how many requests each provider got for it.
local function ask(text)
  local mine, strangers = #H.requests(), #H.requests(stranger_requests)
  vim.cmd("Agent " .. text)
  T.wait(10000, function()
    return #H.requests() > mine or #H.requests(stranger_requests) > strangers
  end, "a model request for " .. text)
  vim.wait(200) -- a request to the other provider would have arrived by now
  return { mine = #H.requests() - mine, stranger = #H.requests(stranger_requests) - strangers }
end

T.test("the client announces that it resolves trust itself", function()
  local c = open(H.ws)
  T.eq(c.config.capabilities.experimental.agentls.trust, true, "experimental.agentls.trust")
end)

T.test("Not now: the folder stays untrusted, requests go to the user's provider, none to the stranger", function()
  local root = project("trust-a")
  local asked = decide(root, trust.NOT_NOW, "declined", "the question to be answered")
  T.eq(#asked.select, 1, "asked once")
  T.eq(asked.select[1].items, { "Trust this folder", "Not now" }, "the choices")
  T.contains(asked.select[1].prompt, root, "the prompt names the folder")
  T.contains(asked.select[1].prompt, "providers.anthropic.base_url", "the prompt names the ignored key")
  T.eq(ask("hello from trust-a"), { mine = 1, stranger = 0 }, "requests per provider")
  T.truthy(not store():find(root, 1, true), "the server's store does not hold the folder:\n" .. store())
  T.eq(trust.secure_state(root .. "/.agentls.toml"), nil, "nor does vim.secure's")
  T.wait(5000, function()
    return H.chat_text():find("providers.anthropic.base_url", 1, true) ~= nil
  end, "the session's warning about the ignored key in the chat")
end)

T.test("the same root is not asked about twice in one Neovim session (a new server asks again)", function()
  local root = beside("trust-a")
  local asked = H.stub_ui(H.choose(trust.TRUST))
  local c = vim.lsp.get_clients({ name = "agentls", bufnr = 0 })[1]
  T.eq(notified[root], 1, "one notification so far")
  vim.lsp.stop_client(c.id)
  T.wait(10000, function()
    return c:is_stopped()
  end, "the server to stop")
  vim.cmd("edit")
  T.wait(10000, function()
    local n = vim.lsp.get_clients({ name = "agentls", bufnr = 0 })[1]
    return n and n.id ~= c.id and n.initialized
  end, "a new server")
  T.wait(10000, function()
    return notified[root] == 2
  end, "the new server's agentls/trustRequired")
  vim.wait(100)
  T.eq(#asked.select, 0, "not asked again")
  T.eq(ask("hello again from trust-a"), { mine = 1, stranger = 0 }, "requests per provider")
end)

T.test(":AgentTrust trusts the current folder; the next session's requests go to the project's host", function()
  local root = beside("trust-a")
  vim.cmd("AgentTrust")
  until_state(root, "trusted", "the folder to be trusted")
  T.contains(store(), root, "the server's store")
  T.eq(trust.secure_state(root .. "/.agentls.toml"), "allow", "vim.secure's store")
  local c = vim.lsp.get_clients({ name = "agentls", bufnr = 0 })[1]
  local before = state.session(c.id).id
  vim.cmd("AgentNew")
  T.wait(10000, function()
    return state.session(c.id).id ~= before
  end, "the new session")
  T.eq(ask("hello after :AgentTrust"), { mine = 0, stranger = 1 }, "requests per provider")
end)

T.test("Trust this folder: both stores get it; a new session's requests go to the project's host", function()
  local root = project("trust-b")
  local asked = decide(root, trust.TRUST, "trusted", "the folder to be trusted")
  T.eq(#asked.select, 1, "asked once")
  T.contains(store(), root, "the server's store holds the folder")
  T.eq(trust.secure_state(root .. "/.agentls.toml"), "allow", "vim.secure allows the file")
  T.eq(vim.fn.bufexists(root .. "/.agentls.toml"), 0, "the project file is not left in a buffer")
  T.eq(ask("hello from trust-b"), { mine = 0, stranger = 1 }, "requests per provider")
end)

T.test("a project file vim.secure already allows is trusted without a question", function()
  local root = secured_project("trust-c", "trust")
  T.eq(trust.secure_state(root .. "/.agentls.toml"), "allow", "vim.secure allows it")
  local asked = decide(root, trust.NOT_NOW, "trusted", "the folder to be trusted")
  T.eq(#asked.select, 0, "not asked")
  T.contains(store(), root, "the server's store holds the folder")
  T.eq(ask("hello from trust-c"), { mine = 0, stranger = 1 }, "requests per provider")
end)

T.test("a project file vim.secure allowed with other contents is asked about", function()
  local root = secured_project("trust-d", "trust")
  vim.fn.writefile(vim.list_extend(vim.deepcopy(PROJECT_FILE), { "# changed since" }), root .. "/.agentls.toml")
  T.eq(trust.secure_state(root .. "/.agentls.toml"), nil, "vim.secure no longer allows it")
  local asked = decide(root, trust.NOT_NOW, "declined", "the question to be answered")
  T.eq(#asked.select, 1, "asked")
  T.truthy(not store():find(root, 1, true), "the server's store does not hold the folder")
  T.eq(ask("hello from trust-d"), { mine = 1, stranger = 0 }, "requests per provider")
end)

T.test("a project file vim.secure denies is not asked about and stays untrusted", function()
  local root = secured_project("trust-e", "trust ++deny")
  T.eq(trust.secure_state(root .. "/.agentls.toml"), "deny", "vim.secure denies it")
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(messages, { msg = msg, level = level })
  end
  local asked = decide(root, trust.TRUST, "denied", "the server's agentls/trustRequired")
  vim.notify = notify
  T.eq(#asked.select, 0, "not asked")
  T.eq(#messages, 1, "one message")
  T.contains(messages[1].msg, "is denied in Neovim's trust database")
  T.contains(messages[1].msg, "providers.anthropic.base_url")
  T.eq(messages[1].level, vim.log.levels.WARN, "a warning")
  T.truthy(not store():find(root, 1, true), "the server's store does not hold the folder")
  T.eq(ask("hello from trust-e"), { mine = 1, stranger = 0 }, "requests per provider")
end)

T.test(":checkhealth agentls says which folder waits for trust", function()
  vim.cmd("checkhealth agentls")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  local d = beside("trust-d")
  local b = beside("trust-b")
  T.contains(text, d .. " is not trusted: its .agentls.toml sets keys that stay ignored until it is (providers.anthropic.base_url)")
  T.contains(text, ":AgentTrust trusts it")
  T.contains(text, b .. " is trusted: all of its .agentls.toml applies")
  vim.cmd("bwipeout")
end)

return T.run()
