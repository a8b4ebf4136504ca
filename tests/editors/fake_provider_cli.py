#!/usr/bin/env python3
"""The suite's fake Anthropic provider (tests/pytest_lsp/fake_provider.py) as a process, for
the real-editor suites (Neovim, Emacs, VS Code) that cannot import it.

    fake_provider_cli.py --script turns.json --requests requests.jsonl --port-file port

- ``--script``: a JSON list of turns; a turn is a list of blocks, each
  ``{"text": "..."}`` or ``{"tool": "name", "id": "toolu_1", "input": {...}}``.
- ``--requests``: every request body is appended as one JSON line, as it arrives.
- ``--port-file``: written with the port once the server listens (the base URL is
  ``http://127.0.0.1:<port>``, to be given as ANTHROPIC_BASE_URL).
- ``POST /_push`` with a JSON list of turns appends turns while it runs.
It stops on SIGTERM or when its standard input closes (``--stdin-lifetime``).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import signal
import sys
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "pytest_lsp"))

from fake_provider import FakeProvider, Turn  # noqa: E402


def to_turn(blocks: list[dict]) -> Turn:
    turn = Turn()
    for block in blocks:
        if "text" in block:
            turn.text(block["text"])
        else:
            turn.tool_call(block["id"], block["tool"], block.get("input", {}))
    return turn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", type=pathlib.Path)
    parser.add_argument("--requests", type=pathlib.Path, required=True)
    parser.add_argument("--port-file", type=pathlib.Path, required=True)
    parser.add_argument("--stdin-lifetime", action="store_true")
    args = parser.parse_args()

    provider = FakeProvider()
    if args.script:
        provider.push(*(to_turn(t) for t in json.loads(args.script.read_text())))

    requests_file = args.requests
    requests_file.write_text("")
    original_next = provider._next_turn

    def recording_next(body):
        with requests_file.open("a") as out:
            out.write(json.dumps(body, ensure_ascii=False) + "\n")
        return original_next(body)

    provider._next_turn = recording_next  # type: ignore[method-assign]
    provider.start()
    assert provider._server is not None
    handler = provider._server.RequestHandlerClass
    do_post = handler.do_POST

    def do_post_with_push(self) -> None:  # noqa: N802
        if self.path == "/_push":
            length = int(self.headers.get("content-length", "0"))
            provider.push(*(to_turn(t) for t in json.loads(self.rfile.read(length))))
            self._reply(200, "application/json", b"{}")
            return
        do_post(self)

    handler.do_POST = do_post_with_push
    port = provider._server.server_address[1]
    args.port_file.write_text(str(port))

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if args.stdin_lifetime:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    provider.stop()


if __name__ == "__main__":
    main()
