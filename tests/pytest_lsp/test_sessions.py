"""Sessions through the real binary: resume after a restart from the stored transcript, steering
mid-turn, a conflicting user edit during review, code actions of plain clients and how their
answers (short and long) reach them, cancelling a running command."""

from __future__ import annotations

import asyncio

import pytest
from editor import file_uri, path_of
from fake_provider import Turn


async def test_resume_after_restart_carries_the_history(start_editor, provider, workspace):
    first = await start_editor("neovim-0.11", plugin=True)
    session = (await first.command("agentls.newSession", {}))["sessionId"]
    provider.push(Turn().text("I will remember it."))
    await first.command("agentls.prompt", {"sessionId": session, "text": "remember the word kumquat"})
    await first.event(session, "processing_end")
    await first.stop()

    second = await start_editor("neovim-0.11", plugin=True)
    listed = await second.command("agentls.listSessions", {})
    [stored] = [s for s in listed["sessions"] if s["sessionId"] == session]
    assert stored["open"] is False and stored["title"] == "remember the word kumquat"
    stored_history = await second.command("agentls.history", {"sessionId": session})
    assert [(e["kind"], e["text"]) for e in stored_history["entries"]] == [
        ("user", "remember the word kumquat"),
        ("assistant", "I will remember it."),
    ]
    resumed = await second.command("agentls.resumeSession", {"sessionId": session})
    assert resumed["resumed"] is True and resumed["turns"] == 2
    assert (await second.command("agentls.history", {"sessionId": session}))["entries"] == stored_history["entries"]
    again = await second.command("agentls.resumeSession", {"sessionId": session})
    assert again["resumed"] is False
    provider.push(Turn().text("kumquat"))
    await second.command("agentls.prompt", {"sessionId": session, "text": "which word?"})
    await second.event(session, "processing_end")
    assert provider.saw(1, "remember the word kumquat") and provider.saw(1, "I will remember it.")
    missing = await second.raw_command("agentls.resumeSession", {"sessionId": "no-such-session"})
    assert missing["error"]["data"] == "sessionId"
    missing = await second.raw_command("agentls.history", {"sessionId": "no-such-session"})
    assert missing["error"]["data"] == "sessionId"


async def test_steering_reaches_the_next_model_call(start_editor, provider, workspace):
    editor = await start_editor("vscode", plugin=True)
    provider.push(Turn().tool_call("s1", "shell", {"command": "echo step"}), Turn().text("steered"))
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "run it"})
    ask = await editor.next_message("agentls/permission")
    await editor.command("agentls.steer", {"sessionId": session, "text": "and use French afterwards"})
    await editor.command("agentls.resolvePermission", {"requestId": ask["requestId"], "decision": "allow_once"})
    injected = await editor.event(session, "steering_injected")
    assert injected["data"]["content"] == "and use French afterwards"
    await editor.event(session, "processing_end")
    assert provider.saw(1, "and use French afterwards") and not provider.saw(0, "French")


async def test_a_conflicting_user_edit_fails_cleanly(start_editor, provider, workspace):
    path = workspace / "notes.txt"
    path.write_text("one\ntwo\nthree\n")
    editor = await start_editor("eglot", plugin=True)
    editor.open(path)
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "two", "new_string": "TWO"}),
        Turn().text("I will re-read it."),
    )
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "shout two"})
    review = await editor.next_message("agentls/review")
    editor.type_text(path, "two", "two and more")
    await editor.command("agentls.resolveReview", {"reviewId": review["reviewId"], "decision": "accept"})
    end = await editor.event(session, "tool_call_end", 1)
    assert end["data"]["status"] == "error"
    assert "changed in the editor since you read it" in end["data"]["error"], end
    await editor.event(session, "processing_end")
    assert editor.params("workspace/applyEdit") == []
    assert editor.text(path) == "one\ntwo and more\nthree\n"


