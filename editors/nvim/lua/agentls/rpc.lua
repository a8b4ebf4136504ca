-- Commands to the server (`workspace/executeCommand`): the one place they are sent from. Nothing
-- here waits: a command for a client that is still initializing (the first :Agent in a project
-- starts its server) is queued and sent, in order, once the client is up; the answer always
-- comes back through a callback. A client that stops, or is not up within `start_timeout_ms`,
-- drops its queue with a message. Arguments and answers are protocol.lua's shapes.
local protocol = require("agentls.protocol")

local M = {}

-- How long a command waits for its client to be up (ms).
M.start_timeout_ms = 10000
local has_011 = vim.fn.has("nvim-0.11") == 1

---@class agentls.QueuedCommand
---@field command string
---@field args table?
---@field callback fun(err: table?, result: table?): boolean?

local queues = {} ---@type table<integer, agentls.QueuedCommand[]> client id → commands waiting for it to be up

local function dict(t)
  return (t == nil or next(t) == nil) and vim.empty_dict() or t
end

local function stopped(client)
  if has_011 then
    return client:is_stopped()
  end
  return client.is_stopped()
end

-- Every field of `args` is one protocol.lua declares for `command` (a programming error else).
local function check_args(command, args, shape, path)
  shape = shape or protocol.command_args[command]
  if not shape then
    error(("agentls: %s is not a command of protocol.lua"):format(command), 3)
  end
  for name, value in pairs(args or {}) do
    local field = shape[name]
    local where = (path or "") .. name
    if field == nil then
      error(("agentls: protocol.lua declares no argument `%s` of %s"):format(where, command), 3)
    elseif type(field) == "table" and type(value) == "table" then
      if field[1] then
        for i, item in ipairs(value) do
          check_args(command, item, field[1], ("%s[%d]."):format(where, i - 1))
        end
      else
        check_args(command, value, field, where .. ".")
      end
    end
  end
end

local function send(client, command, args, callback)
  local params = { command = command, arguments = { dict(args) } }
  local function handler(err, result)
    -- The answer as protocol.lua declares it (a command whose answer the plugin ignores: {}).
    result = protocol.decode(protocol.command_result[command] or {}, result)
    local handled = callback and callback(err, result)
    if err and not handled then
      vim.notify(("agentls: %s failed: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
  if has_011 then
    client:request("workspace/executeCommand", params, handler)
  else
    client.request("workspace/executeCommand", params, handler)
  end
end

local function drop(client_id, why)
  local queue = queues[client_id]
  queues[client_id] = nil
  if queue and #queue > 0 then
    local names = vim.tbl_map(function(q)
      return q.command
    end, queue)
    vim.notify(("agentls: %s; not sent: %s"):format(why, table.concat(names, ", ")), vim.log.levels.ERROR)
  end
end

--- Sends the notification `method` (a protocol.notification value) with `params` (fields
--- protocol.notification_params declares) when `client` is up; nothing is queued (a
--- notification is only worth its moment).
---@param client vim.lsp.Client
---@param method string
---@param params table?
function M.notify(client, method, params)
  check_args(method, params, assert(protocol.notification_params[method], method .. " is not a notification of protocol.lua"))
  if stopped(client) or not client.initialized then
    return
  end
  if has_011 then
    client:notify(method, dict(params))
  else
    client.notify(method, dict(params))
  end
end

--- Sends `agentls.<command>` with one object argument (fields protocol.command_args declares);
--- `callback(err, result)` on the answer (the fields protocol.command_result declares; nil
--- when there is none). Errors are shown unless the callback returns true for them. Returns
--- at once, also for a client still initializing.
---@param client vim.lsp.Client
---@param command string a protocol.command value
---@param args table?
---@param callback (fun(err: table?, result: table?): boolean?)?
function M.exec(client, command, args, callback)
  check_args(command, args)
  if stopped(client) then
    vim.notify("agentls: the server is not running", vim.log.levels.ERROR)
    return
  end
  local queue = queues[client.id]
  if client.initialized and not queue then
    return send(client, command, args, callback)
  end
  if not queue then
    queue = {}
    queues[client.id] = queue
    local timeout = M.start_timeout_ms
    vim.defer_fn(function()
      if queues[client.id] == queue then
        drop(client.id, ("the server did not start within %g s"):format(timeout / 1000))
      end
    end, timeout)
  end
  table.insert(queue, { command = command, args = args, callback = callback })
end

--- Client `client` finished initializing: what was queued for it is sent, in order. Scheduled,
--- so that vim.lsp first opens the buffers attached meanwhile (a prompt's context is read from
--- them).
function M.ready(client)
  vim.schedule(function()
    local queue = queues[client.id]
    queues[client.id] = nil
    if not queue then
      return
    end
    if stopped(client) then
      queues[client.id] = queue
      return drop(client.id, "the server is not running")
    end
    for _, q in ipairs(queue) do
      send(client, q.command, q.args, q.callback)
    end
  end)
end

--- Client `client_id` stopped: what waited for it is not sent.
function M.stopped(client_id)
  drop(client_id, "the server is not running")
end

--- How many commands wait for client `client_id` to be up.
function M.queued(client_id)
  return queues[client_id] and #queues[client_id] or 0
end

return M
