-- A small test runner for headless Neovim: tests run in order in one editor, each failure is
-- reported with its message, and the last line is "N passed, N failed". `finish()` exits
-- non-zero when anything failed (callers wrap the run so an uncaught error also exits 1).
local T = { tests = {}, passed = 0, failed = 0 }

-- Results go to stdout and, when AGENTLS_TEST_RESULTS names a file, there too (the editor's
-- own messages can share stdout's lines).
local function out(line)
  io.stdout:write("\n" .. line .. "\n")
  io.stdout:flush()
  local path = vim.env.AGENTLS_TEST_RESULTS
  if path then
    local f = io.open(path, "a")
    f:write(line .. "\n")
    f:close()
  end
end

function T.test(name, fn)
  table.insert(T.tests, { name = name, fn = fn })
end

--- Waits up to `ms` for `predicate` to hold; fails naming `what` otherwise.
function T.wait(ms, predicate, what)
  local ok = vim.wait(ms, predicate, 20)
  if not ok then
    error(("timed out after %d ms waiting for %s"):format(ms, what), 2)
  end
end

function T.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(("%s:\n  expected %s\n  got      %s"):format(what or "values differ", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function T.truthy(value, what)
  if not value then
    error(what or "expected a true value", 2)
  end
  return value
end

function T.contains(haystack, needle, what)
  if not tostring(haystack):find(needle, 1, true) then
    error(("%s: %q not found in:\n%s"):format(what or "missing text", needle, tostring(haystack)), 2)
  end
end

function T.run()
  for _, t in ipairs(T.tests) do
    local started = (vim.uv or vim.loop).hrtime()
    local ok, err = xpcall(t.fn, debug.traceback)
    local ms = ((vim.uv or vim.loop).hrtime() - started) / 1e6
    if ok then
      T.passed = T.passed + 1
      out(("ok - %s (%d ms)"):format(t.name, ms))
    else
      T.failed = T.failed + 1
      out(("not ok - %s (%d ms)\n%s"):format(t.name, ms, tostring(err):gsub("\n", "\n    ")))
    end
  end
  out(("%d passed, %d failed"):format(T.passed, T.failed))
  return T.failed == 0
end

return T
