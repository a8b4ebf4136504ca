"""The LSP lifecycle over a bare stdio pipe (no client library): requests before `initialize`,
a second `initialize`, requests after `shutdown`, and `exit`."""

from __future__ import annotations

import asyncio
import json

WAIT = 20


class Pipe:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> dict:
        assert self.process.stdout is not None
        length = None
        while True:
            line = (await self.process.stdout.readline()).decode().strip()
            if not line:
                break
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None, "a frame without Content-Length"
        return json.loads(await self.process.stdout.readexactly(length))

    async def request(self, request_id: int, method: str, params) -> dict:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

        async def answer():
            while True:
                message = await self.read()
                if message.get("id") == request_id and "method" not in message:
                    return message

        return await asyncio.wait_for(answer(), WAIT)


async def test_lifecycle_errors_and_exit(binary, server_env, workspace):
    process = await asyncio.create_subprocess_exec(
        str(binary), "serve", "--stdio", env=server_env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    pipe = Pipe(process)
    list_sessions = {"command": "agentls.listSessions", "arguments": [{}]}
    try:
        early = await pipe.request(1, "workspace/executeCommand", list_sessions)
        assert early["error"]["code"] == -32002, early
        pipe.send({"jsonrpc": "2.0", "method": "agentls/unknownNotification", "params": {}})
        init = await pipe.request(2, "initialize", {"capabilities": {}, "rootUri": workspace.as_uri()})
        assert init["result"]["capabilities"]["positionEncoding"] == "utf-16", "nothing offered: the default"
        pipe.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        again = await pipe.request(3, "initialize", {"capabilities": {}})
        assert again["error"]["code"] == -32600
        listed = await pipe.request(4, "workspace/executeCommand", list_sessions)
        assert listed["result"] == {"sessions": []}
        assert (await pipe.request(5, "shutdown", None))["result"] is None
        late = await pipe.request(6, "workspace/executeCommand", list_sessions)
        assert late["error"]["code"] == -32600
        pipe.send({"jsonrpc": "2.0", "method": "exit"})
        assert await asyncio.wait_for(process.wait(), WAIT) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
