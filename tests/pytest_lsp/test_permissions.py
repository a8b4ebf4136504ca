"""Shell permissions: ``agentls/permission`` for the plugin, ``window/showMessageRequest`` with
[Allow once] [Always allow] [Deny] for plain clients; "always" is remembered per project."""

from __future__ import annotations

import json

import pytest
from fake_provider import Turn


@pytest.mark.parametrize("name", ["neovim-0.7", "eglot"])
async def test_plain_client_is_asked_with_buttons(start_editor, provider, workspace, tmp_path, name):
    editor = await start_editor(name)
    answers = ["Deny", "Always allow"]
    editor.answer_message = lambda params: answers.pop(0)
    provider.push(
        Turn().tool_call("s1", "shell", {"command": "echo denied-run"}),
        Turn().tool_call("s2", "shell", {"command": "echo allowed-run"}),
        Turn().tool_call("s3", "shell", {"command": "echo allowed-run again"}),
        Turn().text("done"),
    )
    session = (await editor.command("agentls.prompt", {"text": "run"}))["sessionId"]
    await editor.turn_end(session)
    questions = editor.params("window/showMessageRequest")
    assert len(questions) == 2, "the third command matches the stored rule and is not asked"
    assert [a["title"] for a in questions[0]["actions"]] == ["Allow once", "Always allow", "Deny"]
    assert "echo denied-run" in questions[0]["message"] and questions[0]["type"] == 2
    denied, allowed, again = (provider.tool_result(c) for c in ("s1", "s2", "s3"))
    assert denied["is_error"] and "denied" in denied["text"], denied
    assert not allowed["is_error"] and "allowed-run" in allowed["text"], allowed
    assert not again["is_error"] and "allowed-run again" in again["text"], again
    assert editor.messages("agentls/event") == []
    rules = json.loads((tmp_path / "data" / "permissions.json").read_text())
    assert "echo allowed-run" in json.dumps(rules)


async def test_plugin_gets_a_permission_notification(start_editor, provider, workspace):
    editor = await start_editor("neovim-0.11", plugin=True)
    provider.push(Turn().tool_call("s1", "shell", {"command": "echo plugin-run"}), Turn().text("ran"))
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "run"})
    ask = await editor.next_message("agentls/permission")
    assert ask["sessionId"] == session and ask["callId"] == "s1" and ask["toolName"] == "shell"
    assert ask["command"] == "echo plugin-run" and ask["cwd"] == str(workspace)
    assert ask["options"] == ["allow_once", "allow_always", "deny"]
    bad = await editor.raw_command("agentls.resolvePermission", {"requestId": ask["requestId"], "decision": "yes"})
    assert bad["error"]["data"] == "decision"
    resolved = await editor.command(
        "agentls.resolvePermission", {"requestId": ask["requestId"], "decision": "allow_once"}
    )
    assert resolved == {"requestId": ask["requestId"], "decision": "allow_once"}
    end = await editor.event(session, "tool_call_end")
    assert "plugin-run" in end["data"]["output"]
    assert editor.messages("window/showMessageRequest") == []


@pytest.mark.parametrize("name", ["neovim-0.7", "eglot"])
async def test_the_users_deny_and_allow_decide_without_a_question(start_editor, provider, workspace, name):
    """The one permission policy in the server: the user's ``deny`` refuses with a reason the
    model reads, ``allow`` runs; neither asks."""
    for mode, runs in (("deny", False), ("allow", True)):
        editor = await start_editor(name, options={"shell": {"permission": mode}})
        marker = workspace / f"ran-{mode}.txt"
        provider.push(Turn().tool_call(f"p-{mode}", "shell", {"command": f"touch {marker}"}), Turn().text("done"))
        session = (await editor.command("agentls.prompt", {"text": "run"}))["sessionId"]
        await editor.turn_end(session)
        result = provider.tool_result(f"p-{mode}")
        assert marker.exists() == runs, (mode, result)
        assert result["is_error"] != runs, (mode, result)
        if not runs:
            assert 'shell.permission = "deny"' in result["text"], result
        assert editor.messages("window/showMessageRequest") == [], mode
