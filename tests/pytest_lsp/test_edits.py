"""Positions and edits in each editor's own terms: the negotiated position encoding in both
directions (the editor's changes and ranges in, the agent's edits out), and the shape of
``workspace/applyEdit`` (versioned ``documentChanges`` or plain ``changes``)."""

from __future__ import annotations

import pytest
from editor import Editor, file_uri, position_at
from fake_provider import FakeProvider, Turn

CLIENTS = ["vscode", "neovim-0.7", "neovim-0.11", "eglot", "eglot-1.9"]
# Neovim announces no workspaceEdit.documentChanges (0.7 nor 0.11): it must get `changes`.
DOCUMENT_CHANGES = {"vscode": True, "neovim-0.7": False, "neovim-0.11": False, "eglot": True, "eglot-1.9": True}

# Non-ASCII before every position that matters: a wrong encoding moves it.
ON_DISK = 'héllo = "😀 wörld"; call(x)\nsecond line\nlast 😀 line'


async def new_session(editor: Editor) -> str:
    created = await editor.command("agentls.newSession", {})
    assert created["profile"] == "anthropic" and created["model"] == "claude-test"
    return created["sessionId"]


@pytest.mark.parametrize("name", CLIENTS)
async def test_positions_follow_the_negotiated_encoding(start_editor, provider: FakeProvider, workspace, name):
    path = workspace / "src" / "greet.txt"
    path.write_text(ON_DISK)
    editor = await start_editor(name, options={"approval": "auto"})
    editor.open(path)
    # An unsaved change whose range lies after the emoji on the same line.
    editor.type_text(path, "call(x)", "call(ÿ, 🎉)")
    typed = editor.text(path)
    provider.push(
        Turn().text("Reading it.").tool_call("r1", "read_file", {"file_path": str(path)}),
        Turn().tool_call(
            "e1", "edit_file", {"file_path": str(path), "old_string": "last 😀 line", "new_string": "last 😀 line, edité"}
        ),
        Turn().text("Done."),
    )
    session = await new_session(editor)
    line = typed.split("\n")[0]
    start = position_at(typed, typed.index("wörld"), editor.encoding)
    end = position_at(typed, typed.index("wörld") + len("wörld"), editor.encoding)
    context = {"uri": file_uri(path), "range": {"start": start, "end": end}}
    await editor.command("agentls.prompt", {"sessionId": session, "text": "look at this", "context": context})

    read = await editor.event(session, "tool_call_end")
    assert "call(ÿ, 🎉)" in read["data"]["output"], "the agent read the unsaved buffer, changed at the right place"
    edited = await editor.event(session, "tool_call_end", 1)
    assert edited["data"]["status"] == "ok", edited
    done = await editor.event(session, "processing_end")
    assert done["data"]["text"] == "Done."

    assert provider.saw(0, "```\nwörld\n```"), f"the selection is read in {editor.encoding}"
    assert provider.saw(1, line), "the model got the buffer text"

    expected = typed.replace("last 😀 line", "last 😀 line, edité")
    assert editor.text(path) == expected, "the edit landed where the agent meant it"

    [apply] = editor.params("workspace/applyEdit")
    edit = apply["edit"]
    assert "changeAnnotations" not in edit, "no confirmation asked: approval is auto"
    if DOCUMENT_CHANGES[name]:
        assert "changes" not in edit
        [document_edit] = edit["documentChanges"]
        assert document_edit["textDocument"] == {"uri": file_uri(path), "version": 2}
        edits = document_edit["edits"]
    else:
        assert "documentChanges" not in edit
        assert list(edit["changes"]) == [file_uri(path)]
        edits = edit["changes"][file_uri(path)]
    assert all("annotationId" not in e for e in edits)
    assert all(e["range"]["start"]["line"] == 2 for e in edits), f"minimal edits on the last line only: {edits}"
