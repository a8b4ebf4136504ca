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

    ended = await editor.turn_end(session)
    if editor.work_done_progress:
        assert ended["reason"] == "completed", ended
    read = provider.tool_result("r1")
    assert "call(ÿ, 🎉)" in read["text"], "the agent read the unsaved buffer, changed at the right place"
    edited = provider.tool_result("e1")
    assert not edited["is_error"], edited
    await editor.wait_for("the answer as a message", lambda: "agentls: Done." in editor.shown_messages())
    assert editor.messages("agentls/event") == [], "a plain client gets no agentls/event"

    # A selection inside one line is sent as the block around it, naming the selected word.
    assert provider.saw(0, "around the cursor at line 1, on `wörld`"), f"the selection is read in {editor.encoding}"
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


@pytest.mark.parametrize("name", ["neovim-0.11", "eglot-1.9"])
async def test_edits_in_one_response_while_the_editor_reports_late(
    start_editor, provider: FakeProvider, workspace, name
):
    # Neovim reports an applied edit 150 ms later, eglot after 0.5 s of idle time: two edits of
    # one file in one response (the first adds a line, moving the second), a read right after
    # them, then a command, all before the editor's reports arrive.
    path = workspace / "notes.txt"
    path.write_text("one\ntwo\nthree\nfour\nfive\n")
    options = {"approval": "auto", "shell": {"permission": "allow"}}
    editor = await start_editor(name, options=options)
    editor.change_delay = 0.3
    editor.open(path)
    first = {"file_path": "notes.txt", "old_string": "two", "new_string": "TWO (first)\n2 (added)"}
    second = {"file_path": "notes.txt", "old_string": "four", "new_string": "FOUR (second)"}
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn()
        .tool_call("e1", "edit_file", first)
        .tool_call("e2", "edit_file", second)
        .tool_call("r2", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("s1", "shell", {"command": "cat notes.txt"}),
        Turn().text("Both done."),
    )
    session = (await editor.command("agentls.prompt", {"text": "shout two and four"}))["sessionId"]
    await editor.turn_end(session)

    expected = "one\nTWO (first)\n2 (added)\nthree\nFOUR (second)\nfive\n"
    assert editor.text(path) == expected, "each edit is in the buffer exactly once"
    assert [provider.tool_result(c)["is_error"] for c in ("e1", "e2")] == [False, False]
    read = provider.tool_result("r2")
    assert not read["is_error"], read
    shell = provider.tool_result("s1")
    assert not shell["is_error"], shell
    lines = ("TWO (first)", "2 (added)", "three", "FOUR (second)")
    for seen in (read["text"], shell["text"]):
        assert [seen.count(line) for line in lines] == [1, 1, 1, 1], seen
        assert "two" not in seen and "four" not in seen, seen
    assert path.read_text() == expected, "saved before the command"
    assert len(editor.params("workspace/applyEdit")) == 2
    assert editor.messages("agentls/event") == []
