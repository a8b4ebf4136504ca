"""``$/progress`` for turns and tool calls, only for clients that announce
``window.workDoneProgress``; cancelling the turn's progress interrupts the turn."""

from __future__ import annotations

import pytest
from editor import Editor
from fake_provider import FakeProvider, Turn

CLIENTS = ["vscode", "neovim-0.7", "neovim-0.11", "eglot"]


def without_progress(capabilities: dict) -> None:
    capabilities.setdefault("window", {})["workDoneProgress"] = False


@pytest.mark.parametrize("name", CLIENTS)
async def test_turn_and_tool_progress_is_created_begun_and_ended(start_editor, provider: FakeProvider, workspace, name):
    (workspace / "a.txt").write_text("alpha\n")
    editor: Editor = await start_editor(name)
    provider.push(Turn().tool_call("r1", "read_file", {"file_path": "a.txt"}), Turn().text("It says alpha."))
    session = (await editor.command("agentls.prompt", {"text": "read a.txt"}))["sessionId"]
    ended = await editor.turn_end(session)
    assert ended["reason"] == "completed", ended
    created = [p["token"] for p in editor.params("window/workDoneProgress/create")]
    assert f"agentls/turn/{session}/1" in created
    assert f"agentls/tool/{session}/r1" in created

    def progress_ended():
        progress = editor.params("$/progress")
        return [p for p in progress if p["value"]["kind"] == "end"] if len(progress) >= 4 else None

    await editor.wait_for("both progress ends", progress_ended)
    progress = editor.params("$/progress")
    begins = {p["token"]: p["value"] for p in progress if p["value"]["kind"] == "begin"}
    ends = {p["token"] for p in progress if p["value"]["kind"] == "end"}
    assert set(begins) == set(created) == ends, "every created token is begun and ended"
    assert begins[f"agentls/turn/{session}/1"]["title"] == "agentls"
    assert begins[f"agentls/turn/{session}/1"]["message"] == "read a.txt"
    assert begins[f"agentls/tool/{session}/r1"]["title"].startswith("read_file"), begins
    assert all(b["cancellable"] for b in begins.values())
    end_messages = {p["token"]: p["value"].get("message") for p in progress if p["value"]["kind"] == "end"}
    assert end_messages == {f"agentls/turn/{session}/1": "completed", f"agentls/tool/{session}/r1": "ok"}
    assert editor.messages("agentls/event") == []


@pytest.mark.parametrize("name,plugin", [("eglot-1.9", False), ("vscode", True)])
async def test_no_progress_for_a_client_without_work_done_progress(start_editor, provider, workspace, name, plugin):
    # eglot 1.9 announces no window capabilities; VS Code's recording minus window.workDoneProgress.
    (workspace / "a.txt").write_text("alpha\n")
    tweak = without_progress if name == "vscode" else None
    editor = await start_editor(name, plugin=plugin, tweak=tweak)
    provider.push(Turn().tool_call("r1", "read_file", {"file_path": "a.txt"}), Turn().text("alpha"))
    session = (await editor.command("agentls.prompt", {"text": "read a.txt"}))["sessionId"]
    await editor.turn_end(session)
    await editor.command("agentls.listSessions", {})
    assert editor.messages("window/workDoneProgress/create") == []
    assert editor.messages("$/progress") == []
    assert "alpha" in provider.tool_result("r1")["text"], "the turn ran"
    if plugin:
        assert [e["kind"] for e in editor.events(session)].count("tool_call_end") == 1, "events still flow"
    else:
        assert editor.messages("agentls/event") == [], "a plain client gets no agentls/event"
        await editor.wait_for("the answer", lambda: "agentls: alpha" in editor.shown_messages())


async def test_cancelling_the_turn_progress_interrupts_the_turn(start_editor, provider, workspace):
    editor = await start_editor("vscode", plugin=True)
    provider.push(Turn().tool_call("s1", "shell", {"command": "echo never"}))
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "run it"})
    ask = await editor.next_message("agentls/permission")
    token = f"agentls/turn/{session}/1"
    assert token in [p["token"] for p in editor.params("window/workDoneProgress/create")]
    editor.write_message({"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel", "params": {"token": token}})
    end = await editor.event(session, "processing_end")
    assert end["data"]["reason"] != "completed", end
    late = await editor.raw_command("agentls.resolvePermission", {"requestId": ask["requestId"], "decision": "allow_once"})
    assert late["error"]["data"] == "requestId", "the cancelled question was answered as denied"
    result = await editor.event(session, "tool_call_end")
    assert "never" not in (result["data"].get("output") or ""), "the command did not run"
