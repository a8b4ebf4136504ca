"""A fake Anthropic Messages provider on 127.0.0.1 for the suite.

It answers ``POST /v1/messages`` with the Messages SSE stream (``message_start``,
``content_block_*``, ``message_delta``, ``message_stop``, as in the recorded wire transcripts),
plays the turns the test scripted in order, and records every request body so tests can
check what the model was sent. It is independent of the Rust test support on purpose.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    """One scripted model response: text and tool calls, in order."""

    blocks: list[dict[str, Any]] = field(default_factory=list)

    def text(self, text: str) -> Turn:
        self.blocks.append({"type": "text", "text": text})
        return self

    def tool_call(self, call_id: str, name: str, arguments: dict[str, Any]) -> Turn:
        self.blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
        return self


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def render_stream(turn: Turn, model: str) -> bytes:
    """The SSE body of one streamed response, deltas split in two like a real stream."""
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
    out = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "model": model,
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        ),
        _event("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(turn.blocks):
        if block["type"] == "text":
            text = block["text"]
            half = len(text) // 2
            out.append(
                _event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            for piece in (text[:half], text[half:]):
                out.append(
                    _event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
                    )
                )
        else:
            arguments = json.dumps(block["input"])
            half = len(arguments) // 2
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            out.append(_event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
            for piece in ("", arguments[:half], arguments[half:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if any(b["type"] == "tool_use" for b in turn.blocks) else "end_turn"
    out.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {**usage, "output_tokens": 20},
            },
        )
    )
    out.append(_event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class FakeProvider:
    """Scripted turns in, recorded requests out. Start with :meth:`start`, stop with :meth:`stop`."""

    def __init__(self) -> None:
        self._turns: list[Turn] = []
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the provider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    def unserved(self) -> int:
        """How many scripted turns no request has taken yet."""
        with self._lock:
            return len(self._turns)

    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def request_text(self, index: int) -> str:
        """The whole body of the ``index``-th request as text (for substring checks)."""
        requests = self.requests()
        return json.dumps(requests[index], ensure_ascii=False) if index < len(requests) else ""

    def saw(self, index: int, text: str) -> bool:
        """Whether the ``index``-th request contains ``text`` anywhere (in any message or field)."""
        return json.dumps(text, ensure_ascii=False)[1:-1] in self.request_text(index)

    def tool_result(self, call_id: str) -> dict[str, Any]:
        """What the model got for the tool call ``call_id``: ``{"text", "is_error"}`` from the
        first request that carries its ``tool_result`` (raises when none does)."""
        for body in self.requests():
            for message in body.get("messages", []):
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                        inner = block.get("content")
                        if isinstance(inner, list):
                            inner = "".join(part.get("text", "") for part in inner)
                        return {"text": inner or "", "is_error": bool(block.get("is_error"))}
        raise AssertionError(f"no request carries a tool_result for {call_id!r}")

    def tool_names(self, index: int) -> list[str]:
        """The names of the tools offered to the model in the ``index``-th request."""
        return [tool["name"] for tool in self.requests()[index].get("tools", [])]

    def _next_turn(self, body: dict[str, Any]) -> Turn | None:
        with self._lock:
            self._requests.append(body)
            return self._turns.pop(0) if self._turns else None

    def start(self) -> FakeProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def _reply(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - the base class's name
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/messages":
                    error = {"type": "error", "error": {"type": "not_found_error", "message": f"no route {self.path}"}}
                    self._reply(404, "application/json", json.dumps(error).encode())
                    return
                if not self.headers.get("x-api-key"):
                    error = {"type": "error", "error": {"type": "authentication_error", "message": "x-api-key missing"}}
                    self._reply(401, "application/json", json.dumps(error).encode())
                    return
                body = json.loads(raw)
                turn = provider._next_turn(body)
                if turn is None:
                    turn = Turn().text("(the fake provider has no more scripted turns)")
                self._reply(200, "text/event-stream", render_stream(turn, body.get("model", "claude-test")))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
