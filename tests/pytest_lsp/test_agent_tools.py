"""What the agent's tools get from the editor: files saved before a shell command (asked of a
plugin, written by the server for a plain client), and the editor's diagnostics (plugin only)."""

from __future__ import annotations

import pytest
from editor import file_uri
from fake_provider import Turn


@pytest.mark.parametrize("name,plugin", [("neovim-0.7", False), ("vscode", True), ("eglot", False)])
async def test_changed_files_are_saved_before_a_shell_command(start_editor, provider, workspace, name, plugin):
    path = workspace / "notes.txt"
    path.write_text("alpha\nbeta\n")
    untouched = workspace / "other.txt"
    untouched.write_text("on disk\n")
    editor = await start_editor(name, plugin=plugin, options={"approval": "auto", "shell": {"permission": "allow"}})
    editor.open(path)
    editor.open(untouched)
    editor.type_text(untouched, "on disk", "unsaved typing")
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
        Turn().tool_call("s1", "shell", {"command": "cat notes.txt other.txt"}),
        Turn().text("ok"),
    )
    session = (await editor.command("agentls.prompt", {"text": "edit and check"}))["sessionId"]
    shell = await editor.event(session, "tool_call_end", 2)
    assert "BETA" in shell["data"]["output"], "the shell saw the agent's edit"
    assert "on disk" in shell["data"]["output"], "a buffer the agent did not touch is not written"
    assert path.read_text() == "alpha\nBETA\n" and untouched.read_text() == "on disk\n"
    saves = editor.params("agentls/saveDocuments")
    if plugin:
        assert saves and saves[0]["uris"] == [file_uri(path)]
    else:
        assert saves == []


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
    assert end["data"]["output"] == f"{lib}:1:16: error: mismatched types (rustc)"
    [asked] = editor.params("agentls/diagnostics")
    assert asked == {"uri": file_uri(lib)}


async def test_a_plain_client_has_no_diagnostics_tool(start_editor, provider, workspace):
    editor = await start_editor("neovim-0.11")
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    started = await editor.event(session, "session_start")
    assert "diagnostics" not in started["data"]["tools"]