@pytest.mark.parametrize("name", ["vscode", "neovim-0.7", "neovim-0.11", "eglot", "eglot-1.9"])
async def test_plain_client_code_actions_run_the_agent(start_editor, provider, workspace, name):
    lib = workspace / "src" / "lib.rs"
    lib.write_text("pub fn f() {}\n")
    editor = await start_editor(name)
    editor.open(lib)
    editor.type_text(lib, "pub fn", "// agent: add a doc comment\npub fn")
    reply = await editor.raw_request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": file_uri(lib)},
            "range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 3}},
            "context": {"diagnostics": [{
                "range": {"start": {"line": 1, "character": 7}, "end": {"line": 1, "character": 8}},
                "message": "function `f` is never used", "source": "rustc", "severity": 2,
            }]},
        },
    )
    actions = reply["result"]
    assert [a["title"] for a in actions] == [
        "agentls: fix this — function `f` is never used",
        "agentls: add a doc comment",
        "agentls: explain",
    ]
    assert [a["kind"] for a in actions] == ["quickfix", "quickfix", ""]
    command = actions[1]["command"]
    assert command["command"] == "agentls.prompt"
    answer = "Added the comment.\nIt says what `f` is for.\nNothing else changed."
    provider.push(Turn().text(answer))
    queued = await editor.raw_request(
        "workspace/executeCommand", {"command": command["command"], "arguments": command["arguments"]}
    )
    session = queued["result"]["sessionId"]
    await editor.turn_end(session)
    assert provider.saw(0, "add a doc comment") and provider.saw(0, "src/lib.rs")
    # The whole answer, every line of it, as a message and in the log.
    shown = await editor.wait_for(
        "the answer as a message",
        lambda: [m for m in editor.params("window/showMessage") if "Added the comment." in m["message"]],
    )
    assert [(m["type"], m["message"]) for m in shown] == [(3, f"agentls: {answer}")]
    logged = [m["message"] for m in editor.params("window/logMessage") if "Added the comment." in m["message"]]
    assert logged == [f"agentls: {answer}"]
    assert editor.messages("window/showDocument") == [], "a short answer opens no document"
    assert editor.messages("agentls/event") == []


async def test_configure_and_command_output_are_streamed_as_events(start_editor, provider, workspace):
    editor = await start_editor("neovim-0.11", plugin=True, options={"shell": {"permission": "allow"}})
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    summary = await editor.command(
        "agentls.configure", {"sessionId": session, "model": "claude-other", "reasoningEffort": "low", "approval": "auto"}
    )
    assert (summary["model"], summary["reasoningEffort"], summary["approval"]) == ("claude-other", "low", "auto")
    changed = await editor.event(session, "config_changed")
    assert changed["data"] == {"model": "claude-other", "reasoning_effort": "low", "approval": "auto"}
    provider.push(Turn().tool_call("s1", "shell", {"command": "echo streamed-line"}), Turn().text("ok"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "run"})
    await editor.event(session, "processing_end")
    deltas = "".join(e["data"]["delta"] for e in editor.events(session, "tool_call_output_delta"))
    assert "streamed-line" in deltas
    assert provider.requests()[0]["model"] == "claude-other"


@pytest.mark.parametrize("name,plugin", [("neovim-0.7", False), ("vscode", True)])
async def test_cancel_stops_a_running_command_and_the_session_stays_usable(
    start_editor, provider, workspace, name, plugin
):
    editor = await start_editor(name, plugin=plugin, options={"shell": {"permission": "allow"}})
    marker = workspace / "started.marker"
    command = "echo started; touch started.marker; sleep 60; echo finished"
    provider.push(Turn().tool_call("s1", "shell", {"command": command}))
    session = (await editor.command("agentls.prompt", {"text": "run the long thing"}))["sessionId"]
    if plugin:
        await editor.wait_for(
            "the command's first output",
            lambda: "started" in "".join(e["data"]["delta"] for e in editor.events(session, "tool_call_output_delta")),
        )
    else:
        await editor.wait_for("the command to start", marker.exists)
    cancelled = await editor.command("agentls.cancel", {"sessionId": session})
    assert cancelled == {"sessionId": session, "cancelled": True}
    end = await editor.turn_end(session)  # well before the 60 s sleep ends
    assert end["reason"] == "cancelled", end
    if plugin:
        call = await editor.event(session, "tool_call_end")
        assert call["data"]["status"] == "cancelled", call
        assert "finished" not in (call["data"].get("output") or call["data"].get("error") or "")
    else:
        tool = f"agentls/tool/{session}/s1"
        ends = [p["value"] for p in editor.params("$/progress") if p["token"] == tool and p["value"]["kind"] == "end"]
        assert [e.get("message") for e in ends] == ["cancelled"], ends
    provider.push(Turn().text("ready again"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "still there?"})
    again = await editor.turn_end(session, 1)
    if plugin:
        assert again["text"] == "ready again"
    else:
        assert again["reason"] == "completed", again
        await editor.wait_for("the answer", lambda: "agentls: ready again" in editor.shown_messages())
    result = provider.tool_result("s1")
    assert result["is_error"] and "finished" not in result["text"], result


