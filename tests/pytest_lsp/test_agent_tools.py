"""What the agent's tools get from the editor: files saved before a shell command (asked of a
plugin; for a plain client the server writes the agent's changes only, or asks before writing the
whole buffer when they share lines with the user's unsaved ones), and the editor's diagnostics
(plugin only)."""

from __future__ import annotations

import pytest
from editor import file_uri
from fake_provider import Turn


@pytest.mark.parametrize("name,plugin", [("neovim-0.7", False), ("vscode", True), ("eglot", False)])
async def test_changed_files_are_saved_before_a_shell_command(start_editor, provider, workspace, name, plugin):
    path = workspace / "notes.txt"
    path.write_text("alpha\nbeta\ngamma\ndelta\nepsilon\n")
    untouched = workspace / "other.txt"
    untouched.write_text("on disk\n")
    editor = await start_editor(name, plugin=plugin, options={"approval": "auto", "shell": {"permission": "allow"}})
    editor.open(path)
    editor.open(untouched)
    editor.type_text(untouched, "on disk", "unsaved typing")
    # The user's own unsaved change in the file the agent edits, a few lines away from the agent's.
    editor.type_text(path, "epsilon", "epsilon typed")
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
        Turn().tool_call("s1", "shell", {"command": "cat notes.txt other.txt"}),
        Turn().text("ok"),
    )
    session = (await editor.command("agentls.prompt", {"text": "edit and check"}))["sessionId"]
    await editor.turn_end(session)
    shell = provider.tool_result("s1")
    assert not shell["is_error"], shell
    assert "BETA" in shell["text"], "the shell saw the agent's edit"
    assert "on disk" in shell["text"], "a buffer the agent did not touch is not written"
    assert untouched.read_text() == "on disk\n"
    assert editor.text(path) == "alpha\nBETA\ngamma\ndelta\nepsilon typed\n", "the buffer holds both changes"
    saves = editor.params("agentls/saveDocuments")
    if plugin:
        # The plugin saves the buffer it was asked for, with everything in it.
        assert saves and saves[0]["uris"] == [file_uri(path)]
        assert path.read_text() == "alpha\nBETA\ngamma\ndelta\nepsilon typed\n"
    else:
        # The server writes the agent's change replayed on the disk text: the user's unsaved
        # change stays in the buffer only, and nothing had to be asked.
        assert saves == []
        assert path.read_text() == "alpha\nBETA\ngamma\ndelta\nepsilon\n"
        assert "epsilon typed" not in shell["text"] and "epsilon" in shell["text"]
        assert editor.messages("window/showMessageRequest") == []
        assert editor.messages("agentls/event") == []


async def test_the_diagnostics_tool_asks_a_plugin_client(start_editor, provider, workspace):
    lib = workspace / "src" / "lib.rs"
    lib.write_text("fn f() -> u8 { \"x\" }\n")
    editor = await start_editor("neovim-0.11", plugin=True)
    editor.editor_diagnostics = [{
        "uri": file_uri(lib),
        "diagnostics": [{
            "range": {"start": {"line": 0, "character": 15}, "end": {"line": 0, "character": 18}},
            "severity": 1, "message": "mismatched types", "source": "rustc",
        }],
    }]
    provider.push(Turn().tool_call("d1", "diagnostics", {"path": "src/lib.rs"}), Turn().text("A type error."))
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    started = await editor.event(session, "session_start")
    assert "diagnostics" in started["data"]["tools"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "what is wrong?"})
    end = await editor.event(session, "tool_call_end")
    assert "diagnostics" in provider.tool_names(0)
    assert end["data"]["output"] == f"{lib}:1:16: error: mismatched types (rustc)"
    [asked] = editor.params("agentls/diagnostics")
    assert asked == {"uri": file_uri(lib)}


async def test_a_plain_client_has_no_diagnostics_tool(start_editor, provider, workspace):
    editor = await start_editor("neovim-0.11")
    provider.push(Turn().text("Nothing to check."))
    session = (await editor.command("agentls.prompt", {"text": "any errors?"}))["sessionId"]
    await editor.turn_end(session)
    tools = provider.tool_names(0)
    assert "read_file" in tools, tools
    assert "diagnostics" not in tools, tools
    assert editor.messages("agentls/event") == []


@pytest.mark.parametrize("name,answer", [("neovim-0.11", "Save buffer"), ("eglot-1.9", "Don't save")])
async def test_a_plain_client_is_asked_when_its_unsaved_change_and_the_agents_share_a_line(
    start_editor, provider, workspace, name, answer
):
    path = workspace / "notes.txt"
    path.write_text("alpha\nbeta\ngamma\n")
    editor = await start_editor(name, options={"approval": "auto", "shell": {"permission": "allow"}})
    editor.open(path)
    # The user's unsaved change is on the line the agent then edits: the two cannot be separated.
    editor.type_text(path, "beta", "beta and more")
    editor.answer_message = lambda params: answer
    edit = {"file_path": "notes.txt", "old_string": "beta and more", "new_string": "BETA and more"}
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", edit),
        Turn().tool_call("s1", "shell", {"command": "cat notes.txt"}),
        Turn().text("ok"),
    )
    session = (await editor.command("agentls.prompt", {"text": "edit and check"}))["sessionId"]
    await editor.turn_end(session)
    [question] = editor.params("window/showMessageRequest")
    assert question["type"] == 2 and [a["title"] for a in question["actions"]] == ["Save buffer", "Don't save"]
    assert "notes.txt" in question["message"], question
    buffer = "alpha\nBETA and more\ngamma\n"
    assert editor.text(path) == buffer
    shell = provider.tool_result("s1")
    if answer == "Save buffer":
        assert path.read_text() == buffer, "the whole buffer was written"
        assert "BETA and more" in shell["text"], shell
    else:
        assert path.read_text() == "alpha\nbeta\ngamma\n", "nothing was written"
        assert "alpha\nbeta\ngamma" in shell["text"] and "may see older contents" in shell["text"], shell
    assert editor.messages("agentls/event") == []
