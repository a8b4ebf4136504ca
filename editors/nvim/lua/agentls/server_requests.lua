-- Answers to the server's requests: `agentls/saveDocuments` writes exactly the buffers named,
-- `agentls/diagnostics` reports what vim.diagnostic holds.
local M = {}

--- The loaded buffer of `uri`, if any (looked up, never created).
function M.loaded_buf(uri)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
end

local loaded_buf = M.loaded_buf

--- {uris} → vim.NIL once every loaded buffer among them is written; an error names the first
--- that could not be (the server then writes the files itself).
function M.save_documents(params)
  for _, uri in ipairs(params.uris or {}) do
    local bufnr = loaded_buf(uri)
    if bufnr and vim.bo[bufnr].modified then
      local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
        vim.cmd("silent keepalt write")
      end)
      if not ok then
        return nil, { code = -32603, message = ("could not write %s: %s"):format(uri, tostring(err)) }
      end
    end
  end
  return vim.NIL
end

local function to_lsp(bufnr, diagnostics, encoding)
  local out = {}
  for _, d in ipairs(diagnostics) do
    local function pos(lnum, col)
      local line = vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1] or ""
      col = math.min(col or 0, #line)
      return { line = lnum, character = vim.lsp.util.character_offset(bufnr, lnum, col, encoding) }
    end
    table.insert(out, {
      range = { start = pos(d.lnum, d.col), ["end"] = pos(d.end_lnum or d.lnum, d.end_col or d.col) },
      severity = d.severity,
      message = d.message,
      source = d.source,
      code = d.code,
    })
  end
  return out
end

--- {uri} (or uri = null for the workspace) → {files = [{uri, diagnostics}]}.
function M.diagnostics(params, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  local encoding = client and client.offset_encoding or "utf-16"
  local root = client and client.root_dir
  local buffers = {}
  if params.uri and params.uri ~= vim.NIL then
    buffers = { loaded_buf(params.uri) }
  else
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      local name = vim.api.nvim_buf_get_name(bufnr)
      if vim.api.nvim_buf_is_loaded(bufnr) and name ~= "" and (not root or vim.startswith(name, root)) then
        table.insert(buffers, bufnr)
      end
    end
  end
  local files = {}
  for _, bufnr in ipairs(buffers) do
    local diagnostics = vim.diagnostic.get(bufnr)
    if #diagnostics > 0 or params.uri then
      table.insert(files, { uri = vim.uri_from_bufnr(bufnr), diagnostics = to_lsp(bufnr, diagnostics, encoding) })
    end
  end
  if #files == 0 and params.uri and params.uri ~= vim.NIL then
    files = { { uri = params.uri, diagnostics = {} } }
  end
  return { files = files }
end

return M
