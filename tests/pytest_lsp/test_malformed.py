"""Bad input over the real stdio pipe: broken frames, bad JSON, messages that are not JSON-RPC,
wrong parameter types, unknown commands and methods, a huge message, an editor that never
answers ``workspace/applyEdit``. Each gets an error (or is ignored, for notifications) and the
server keeps serving."""

from __future__ import annotations

import asyncio
import json

from editor import Editor, file_uri
from fake_provider import Turn


def null_id_errors(editor: Editor) -> list[dict]:
    return [m["error"] for m in editor.received if "error" in m and m.get("id") is None and "method" not in m]


async def still_serves(editor: Editor, provider, text: str = "still here") -> None:
    listed = await editor.raw_command("agentls.listSessions", {})
    assert "sessions" in listed["result"]
    ended = {s["sessionId"]: editor.ended_turns(s["sessionId"]) for s in listed["result"]["sessions"] if s["open"]}
    provider.push(Turn().text(text))
    session = (await editor.command("agentls.prompt", {"text": "are you there?"}))["sessionId"]
    end = await editor.turn_end(session, ended.get(session, 0))
    if editor.plugin:
        assert end["text"] == text
    else:
        assert end["reason"] == "completed", end
        await editor.wait_for("the answer as a message", lambda: f"agentls: {text}" in editor.shown_messages())


async def test_malformed_frames_and_messages_get_errors_and_the_server_keeps_serving(start_editor, provider):
    editor = await start_editor("neovim-0.11", plugin=True)
    editor.write_raw(b"Content-Length: 5\r\n\r\n{bad}")
    editor.write_raw(b"this is not a header\r\n\r\n")
    editor.write_raw(b"Content-Length: nine\r\n\r\n")
    editor.write_raw(b"Content-Length: 2\r\n\r\n\xff\xfe")
    body = json.dumps({"jsonrpc": "1.0", "id": 41, "method": "workspace/executeCommand"}).encode()
    editor.write_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    body = b"[1, 2, 3]"
    editor.write_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    not_rpc = await editor.response(41)
    assert not_rpc["error"]["code"] == -32600
    await editor.wait_for("five parse errors", lambda: len(null_id_errors(editor)) >= 5)
    codes = [e["code"] for e in null_id_errors(editor)]
    assert codes.count(-32700) >= 4, codes
    await still_serves(editor, provider)


async def test_a_wrong_content_length_costs_only_its_own_message(start_editor, provider):
    editor = await start_editor("vscode")
    lost = json.dumps({"jsonrpc": "2.0", "id": "lost-1", "method": "shutdown"}).encode()
    editor.write_raw(b"Content-Length: %d\r\n\r\n" % (len(lost) + 300) + lost)  # longer than the body
    listed = await editor.raw_command("agentls.listSessions", {})
    assert listed["result"] == {"sessions": []}, "the next request is still read"
    editor.write_raw(b"Content-Length: 10\r\n\r\n" + lost)  # shorter than the body
    listed = await editor.raw_command("agentls.listSessions", {})
    assert listed["result"] == {"sessions": []}
    assert not [m for m in editor.received if m.get("id") == "lost-1"], "the broken frames were not executed"
    messages = [e["message"] for e in null_id_errors(editor)]
    assert any("shorter than its Content-Length" in m for m in messages), messages
    await still_serves(editor, provider)


async def test_wrong_types_unknown_commands_and_methods_are_answered_with_errors(start_editor, provider):
    editor = await start_editor("vscode", plugin=True)
    cases = [
        ("agentls.prompt", {"text": 3}, "text"),
        ("agentls.prompt", {"text": "x", "context": "not an object"}, "context"),
        ("agentls.prompt", {"text": "x", "context": {"uri": 7}}, "context.uri"),
        ("agentls.newSession", {"profile": "vim"}, "profile"),
        ("agentls.newSession", {"rootUri": "not a uri"}, "rootUri"),
        ("agentls.steer", {"sessionId": "nope", "text": "x"}, "sessionId"),
        ("agentls.cancel", {}, "sessionId"),
        ("agentls.resolveReview", {"reviewId": "r", "decision": "maybe"}, "decision"),
        ("agentls.resolvePermission", {"requestId": 5, "decision": "deny"}, "requestId"),
    ]
    for command, arguments, field in cases:
        reply = await editor.raw_command(command, arguments)
        assert reply["error"]["code"] == -32602, (command, reply)
        assert reply["error"]["data"] == field, (command, reply)
        assert f"`{field}`" in reply["error"]["message"], (command, reply)

    unknown = await editor.raw_command("agentls.doEverything", {})
    assert unknown["error"]["code"] == -32602 and "agentls.newSession" in unknown["error"]["message"]
    positional = await editor.raw_request("workspace/executeCommand", {"command": "agentls.prompt", "arguments": ["hi"]})
    assert positional["error"]["data"] == "arguments[0]"
    wrong_shape = await editor.raw_request("workspace/executeCommand", {"command": 12})
    assert wrong_shape["error"]["code"] == -32602
    no_method = await editor.raw_request("agentls/doesNotExist", {})
    assert no_method["error"]["code"] == -32601
    # Notifications with bad params are ignored, not fatal.
    editor.write_message({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": 5}})
    editor.write_message({
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": "file:///never/opened.txt", "version": 2},
                   "contentChanges": [{"text": "x"}]},
    })
    editor.write_message({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"agentls": {"nope": 1}}}})
    await still_serves(editor, provider)


async def test_a_huge_document_and_an_oversized_frame(start_editor, provider, workspace):
    editor = await start_editor("eglot", plugin=True)
    big = workspace / "big.txt"
    text = ("0123456789 é 😀\n" * 200_000)
    big.write_text("on disk\n")
    editor.open(big, text)
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "big.txt", "offset": 199_999, "limit": 2}),
        Turn().text("read it"),
    )
    session = (await editor.command("agentls.prompt", {"text": "read the end"}))["sessionId"]
    read = await editor.event(session, "tool_call_end")
    assert "0123456789 é 😀" in read["data"]["output"], "the huge unsaved buffer is what the agent read"
    await editor.event(session, "processing_end")

    limit = 64 << 20
    editor.write_raw(b"Content-Length: %d\r\n\r\n" % (limit + 1))
    editor.write_raw(b" " * (limit + 1))
    await editor.client._server.stdin.drain()
    await editor.wait_for("the oversized-frame error", lambda: null_id_errors(editor), timeout=60)
    assert "exceeds" in null_id_errors(editor)[0]["message"]
    await still_serves(editor, provider)


async def test_an_editor_that_never_answers_apply_edit(start_editor, provider, workspace):
    path = workspace / "a.txt"
    path.write_text("one\n")
    editor = await start_editor("vscode", options={"approval": "auto"}, env={"AGENTLS_CLIENT_TIMEOUT_MS": "300"})
    editor.open(path)
    editor.hold_edits = asyncio.get_running_loop().create_future()
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "a.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}),
        Turn().text("gave up"),
    )
    session = (await editor.command("agentls.prompt", {"text": "edit"}))["sessionId"]
    await editor.turn_end(session)
    result = provider.tool_result("e1")
    assert result["is_error"], result
    assert "did not answer `workspace/applyEdit`" in result["text"], result
    assert editor.text(path) == "one\n" and path.read_text() == "one\n"
    editor.hold_edits.set_result(None)
    await still_serves(editor, provider)
    assert file_uri(path) in editor.buffers
