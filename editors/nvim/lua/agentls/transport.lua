-- The JSON-RPC transport of the agentls client: spawns the server and speaks LSP over its
-- stdio, as vim.lsp's own does, with two differences that matter for a token stream (see
-- docs/benchmarks.md, "Neovim plugin"): frames are cut out of each read in one pass (Neovim's
-- reader copies the rest of the read for every message, so a read of 400 events costs 12 µs
-- per message instead of 1), and all messages of one read are handled in one scheduled call
-- instead of one each, so keys typed meanwhile do not queue behind thousands of events.
-- vim.lsp uses it through `cmd = function(dispatchers, config)` (|vim.lsp.ClientConfig|).
-- It also knows whether the client stopped the server (`stop_asked`): an exit without that is
-- a crash (client.lua restarts it).
local uv = vim.uv

local M = {}

local function frame(message)
  local body = vim.json.encode(message)
  return ("Content-Length: %d\r\n\r\n%s"):format(#body, body)
end

local function environment(extra)
  if not extra or next(extra) == nil then
    return nil -- inherit
  end
  local env = vim.fn.environ()
  for k, v in pairs(extra) do
    env[k] = tostring(v)
  end
  local list = {}
  for k, v in pairs(env) do
    list[#list + 1] = k .. "=" .. v
  end
  return list
end

--- Splits what was read into message bodies. Keeps the unfinished tail between reads.
local function reader()
  local pending, pending_len, need = {}, 0, nil
  return function(chunk)
    pending[#pending + 1] = chunk
    pending_len = pending_len + #chunk
    if need and pending_len < need then
      return {}
    end
    local data = #pending == 1 and pending[1] or table.concat(pending)
    local bodies, pos, size = {}, 1, #data
    need = nil
    while true do
      local hs, he = data:find("\r\n\r\n", pos, true)
      if not hs then
        break
      end
      local length = tonumber(data:sub(pos, hs - 1):match("[Cc]ontent%-[Ll]ength:%s*(%d+)"))
      if not length then
        -- Not a header: skip to the next line that may start one.
        pos = he + 1
      elseif size - he < length then
        need = he + length - pos + 1
        break
      else
        bodies[#bodies + 1] = data:sub(he + 1, he + length)
        pos = he + length + 1
      end
    end
    local rest = pos > size and "" or data:sub(pos)
    pending, pending_len = { rest }, #rest
    return bodies
  end
end

local function response_error(err)
  if type(err) == "table" then
    return setmetatable(err, { __tostring = vim.lsp.rpc.format_rpc_error })
  end
  return err
end

--- A `cmd` for vim.lsp: starts `argv` with `env` added to the environment.
function M.cmd(argv, env)
  return function(dispatchers, config)
    return M.start(argv, env, (config or {}).cmd_cwd, dispatchers)
  end
end

--- Starts the server and returns the vim.lsp.rpc.PublicClient vim.lsp drives.
function M.start(argv, env, cwd, dispatchers)
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local closing = false
  local stop_asked = false -- the client asked the server to stop (shutdown, exit or terminate)
  local next_id = 0
  local callbacks = {} ---@type table<integer, {callback: function, notify_reply: function?}>

  local function close_pipes()
    for _, pipe in ipairs({ stdin, stdout, stderr }) do
      if not pipe:is_closing() then
        pipe:close()
      end
    end
  end

  local handle, spawn_err
  handle, spawn_err = uv.spawn(argv[1], {
    args = vim.list_slice(argv, 2),
    stdio = { stdin, stdout, stderr },
    env = environment(env),
    cwd = cwd,
  }, function(code, signal)
    closing = true
    close_pipes()
    if handle and not handle:is_closing() then
      handle:close()
    end
    vim.schedule(function()
      dispatchers.on_exit(code, signal)
    end)
  end)
  if not handle then
    close_pipes()
    error(("agentls: could not start %s: %s"):format(argv[1], tostring(spawn_err)), 0)
  end

  local function send(message)
    if closing or stdin:is_closing() then
      return false
    end
    if message.method == "shutdown" or message.method == "exit" then
      stop_asked = true
    end
    stdin:write(frame(message))
    return true
  end

  local function handle_message(body)
    local ok, msg = pcall(vim.json.decode, body, { luanil = { object = true } })
    if not ok or type(msg) ~= "table" then
      dispatchers.on_error(vim.lsp.rpc.client_errors.INVALID_SERVER_JSON, msg)
      return
    end
    if type(msg.method) == "string" and msg.id ~= nil then
      -- A request of the server: answered with the handler's result or error.
      coroutine.wrap(function()
        local called, result, err = pcall(dispatchers.server_request, msg.method, msg.params)
        if not called then
          err = vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, tostring(result))
          result = nil
        elseif result == nil and err == nil then
          err = vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, "no result")
        end
        send({ jsonrpc = "2.0", id = msg.id, result = err == nil and result or nil, error = err })
      end)()
    elseif type(msg.method) == "string" then
      dispatchers.notification(msg.method, msg.params)
    elseif msg.id ~= nil then
      local entry = callbacks[msg.id]
      callbacks[msg.id] = nil
      if entry then
        if entry.notify_reply then
          entry.notify_reply(msg.id)
        end
        if not (msg.error and msg.error.code == vim.lsp.protocol.ErrorCodes.RequestCancelled) then
          entry.callback(msg.error and response_error(msg.error) or nil, msg.result)
        end
      end
    end
  end

  local read = reader()
  stdout:read_start(function(err, chunk)
    if err or not chunk then
      return
    end
    local bodies = read(chunk)
    if #bodies > 0 then
      vim.schedule(function()
        for _, body in ipairs(bodies) do
          local ok, e = pcall(handle_message, body)
          if not ok then
            vim.notify("agentls: " .. tostring(e), vim.log.levels.ERROR)
          end
        end
      end)
    end
  end)
  -- The server logs to its own file; anything on stderr is dropped.
  stderr:read_start(function() end)

  return {
    pid = handle:get_pid(), -- the server's process (the suite kills it)
    --- Whether the client stopped the server (vim.lsp's stop: shutdown and exit, or terminate);
    --- an exit without it is a crash.
    stop_asked = function()
      return stop_asked
    end,
    request = function(method, params, callback, notify_reply_callback)
      next_id = next_id + 1
      local id = next_id
      if not send({ jsonrpc = "2.0", id = id, method = method, params = params }) then
        return false
      end
      callbacks[id] = { callback = callback, notify_reply = notify_reply_callback }
      return true, id
    end,
    notify = function(method, params)
      return send({ jsonrpc = "2.0", method = method, params = params })
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      stop_asked = true
      if not closing then
        closing = true
        handle:kill(15)
      end
    end,
  }
end

return M
