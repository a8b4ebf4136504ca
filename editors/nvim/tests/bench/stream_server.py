#!/usr/bin/env python3
"""A stand-in agentls server for the chat benchmark (scripts/bench-nvim): speaks just enough LSP
over stdio for the plugin, and after `agentls.prompt` streams `assistant_text_delta` events at
RATE per second for SECONDS seconds, then `processing_end`. The deltas are deterministic
(``w<i> `` with a newline after every 50th) so the client can check nothing was lost; the last
one is ``<<end>>``."""

import json
import sys
import threading
import time

RATE = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
SESSION = "bench-session"
out_lock = threading.Lock()


def frame(message: dict) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def send(*messages: dict) -> None:
    data = b"".join(frame(m) for m in messages)
    with out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def event(kind: str, data: dict) -> dict:
    return {"jsonrpc": "2.0", "method": "agentls/event",
            "params": {"sessionId": SESSION, "kind": kind, "timestamp": "2026-01-01T00:00:00Z", "data": data}}


def delta(i: int, total: int) -> str:
    if i == total - 1:
        return "<<end>>"
    return f"w{i}" + ("\n" if i % 50 == 49 else " ")


def stream() -> None:
    total = int(RATE * SECONDS)
    send(event("user_input", {"content": "go"}), event("assistant_text_start", {"model": "bench"}))
    start = time.monotonic()
    sent = 0
    while sent < total:
        due = min(total, int((time.monotonic() - start) * RATE) + 1)
        if due > sent:
            send(*(event("assistant_text_delta", {"delta": delta(i, total)}) for i in range(sent, due)))
            sent = due
        time.sleep(0.005)
    send(event("processing_end", {"state": "idle", "reason": "completed", "text": ""}))
    sys.stderr.write(f"stream_server: sent {total} deltas in {time.monotonic() - start:.2f} s\n")


def read_message():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def main() -> None:
    while True:
        msg = read_message()
        if msg is None:
            return
        method, mid = msg.get("method"), msg.get("id")
        if mid is None or method is None:
            if method == "exit":
                return
            continue
        result = None
        if method == "initialize":
            result = {"capabilities": {"textDocumentSync": {"openClose": True, "change": 2},
                                       "executeCommandProvider": {"commands": ["agentls.newSession", "agentls.prompt"]},
                                       "experimental": {"agentls": {"protocolVersion": 1}}},
                      "serverInfo": {"name": "agentls-bench-stub", "version": "0"}}
        elif method == "workspace/executeCommand":
            command = msg["params"]["command"]
            if command == "agentls.newSession":
                result = {"sessionId": SESSION, "profile": "anthropic", "model": "bench"}
            elif command == "agentls.prompt":
                result = {"sessionId": SESSION}
                threading.Thread(target=stream, daemon=True).start()
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