async def test_two_sessions_run_at_once(start_editor, provider, workspace):
    editor = await start_editor("neovim-0.11", plugin=True)
    first = (await editor.command("agentls.newSession", {}))["sessionId"]
    second = (await editor.command("agentls.newSession", {"model": "claude-second"}))["sessionId"]
    assert first != second
    provider.push(Turn().text("answer"), Turn().text("answer"))
    await editor.command("agentls.prompt", {"sessionId": first, "text": "first question"})
    await editor.command("agentls.prompt", {"sessionId": second, "text": "second question"})
    await editor.event(first, "processing_end")
    await editor.event(second, "processing_end")
    models = sorted(r["model"] for r in provider.requests())
    assert models == ["claude-second", "claude-test"]
    listed = await editor.command("agentls.listSessions", {})
    assert {s["sessionId"] for s in listed["sessions"] if s["open"]} == {first, second}
    closed = await editor.command("agentls.closeSession", {"sessionId": first})
    assert closed == {"sessionId": first, "closed": True}
    await editor.event(first, "session_end")
    # The session leaves the registry once its event stream has ended.
    for _ in range(400):
        listed = await editor.command("agentls.listSessions", {})
        if not any(s["sessionId"] == first and s["open"] for s in listed["sessions"]):
            break
        await asyncio.sleep(0.05)
    gone = await editor.raw_command("agentls.prompt", {"sessionId": first, "text": "hello?"})
    assert gone["error"]["data"] == "sessionId"


@pytest.mark.parametrize("name", ["neovim-0.11", "neovim-0.7"])
async def test_a_long_answer_reaches_a_plain_client_whole(start_editor, provider, workspace, tmp_path, name):
    # More than 12 lines: opened as a document where the client can show one (Neovim 0.11),
    # else every line in the message (Neovim 0.7 has no window/showDocument).
    editor = await start_editor(name)
    answer = "\n".join(f"Line {i} of the answer." for i in range(1, 21))
    provider.push(Turn().text(answer))
    session = (await editor.command("agentls.prompt", {"text": "explain at length"}))["sessionId"]
    await editor.turn_end(session)
    shown = await editor.wait_for(
        "the answer as a message", lambda: [m for m in editor.shown_messages() if "Line 1 of the answer." in m]
    )
    logged = [p["message"] for p in editor.params("window/logMessage") if "Line 1 of the answer." in p["message"]]
    assert logged == [f"agentls: {answer}"], "the log has all of it"
    if name == "neovim-0.11":
        [opened] = editor.params("window/showDocument")
        written = path_of(opened["uri"])
        assert written == tmp_path / "data" / "answers" / f"agentls-answer-{session}-1.md", opened
        assert written.read_text().rstrip("\n") == answer
        [message] = shown
        assert message.startswith("agentls: Line 1 of the answer."), message
        assert message.endswith(f"(the whole answer is open in {written})"), message
        assert "Line 20" not in message, "the message is short; the document has the answer"
    else:
        assert editor.messages("window/showDocument") == []
        assert shown == [f"agentls: {answer}"], "every line in the message"
    assert editor.messages("agentls/event") == []
