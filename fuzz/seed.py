#!/usr/bin/env python3
"""Seeds every fuzz target's corpus from the project's fixtures (run from the repository root:
python3 fuzz/seed.py). Without seeds libFuzzer seldom builds a valid patch header, SSE stream or
JSON-RPC message. Each seed is in its target's input format (see fuzz_targets/*.rs):

- apply_patch: a file text with `\\x01` for its line breaks, a newline, then a patch
  (tests/fixtures/patch).
- edit_file: `text \\0 old \\0 new`, from the patch fixtures' before/after files.
- rebase: `base \\0 ours \\0 theirs`: a fixture's before text, its after text, and the before text
  with another line changed.
- position: 12 bytes of line/character/offset, then a text (fixture files, plus line-break and
  multi-byte samples).
- llm_stream: a mode byte (provider, SSE or JSON), a read-size byte, then a body: every
  `stream_*.sse` and `response_*.json` of tests/fixtures/wire.
- lsp_frames: framed JSON-RPC messages with the usual mistakes (wrong Content-Length, garbage
  between frames, bad JSON).
- lsp_dispatch: NUL-separated JSON-RPC messages: document sync, every `agentls.*` command,
  code actions, configuration, a recorded client's capabilities.
"""
import glob
import json
import os
import struct

MAX_LEN = 4096
# Whole recorded streams are longer than other inputs (fuzz/run passes the same -max_len).
MAX_LENS = {"llm_stream": 16384}
ROOT = "fuzz/corpus"
PROVIDERS = {"anthropic": 0, "openai_responses": 1, "openai_chat": 2, "gemini": 3}
counts = {}


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_LENS.get(target, MAX_LEN):
        return
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, f"seed-{name}"), "wb") as f:
        f.write(data)
    counts[target] = counts.get(target, 0) + 1


def text_of(path):
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return None


def files_under(folder):
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            text = text_of(path)
            if text is not None:
                out.append((os.path.relpath(path, folder), text))
    return out


def frame(body):
    if isinstance(body, str):
        body = body.encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# Patch fixtures: apply_patch, edit_file, rebase, position.
for case in sorted(glob.glob("tests/fixtures/patch/*")):
    name = os.path.basename(case)
    patch = text_of(os.path.join(case, "patch.txt")) or ""
    before = dict(files_under(os.path.join(case, "before")))
    after = dict(files_under(os.path.join(case, "after")))
    texts = list(before.values())
    for index, text in enumerate(texts[:2] or [""]):
        put("apply_patch", f"{name}-{index}", text.replace("\n", "\x01") + "\n" + patch)
    for index, (path, old) in enumerate(sorted(before.items())[:2]):
        new = after.get(path)
        if new is None or new == old:
            continue
        old_lines, new_lines = old.splitlines(True), new.splitlines(True)
        changed = [line for line in old_lines if line not in new_lines]
        if changed:
            replacement = next((line for line in new_lines if line not in old_lines), "")
            put("edit_file", f"{name}-{index}", old + "\0" + changed[0] + "\0" + replacement)
        theirs_lines = list(old_lines)
        if theirs_lines:
            theirs_lines[-1] = "user edit\n" if theirs_lines[-1].endswith("\n") else "user edit"
        put("rebase", f"{name}-{index}", old + "\0" + new + "\0" + "".join(theirs_lines))
        put("position", f"{name}-{index}", struct.pack("<III", 2, 8, 20) + old.encode())

for index, text in enumerate(["a\nb\r\nc\rd\u2028e", "x\U0001F600\u00e9=1\n", "\r\n\r\n", "tab\there\n  \u00e9\u00e8\n"]):
    put("position", f"sample-{index}", struct.pack("<III", 2 * index, 6, 10) + text.encode())

# Wire fixtures: llm_stream.
for folder, provider in PROVIDERS.items():
    for path in sorted(glob.glob(f"tests/fixtures/wire/{folder}/**/*", recursive=True)):
        base = os.path.basename(path)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            body = f.read()
        if base.endswith(".sse"):
            for split in (0, 7):
                put("llm_stream", f"{folder}-{base}-{split}", bytes([provider, split]) + body)
        elif base.startswith("response_") and base.endswith(".json"):
            put("llm_stream", f"{folder}-{base}", bytes([provider | 4, 0]) + body)
            # Gemini without alt=sse answers a streaming request with an array of chunks.
            if provider == 3:
                put("llm_stream", f"{folder}-{base}-array", bytes([provider | 4, 0]) + b"[" + body + b"]")

