"""agentls code mode: a persistent Python REPL driven over JSON lines.

Each request on stdin is one JSON object {"code": str, "output_limit": int}; each reply is one
JSON object on the original stdout. While code runs, print() and sys.stderr go to bounded
buffers; file descriptor 1 points at stderr so that child processes cannot corrupt the protocol.
SIGINT interrupts running code (KeyboardInterrupt) and is ignored between requests.
"""

import ast
import asyncio
import inspect as _inspect
import json
import linecache
import os
import signal
import sys
import textwrap
import traceback

PRELOADED = ["asyncio", "collections", "datetime", "functools", "itertools", "json", "math", "os", "pathlib", "re", "subprocess", "sys"]

_SELF = globals().get("__file__", "<string>")
_PROTOCOL = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)


class AgentError(Exception):
    """Raised by the agent when the task cannot be done: raise AgentError("why") from exc."""


class _Return(BaseException):
    def __init__(self, value):
        super().__init__()
        self.value = value


def show_definition(obj):
    """Print the signature and source of a function, class or method (its docstring otherwise)."""
    try:
        print(textwrap.dedent(_inspect.getsource(obj)).rstrip())
        return
    except (OSError, TypeError):
        pass
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    try:
        signature = str(_inspect.signature(obj))
    except (TypeError, ValueError):
        signature = ""
    kind = "class" if isinstance(obj, type) else ("def" if callable(obj) else type(obj).__name__)
    print(f"{kind} {name}{signature}")
    doc = _inspect.getdoc(obj)
    if doc:
        print(textwrap.indent(doc, "    "))


class _Capture:
    """A text stream that keeps the first and last halves of `limit` characters."""

    def __init__(self, limit):
        self.half = max(limit // 2, 1)
        self.head = []
        self.head_len = 0
        self.tail = ""
        self.dropped = 0

    def write(self, text):
        text = str(text)
        room = self.half - self.head_len
        if room > 0:
            self.head.append(text[:room])
            self.head_len += min(room, len(text))
            text = text[room:]
        if text:
            self.tail += text
            if len(self.tail) > self.half:
                self.dropped += len(self.tail) - self.half
                self.tail = self.tail[-self.half:]
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def value(self):
        text = "".join(self.head)
        if self.dropped:
            text += f"\n[... {self.dropped} characters left out ...]\n"
        return text + self.tail


class _TopLevel(ast.NodeTransformer):
    """Turns `return` outside functions into raising _Return, so a cell can end the task."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Return(self, node):
        value = node.value or ast.Constant(value=None)
        call = ast.Call(func=ast.Name(id="__agentls_return__", ctx=ast.Load()), args=[value], keywords=[])
        return ast.copy_location(ast.Raise(exc=call, cause=None), node)


def _show(value):
    if value is not None:
        print(repr(value))


NAMESPACE = {
    "__name__": "__main__",
    "__builtins__": __builtins__,
    "AgentError": AgentError,
    "show_definition": show_definition,
    "__agentls_return__": _Return,
    "__agentls_show__": _show,
}
for _name in PRELOADED:
    NAMESPACE[_name] = __import__(_name)

_LOOP = asyncio.new_event_loop()
_cells = 0


def _compile(source):
    global _cells
    _cells += 1
    filename = f"<cell {_cells}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    tree = ast.parse(source, filename, "exec")
    tree = _TopLevel().visit(tree)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        call = ast.Call(func=ast.Name(id="__agentls_show__", ctx=ast.Load()), args=[last.value], keywords=[])
        tree.body[-1] = ast.copy_location(ast.Expr(value=call), last)
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _run(code):
    global _LOOP
    if code.co_flags & _inspect.CO_COROUTINE:
        if _LOOP.is_closed():
            _LOOP = asyncio.new_event_loop()
        task = _LOOP.create_task(eval(code, NAMESPACE))
        try:
            _LOOP.run_until_complete(task)
        except KeyboardInterrupt:
            task.cancel()
            try:
                _LOOP.run_until_complete(task)
            except BaseException:
                pass
            raise
    else:
        exec(code, NAMESPACE)


def _traceback(error):
    # Frames of this driver are left out: the agent sees its own code only.
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _SELF:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb)).rstrip()


def _describe_agent_error(error):
    text = f"AgentError: {error}"
    cause = error.__cause__ or error.__context__
    if cause is not None:
        text += f"\nCaused by {type(cause).__name__}: {cause}"
    return text


def handle(request):
    limit = int(request.get("output_limit") or 100_000)
    out, err = _Capture(limit), _Capture(limit)
    reply = {"stdout": "", "stderr": "", "error": None, "agent_error": None, "returned": False, "value": None, "interrupted": False}
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            _run(_compile(request.get("code", "")))
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except _Return as done:
        reply["returned"] = True
        value = done.value
        reply["value"] = value if isinstance(value, str) else repr(value)
        reply["type"] = type(value).__name__
    except KeyboardInterrupt:
        reply["interrupted"] = True
    except AgentError as error:
        reply["agent_error"] = _describe_agent_error(error)
        reply["error"] = _traceback(error)
    except SyntaxError as error:
        reply["error"] = "".join(traceback.format_exception_only(type(error), error)).rstrip()
    except SystemExit as error:
        reply["error"] = f"SystemExit({error.code!r}): exiting is not allowed; the REPL keeps running"
    except BaseException as error:
        reply["error"] = _traceback(error)
    finally:
        sys.stdout, sys.stderr = saved
    reply["stdout"], reply["stderr"] = out.value(), err.value()
    return reply


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _PROTOCOL.write(json.dumps({"ready": True, "python": sys.version.split()[0]}) + "\n")
    _PROTOCOL.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            reply = {"error": f"bad request: {error}"}
        else:
            reply = handle(request)
        _PROTOCOL.write(json.dumps(reply) + "\n")
        _PROTOCOL.flush()


if __name__ == "__main__":
    main()
