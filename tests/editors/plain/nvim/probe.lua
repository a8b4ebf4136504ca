-- The suite's hands and eyes inside Neovim: nothing here changes how Neovim talks to the server.
-- vim.ui.select is what Neovim 0.11 opens for both the code action menu and a server's
-- window/showMessageRequest; the probe answers it the way a user picks an entry (or presses
-- Escape, which is on_choice(nil)), whenever the suite says so. The suite calls
-- AgentlsProbe.call('<json>') through `nvim --server … --remote-expr` and gets JSON back.
AgentlsProbe = {}
local P = AgentlsProbe

local started = vim.uv.hrtime()
local function now_ms()
  return math.floor((vim.uv.hrtime() - started) / 1e6)
end

local prompts = {} -- every showMessageRequest, in arrival order
local actions_offered = {} -- titles of the last code action menu
local want_action = nil
local progress = {}

vim.ui.select = function(items, opts, on_choice)
  local titles = {}
  for i, item in ipairs(items) do
    titles[i] = opts.format_item and opts.format_item(item) or tostring(item)
  end
  if opts.kind == 'codeaction' then
    actions_offered = titles
    local wanted = want_action
    want_action = nil
    for i, title in ipairs(titles) do
      if wanted and title:sub(1, #wanted) == wanted then
        vim.schedule(function() on_choice(items[i], i) end)
        return
      end
    end
    vim.schedule(function() on_choice(nil, nil) end)
    return
  end
  table.insert(prompts, {
    message = opts.prompt, titles = titles, opened_ms = now_ms(),
    items = items, on_choice = on_choice,
  })
end

vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local value = ev.data and ev.data.params and ev.data.params.value or {}
    table.insert(progress, { kind = value.kind, title = value.title, message = value.message })
  end,
})

local function open_prompt()
  for _, prompt in ipairs(prompts) do
    if not prompt.answered_ms then return prompt end
  end
end

local function buffers()
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) ~= '' then
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      local text = table.concat(lines, '\n')
      if vim.bo[buf].eol and #lines > 0 then text = text .. '\n' end
      out[vim.api.nvim_buf_get_name(buf)] = { text = text, modified = vim.bo[buf].modified }
    end
  end
  return out
end

local handlers = {}

function handlers.state()
  local out_prompts = {}
  for i, prompt in ipairs(prompts) do
    out_prompts[i] = {
      message = prompt.message, titles = prompt.titles, opened_ms = prompt.opened_ms,
      answered_ms = prompt.answered_ms, answer = prompt.answer,
    }
  end
  local clients = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = 'agentls' })) do
    table.insert(clients, { id = client.id, initialized = client.initialized, attached = client.attached_buffers[vim.api.nvim_get_current_buf()] == true })
  end
  return {
    now_ms = now_ms(), prompts = out_prompts, actions_offered = actions_offered,
    messages = vim.api.nvim_exec2('messages', { output = true }).output,
    buffers = buffers(), current = vim.api.nvim_buf_get_name(0), clients = clients,
    progress = progress,
  }
end

function handlers.open(args)
  vim.cmd.edit(vim.fn.fnameescape(args.path))
  return true
end

function handlers.cursor(args)
  vim.api.nvim_win_set_cursor(0, { args.line, 0 })
  return true
end

function handlers.code_action(args)
  want_action = args.title
  actions_offered = {}
  if args.lines then
    -- lines selected with V, as code_action computes a V selection: to the last column of the last line
    local first, last = args.lines[1], args.lines[2]
    local last_line = vim.api.nvim_buf_get_lines(0, last - 1, last, true)[1]
    vim.lsp.buf.code_action({ range = { start = { first, 0 }, ['end'] = { last, math.max(#last_line - 1, 0) } } })
  else
    vim.lsp.buf.code_action()
  end
  return true
end

-- The user picks `title` in the open prompt (or Escape when title is null).
function handlers.answer(args)
  local prompt = open_prompt()
  if not prompt then return false end
  prompt.answered_ms = now_ms()
  prompt.answer = args.title or vim.NIL
  for i, title in ipairs(prompt.titles) do
    if args.title and title == args.title then
      prompt.on_choice(prompt.items[i], i)
      return true
    end
  end
  prompt.on_choice(nil, nil)
  return true
end

-- The user types `text` as new lines after line `after` (1-based) without saving.
function handlers.insert_lines(args)
  vim.api.nvim_buf_set_lines(0, args.after, args.after, false, args.lines)
  return true
end

-- `:w` as the user types it, run after this call returns: when the file changed on disk, Neovim
-- asks "The file has been changed since reading it!!!" and blocks until a key arrives.
function handlers.write(args)
  vim.schedule(function() pcall(vim.cmd, args.force and 'write!' or 'write') end)
  return true
end

function P.call(request_json)
  local request = vim.json.decode(request_json)
  local ok, result = pcall(handlers[request.op], request)
  if not ok then return vim.json.encode({ error = tostring(result) }) end
  return vim.json.encode({ result = result })
end