# LSP messages: lsp_frames and lsp_dispatch.
uri = "file:///fuzz/main.rs"
messages = [
    {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": "fn main() {\n    println!(\"hi\");\n}\n"}}},
    {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 12}}, "text": "eprintln!"}]}},
    {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "whole\ntext\u00e9\U0001F600\n"}]}},
    {"jsonrpc": "2.0", "id": 2, "method": "textDocument/codeAction", "params": {"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 3}}, "context": {"diagnostics": []}}},
    {"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}},
    {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
    {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"agentls": {"approval": "auto", "model": "m"}}}},
    {"jsonrpc": "2.0", "method": "workspace/didChangeWatchedFiles", "params": {"changes": [{"uri": "file:///fuzz/AGENTS.md", "type": 2}]}},
    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}},
    {"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel", "params": {"token": "agentls/turn/s/1"}},
    {"jsonrpc": "2.0", "id": 7, "result": None},
    {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
    {"jsonrpc": "2.0", "id": 4, "method": "unknown/method", "params": [1, 2]},
]
commands = {
    "agentls.newSession": {"profile": "anthropic", "model": "m"},
    "agentls.prompt": {"text": "add a flag", "context": {"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2}}}},
    "agentls.steer": {"sessionId": "s", "text": "only the CLI"},
    "agentls.followUp": {"sessionId": "s", "text": "then tests"},
    "agentls.cancel": {"sessionId": "s"},
    "agentls.closeSession": {"sessionId": "s"},
    "agentls.listSessions": {},
    "agentls.resumeSession": {"sessionId": "s"},
    "agentls.configure": {"sessionId": "s", "model": "m", "reasoningEffort": "high", "approval": "deny"},
    "agentls.resolveReview": {"reviewId": "r", "decision": "accept", "files": [{"uri": uri, "acceptedHunks": [0]}], "feedback": "ok"},
    "agentls.resolvePermission": {"requestId": "p", "decision": "allow_once"},
    "agentls.history": {"sessionId": "s"},
}
for index, (command, arguments) in enumerate(commands.items()):
    messages.append({"jsonrpc": "2.0", "id": 100 + index, "method": "workspace/executeCommand", "params": {"command": command, "arguments": [arguments]}})
bodies = [json.dumps(m, separators=(",", ":")) for m in messages]
for index, body in enumerate(bodies):
    put("lsp_dispatch", f"message-{index}", body)
    put("lsp_frames", f"message-{index}", frame(body))
put("lsp_dispatch", "all", "\0".join(bodies))
with open("tests/pytest_lsp/clients/emacs_eglot_v1.9.json", encoding="utf-8") as f:
    eglot = json.load(f)
put("lsp_dispatch", "eglot-initialize", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": eglot["capabilities"]}}))
probe = bodies[4].encode()
put("lsp_frames", "all", b"".join(frame(b) for b in bodies))
put("lsp_frames", "short-length", b"Content-Length: 10\r\n\r\n" + probe + frame(probe))
put("lsp_frames", "long-length", b"Content-Length: 900\r\n\r\n" + probe + frame(probe))
put("lsp_frames", "garbage-between", frame(probe) + b"garbage\r\nmore\r\n\r\n" + frame(probe))
put("lsp_frames", "bad-json", frame(b"{\"jsonrpc\":") + frame(b"\xff\xfe") + frame(b"[1,2]"))
put("lsp_frames", "extra-headers", b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(probe) + probe)
put("lsp_frames", "huge-length", b"Content-Length: 99999999999\r\n\r\n" + probe)
put("lsp_frames", "lf-only", b"Content-Length: %d\n\n" % len(probe) + probe)

for target, count in sorted(counts.items()):
    print(f"{count} seeds in {ROOT}/{target}")
