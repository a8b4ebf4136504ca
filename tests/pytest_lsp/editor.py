"""An editor impersonated with pytest-lsp: the recorded capabilities of a real client, open
buffers that follow the negotiated position encoding, and the answers a user would give.

Everything the server sends is recorded raw (as JSON on the wire) in :attr:`Editor.received`,
so tests assert on the exact shapes the server chose for this client.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import pathlib
from importlib import resources
from typing import Any, Callable
from urllib.parse import quote, unquote, urlparse

from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient

WAIT_SECONDS = 20.0

# The recorded clients shipped with pytest-lsp (pytest_lsp/clients/*.json), and the one it does
# not ship, recorded here from the client's source (clients/*.json, see its "_source").
RECORDED = {
    "vscode": "visual_studio_code_v1.65.2.json",
    "neovim-0.7": "neovim_v0.7.0.json",
    "neovim-0.11": "neovim_v0.11.0.json",
    "eglot": "emacs_v29.1.json",
}
RECORDED_HERE = {
    "eglot-1.9": "emacs_eglot_v1.9.json",
}


def recorded_initialize(name: str) -> dict[str, Any]:
    """The recorded ``clientInfo`` and ``capabilities`` of a client, as raw JSON."""
    if name in RECORDED_HERE:
        return json.loads((pathlib.Path(__file__).parent / "clients" / RECORDED_HERE[name]).read_text())
    text = resources.files("pytest_lsp.clients").joinpath(RECORDED[name]).read_text()
    return json.loads(text)


def file_uri(path: pathlib.Path) -> str:
    return "file://" + quote(str(path))


def path_of(uri: str) -> pathlib.Path:
    return pathlib.Path(unquote(urlparse(uri).path))


def units(ch: str, encoding: str) -> int:
    """The size of one character in code units of ``encoding``."""
    if encoding == "utf-8":
        return len(ch.encode("utf-8"))
    if encoding == "utf-16":
        return 2 if ord(ch) > 0xFFFF else 1
    return 1


def offset_of(text: str, line: int, character: int, encoding: str) -> int:
    """The string index of an LSP position; characters past the line end clamp to it (LSP)."""
    lines = text.split("\n")
    if line >= len(lines):
        return len(text)
    start = sum(len(x) + 1 for x in lines[:line])
    counted = 0
    for i, ch in enumerate(lines[line]):
        if counted >= character:
            return start + i
        counted += units(ch, encoding)
    return start + len(lines[line])


def position_at(text: str, index: int, encoding: str) -> dict[str, int]:
    """The LSP position of a string index."""
    before = text[:index]
    line = before.count("\n")
    line_start = before.rfind("\n") + 1
    return {"line": line, "character": sum(units(ch, encoding) for ch in text[line_start:index])}


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str) -> str:
    """Applies LSP TextEdits (all relative to ``text``) the way an editor does."""
    spans = []
    for edit in edits:
        start = offset_of(text, edit["range"]["start"]["line"], edit["range"]["start"]["character"], encoding)
        end = offset_of(text, edit["range"]["end"]["line"], edit["range"]["end"]["character"], encoding)
        spans.append((start, end, edit["newText"]))
    for start, end, new in sorted(spans, key=lambda s: s[0], reverse=True):
        text = text[:start] + new + text[end:]
    return text


class Buffer:
    def __init__(self, text: str, version: int) -> None:
        self.text = text
        self.version = version


class Editor:
    """One client connected to one server process."""

    def __init__(self, name: str, client: LanguageClient, root: pathlib.Path) -> None:
        self.name = name
        self.client = client
        self.root = root
        self.encoding = "utf-16"
        self.initialize_result: dict[str, Any] = {}
        self.buffers: dict[str, Buffer] = {}
        # Every message the server sent, raw, in arrival order.
        self.received: list[dict[str, Any]] = []
        # What the simulated user answers to window/showMessageRequest (a title, or None to dismiss).
        self.answer_message: Callable[[dict[str, Any]], str | None] = lambda params: None
        # What the simulated editor answers to workspace/applyEdit (None: apply it).
        self.refuse_edit: str | None = None
        # What the editor shows, for agentls/diagnostics: [{uri, diagnostics: [...]}].
        self.editor_diagnostics: list[dict[str, Any]] = []
        # While set and not done, workspace/applyEdit is not answered (an editor that hangs).
        self.hold_edits: asyncio.Future[None] | None = None
        # While set and not done, window/showMessageRequest is not answered (a user who walked away,
        # or C-g in Emacs, which sends no answer).
        self.hold_questions: asyncio.Future[None] | None = None
        # Seconds an applied edit waits before its didChange is sent (Neovim debounces 150 ms,
        # eglot waits for 0.5 s of idle time); None sends it before answering, like VS Code.
        self.change_delay: float | None = None
        # Set by :meth:`start`: whether the client announced ``experimental.agentls``, the raw
        # capabilities it announced, and the fake provider the server talks to (for turn ends).
        self.plugin = False
        self.capabilities: dict[str, Any] = {}
        self.provider: Any = None
        self._raw_ids = 0
        self._stopped = False
        self._install()

    # -- wiring ---------------------------------------------------------------------------

    def _install(self) -> None:
        protocol = self.client.protocol
        structure = protocol.structure_message

        def record(data: dict[str, Any]):
            # json.loads' object hook: the top-level message is the one with "jsonrpc".
            if "jsonrpc" in data:
                # Copied first: structuring may replace parts of the dict in place.
                self.received.append(copy.deepcopy(data))
            return structure(data)

        protocol.structure_message = record  # type: ignore[method-assign]
        client = self.client

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        async def apply_edit(ls, params):
            raw = self._last("workspace/applyEdit")["params"]
            if self.hold_edits is not None:
                await self.hold_edits
            return self._apply_edit(raw)

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def show_message_request(ls, params):
            raw = self._last("window/showMessageRequest")["params"]
            if self.hold_questions is not None:
                await self.hold_questions
            title = self.answer_message(raw)
            return None if title is None else types.MessageActionItem(title=title)

        for method in ("agentls/event", "agentls/review", "agentls/permission"):
            # Recorded above; registered so pygls does not warn about unknown methods.
            client.feature(method)(lambda ls, params: None)

        @client.feature("agentls/saveDocuments")
        def save_documents(ls, params):
            # What the plugins do: write the buffers of the given files to disk.
            for uri in self._last("agentls/saveDocuments")["params"]["uris"]:
                if self._buffer_uri(uri) in self.buffers:
                    path_of(uri).write_text(self.buffers[self._buffer_uri(uri)].text)
            return {}

        @client.feature("agentls/diagnostics")
        def diagnostics(ls, params):
            uri = self._last("agentls/diagnostics")["params"].get("uri")
            files = [f for f in self.editor_diagnostics if uri is None or f["uri"] == uri]
            return {"files": files}

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register_capability(ls, params):
            return None

    def _buffer_uri(self, uri: str) -> str:
        """The key of the open buffer ``uri`` names (editors compare decoded paths, not URI
        spellings), or ``uri`` itself."""
        path = path_of(uri)
        return next((key for key in self.buffers if path_of(key) == path), uri)

    def _last(self, method: str) -> dict[str, Any]:
        return next(m for m in reversed(self.received) if m.get("method") == method)

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        name: str,
        command: list[str],
        env: dict[str, str],
        root: pathlib.Path,
        *,
        plugin: bool = False,
        options: dict[str, Any] | None = None,
        tweak: Callable[[dict[str, Any]], None] | None = None,
        settings: dict[str, Any] | None = None,
        provider: Any = None,
    ) -> Editor:
        """Starts the server with the recorded capabilities of ``name``; ``plugin`` adds the
        ``experimental.agentls`` capability our editor plugins announce; ``tweak`` edits the
        raw capabilities (to derive a client without one feature); ``settings`` is what the
        editor answers to ``workspace/configuration`` for the ``agentls`` section; ``provider``
        is the fake provider the server calls (see :meth:`turn_end`)."""
        config = ClientServerConfig(server_command=command, server_env=env)
        client = await config.start()
        if settings is not None:
            client.set_configuration(settings, section="agentls")
        editor = cls(name, client, root)
        recorded = recorded_initialize(name)
        capabilities = recorded["capabilities"]
        if plugin:
            capabilities.setdefault("experimental", {})
            capabilities["experimental"] = {**(capabilities["experimental"] or {}), "agentls": {"protocolVersion": 1}}
        if tweak:
            tweak(capabilities)
        editor.plugin = plugin
        editor.capabilities = capabilities
        editor.provider = provider
        params = {
            "processId": os.getpid(),
            "clientInfo": recorded.get("clientInfo"),
            "rootUri": file_uri(root),
            "workspaceFolders": [{"uri": file_uri(root), "name": root.name}],
            "capabilities": capabilities,
            "initializationOptions": options or {},
        }
        structured = get_converter().structure(params, types.InitializeParams)
        result = await client.initialize_session(structured)
        editor.initialize_result = get_converter().unstructure(result)
        editor.encoding = editor.initialize_result["capabilities"].get("positionEncoding", "utf-16")
        return editor

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            await asyncio.wait_for(self.client.shutdown_session(), 5)
        except Exception:  # noqa: BLE001 - a server already gone is fine at teardown
            pass
        await self.client.stop()

    # -- documents ------------------------------------------------------------------------

    def open(self, path: pathlib.Path, text: str | None = None, version: int = 1) -> str:
        text = path.read_text() if text is None else text
        uri = file_uri(path)
        self.buffers[uri] = Buffer(text, version)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="plaintext", version=version, text=text)
            )
        )
        return uri

    def type_text(self, path: pathlib.Path, old: str, new: str) -> None:
        """Replaces the first ``old`` in the buffer by ``new``, sending an incremental change
        whose range is in the negotiated encoding."""
        uri = file_uri(path)
        buffer = self.buffers[uri]
        index = buffer.text.index(old)
        start = position_at(buffer.text, index, self.encoding)
        end = position_at(buffer.text, index + len(old), self.encoding)
        buffer.text = buffer.text[:index] + new + buffer.text[index + len(old) :]
        buffer.version += 1
        self._send_change(uri, buffer, {"range": {"start": start, "end": end}, "text": new})

    def _send_change(self, uri: str, buffer: Buffer, change: dict[str, Any]) -> None:
        params = {"textDocument": {"uri": uri, "version": buffer.version}, "contentChanges": [change]}
        self.client.text_document_did_change(get_converter().structure(params, types.DidChangeTextDocumentParams))

    def text(self, path: pathlib.Path) -> str:
        return self.buffers[file_uri(path)].text

    def _apply_edit(self, params: dict[str, Any]) -> types.ApplyWorkspaceEditResult:
        """Applies a workspace edit like VS Code: resource operations on disk, text edits into
        buffers (an unopened file is loaded into a modified, unsaved buffer, as Neovim does)."""
        if self.refuse_edit is not None:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=self.refuse_edit)
        edit = params["edit"]
        steps: list[dict[str, Any]] = list(edit.get("documentChanges") or [])
        steps += [{"textDocument": {"uri": uri, "version": None}, "edits": edits} for uri, edits in (edit.get("changes") or {}).items()]
        for step in steps:
            document = step.get("textDocument")
            buffer = self.buffers.get(self._buffer_uri(document["uri"])) if document else None
            if buffer is not None and document.get("version") is not None and document["version"] != buffer.version:
                reason = f"version {document['version']} does not match the buffer's {buffer.version}"
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)
        for step in steps:
            kind = step.get("kind")
            if kind == "create":
                path = path_of(step["uri"])
                if path.exists() and not (step.get("options") or {}).get("overwrite"):
                    return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{path} exists")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("")
            elif kind == "rename":
                old, new = path_of(step["oldUri"]), path_of(step["newUri"])
                old.rename(new)
                if self._buffer_uri(step["oldUri"]) in self.buffers:
                    self.buffers[step["newUri"]] = self.buffers.pop(self._buffer_uri(step["oldUri"]))
            elif kind == "delete":
                path_of(step["uri"]).unlink()
                self.buffers.pop(self._buffer_uri(step["uri"]), None)
            else:
                uri = self._buffer_uri(step["textDocument"]["uri"])
                buffer = self.buffers.get(uri)
                if buffer is None:
                    path = path_of(uri)
                    self.buffers[uri] = Buffer(path.read_text() if path.exists() else "", 0)
                    self.buffers[uri].text = apply_text_edits(self.buffers[uri].text, step["edits"], self.encoding)
                    continue
                buffer.text = apply_text_edits(buffer.text, step["edits"], self.encoding)
                buffer.version += 1
                reported = Buffer(buffer.text, buffer.version)
                if self.change_delay is None:
                    self._send_change(uri, reported, {"text": reported.text})
                else:
                    asyncio.get_running_loop().call_later(
                        self.change_delay, self._send_change, uri, reported, {"text": reported.text}
                    )
        return types.ApplyWorkspaceEditResult(applied=True)

    # -- requests -------------------------------------------------------------------------

    async def command(self, name: str, arguments: Any) -> Any:
        """Runs ``workspace/executeCommand``; raises on a JSON-RPC error."""
        params = types.ExecuteCommandParams(command=name, arguments=[arguments])
        return await self.client.workspace_execute_command_async(params)

    async def raw_request(self, method: str, params: Any) -> dict[str, Any]:
        """Sends any request with raw JSON params (bypassing the typed client) and returns the
        raw response message: ``{"result": ...}`` or ``{"error": {"code", "message", "data"}}``."""
        self._raw_ids += 1
        request_id = f"raw-{self._raw_ids}"
        self.write_message({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await self.response(request_id)

    async def response(self, request_id: Any) -> dict[str, Any]:
        def find():
            return next((m for m in self.received if m.get("id") == request_id and "method" not in m), None)

        return await self.wait_for(f"the response to {request_id!r}", find)

    async def raw_command(self, name: str, arguments: Any) -> dict[str, Any]:
        return await self.raw_request("workspace/executeCommand", {"command": name, "arguments": [arguments]})

    def write_message(self, message: Any) -> None:
        body = json.dumps(message).encode()
        self.write_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def write_raw(self, data: bytes) -> None:
        """Writes bytes to the server's stdin as they are (malformed input)."""
        assert self.client._server is not None and self.client._server.stdin is not None
        self.client._server.stdin.write(data)

    # -- waiting on what the server sent --------------------------------------------------

    def messages(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("method") == method]

    def params(self, method: str) -> list[dict[str, Any]]:
        return [m.get("params") for m in self.messages(method)]

    def shown_messages(self) -> list[str]:
        """The texts of every ``window/showMessage`` so far."""
        return [p["message"] for p in self.params("window/showMessage")]

    def events(self, session_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.params("agentls/event")
            if (session_id is None or e["sessionId"] == session_id) and (kind is None or e["kind"] == kind)
        ]

    async def wait_for(self, what: str, found: Callable[[], Any], timeout: float = WAIT_SECONDS) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = found()
            if value:
                return value
            if loop.time() > deadline:
                recent = [m.get("method", "response") for m in self.received[-20:]]
                raise AssertionError(f"{self.name}: timed out waiting for {what}; last messages: {recent}")
            await asyncio.sleep(0.02)

    async def next_message(self, method: str, after: int = 0, where: Callable[[dict], bool] = lambda p: True) -> dict:
        """The params of the first ``method`` message at index ``after`` or later matching ``where``."""

        def find():
            for m in self.received[after:]:
                if m.get("method") == method and where(m.get("params") or {}):
                    return m.get("params") or {"__empty__": True}
            return None

        return await self.wait_for(method, find)

    async def event(self, session_id: str, kind: str, nth: int = 0) -> dict[str, Any]:
        def find():
            matching = self.events(session_id, kind)
            return matching[nth] if len(matching) > nth else None

        return await self.wait_for(f"event {kind} #{nth} of {session_id}", find)

    # -- the end of a turn, as each client can see it -----------------------------------------

    @property
    def work_done_progress(self) -> bool:
        return bool((self.capabilities.get("window") or {}).get("workDoneProgress"))

    def _turn_progress_ends(self, session_id: str) -> dict[int, dict[str, Any]]:
        """Input number → the ``end`` value of that turn's ``$/progress``."""
        prefix = f"agentls/turn/{session_id}/"
        ends = {}
        for p in self.params("$/progress"):
            token = p["token"]
            if isinstance(token, str) and token.startswith(prefix) and p["value"]["kind"] == "end":
                ends[int(token[len(prefix) :])] = p["value"]
        return ends

    def ended_turns(self, session_id: str) -> int:
        """How many turns of the session this client has seen end so far (plugin and progress
        clients only: a client without either has no per-turn signal)."""
        if self.plugin:
            return len(self.events(session_id, "processing_end"))
        if self.work_done_progress:
            return len(self._turn_progress_ends(session_id))
        raise AssertionError(f"{self.name}: a client without agentls/event or progress cannot count turns")

    async def turn_end(self, session_id: str, nth: int = 0) -> dict[str, Any]:
        """Waits until the ``nth`` (from 0) turn of the session has ended, by what this client
        gets: the ``processing_end`` event for a plugin client; for a plain client the ``end``
        of the turn's ``$/progress`` (token ``agentls/turn/<sessionId>/<nth + 1>``) when it
        announces ``window.workDoneProgress``, else ``agentls.listSessions`` until the session
        is not ``processing`` and the fake provider has served every scripted response.

        Returns ``{"reason", "text"}``: the reason from the event or the progress end message
        (None when polled), the final answer from the event (None for plain clients, which get
        it as a message). A plain client must not have received any ``agentls/event``."""
        if self.plugin:
            end = await self.event(session_id, "processing_end", nth)
            return {"reason": end["data"]["reason"], "text": end["data"]["text"]}
        if self.work_done_progress:
            token = nth + 1
            value = await self.wait_for(
                f"the $/progress end of turn {token} of {session_id}",
                lambda: self._turn_progress_ends(session_id).get(token),
            )
            ended = {"reason": value.get("message"), "text": None}
        else:
            assert self.provider is not None, "polling for a turn end needs the fake provider"

            async def settled() -> bool:
                if self.provider.unserved() > 0:
                    return False
                listed = await self.command("agentls.listSessions", {})
                [entry] = [s for s in listed["sessions"] if s["sessionId"] == session_id]
                return entry["state"] != "processing"

            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT_SECONDS
            while not await settled():
                if loop.time() > deadline:
                    raise AssertionError(
                        f"{self.name}: timed out waiting for the end of a turn of {session_id}"
                        f" ({self.provider.unserved()} scripted responses not served)"
                    )
                await asyncio.sleep(0.05)
            ended = {"reason": None, "text": None}
        assert self.messages("agentls/event") == [], f"{self.name}: a plain client got agentls/event"
        return ended
