"""Review of the agent's edits in each editor: the plugin flow (``agentls/review`` →
``agentls.resolveReview``) shaped by each client's workspace-edit capabilities, and the plain
flows (change annotations with ``needsConfirmation`` where announced, else
``window/showMessageRequest`` with [Apply] [Reject] and [Show diff] where documents can be shown)."""

from __future__ import annotations

import asyncio

import pytest
from editor import Editor, file_uri, path_of
from fake_provider import FakeProvider, Turn

CLIENTS = ["vscode", "neovim-0.7", "neovim-0.11", "eglot", "eglot-1.9"]
DOCUMENT_CHANGES = {"vscode": True, "neovim-0.7": False, "neovim-0.11": False, "eglot": True, "eglot-1.9": True}
SEVEN = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


def edits_for(edit: dict, uri: str, document_changes: bool) -> list[dict]:
    """The text edits of ``uri`` in an applyEdit, checking the shape the client can take."""
    if document_changes:
        assert "changes" not in edit, edit
        ops = [c for c in edit["documentChanges"] if "textDocument" in c and c["textDocument"]["uri"] == uri]
        assert len(ops) == 1, edit
        return ops[0]["edits"]
    assert "documentChanges" not in edit, edit
    return edit["changes"][uri]


@pytest.mark.parametrize("name", CLIENTS)
async def test_plugin_review_partial_accept_while_the_user_types(
    start_editor, provider: FakeProvider, workspace, name
):
    path = workspace / "notes.txt"
    path.write_text(SEVEN)
    editor = await start_editor(name, plugin=True)
    uri = editor.open(path)
    proposed = SEVEN.replace("two", "TWO").replace("six", "SIX")
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("w1", "write_file", {"file_path": "notes.txt", "content": proposed}),
        Turn().text("Understood."),
    )
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "capitalise two and six"})

    review = await editor.next_message("agentls/review")
    assert review["sessionId"] == session and review["callId"] == "w1"
    [file] = review["files"]
    assert (file["uri"], file["path"], file["op"]) == (uri, "notes.txt", "modify")
    assert [h["index"] for h in file["hunks"]] == [0, 1]
    assert [(h["oldText"], h["newText"]) for h in file["hunks"]] == [("two\n", "TWO\n"), ("six\n", "SIX\n")]
    assert [(h["oldStart"], h["oldLines"], h["newStart"], h["newLines"]) for h in file["hunks"]] == [
        (1, 1, 1, 1),
        (5, 1, 5, 1),
    ], "0-based line numbers"
    assert "-two\n+TWO\n" in file["diff"]
    assert editor.params("workspace/applyEdit") == [], "nothing is applied before the review is answered"

    # The user types in the buffer while the review is open: the accepted hunk is rebased.
    editor.type_text(path, "four", "4 (typed)")
    bad = await editor.raw_command(
        "agentls.resolveReview",
        {"reviewId": review["reviewId"], "decision": "accept", "files": [{"uri": uri, "acceptedHunks": [5]}]},
    )
    assert bad["error"]["code"] == -32602 and bad["error"]["data"] == "files[0].acceptedHunks", bad
    resolved = await editor.command(
        "agentls.resolveReview",
        {
            "reviewId": review["reviewId"],
            "decision": "accept",
            "files": [{"uri": uri, "acceptedHunks": [0]}],
            "feedback": "leave six alone",
        },
    )
    assert resolved == {"reviewId": review["reviewId"], "decision": "accept"}

    done = await editor.event(session, "processing_end")
    assert done["data"]["text"] == "Understood."
    assert editor.text(path) == "one\nTWO\nthree\n4 (typed)\nfive\nsix\nseven\n"
    [apply] = editor.params("workspace/applyEdit")
    edit = apply["edit"]
    assert "changeAnnotations" not in edit
    edits = edits_for(edit, uri, DOCUMENT_CHANGES[name])
    if DOCUMENT_CHANGES[name]:
        [document_edit] = edit["documentChanges"]
        assert document_edit["textDocument"]["version"] == 2, "the version after the user's typing"
        assert all(c.get("kind") is None for c in edit["documentChanges"]), "text edits only"
    assert [e["newText"] for e in edits] == ["TWO\n"]

    result = await editor.event(session, "tool_call_end", 1)
    told = result["data"].get("output") or result["data"].get("error")
    assert "accepted hunks [0] and rejected hunks [1]" in told, told
    assert "leave six alone" in told and "merged" in told, told
    assert provider.saw(2, "rejected hunks [1]"), "the model is told"
    # A resolved review cannot be resolved again.
    again = await editor.raw_command("agentls.resolveReview", {"reviewId": review["reviewId"], "decision": "reject"})
    assert again["error"]["data"] == "reviewId", again


@pytest.mark.parametrize("name", CLIENTS)
async def test_plugin_review_creates_a_file_the_way_the_client_can(start_editor, provider, workspace, name):
    editor = await start_editor(name, plugin=True)
    new = workspace / "src" / "new.txt"
    provider.push(Turn().tool_call("w1", "write_file", {"file_path": str(new), "content": "fresh\n"}), Turn().text("ok"))
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "create it"})
    review = await editor.next_message("agentls/review")
    assert review["files"][0]["op"] == "create"
    await editor.command("agentls.resolveReview", {"reviewId": review["reviewId"], "decision": "accept"})
    await editor.event(session, "processing_end")
    applies = editor.params("workspace/applyEdit")
    if name == "vscode":
        # documentChanges with resource operations: a CreateFile, then the text.
        [apply] = applies
        ops = apply["edit"]["documentChanges"]
        assert ops[0]["kind"] == "create" and ops[0]["uri"] == file_uri(new)
        assert ops[1]["textDocument"] == {"uri": file_uri(new), "version": None}
        assert editor.buffers[file_uri(new)].text == "fresh\n"
    else:
        # No resource operations (eglot; 1.9 understands only text edits inside documentChanges)
        # or no documentChanges (Neovim): the server writes it.
        assert applies == [], applies
        assert new.read_text() == "fresh\n"


# client → the buttons of the plain review question ("Show diff" needs window.showDocument)
BUTTONS = {
    "neovim-0.7": ["Apply", "Reject"],
    "neovim-0.11": ["Apply", "Reject", "Show diff"],
    "eglot": ["Apply", "Reject"],
    "eglot-1.9": ["Apply", "Reject"],
}


@pytest.mark.parametrize("name", CLIENTS)
async def test_plain_review_asks_the_way_the_client_can(start_editor, provider, workspace, name):
    path = workspace / "notes.txt"
    path.write_text(SEVEN)
    editor = await start_editor(name)
    uri = editor.open(path)
    answers = ["Show diff", "Apply"] if name == "neovim-0.11" else ["Apply"]
    editor.answer_message = lambda params: answers.pop(0)
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "three", "new_string": "THREE"}),
        Turn().text("Edited."),
    )
    reply = await editor.command("agentls.prompt", {"text": "shout three"})
    session = reply["sessionId"]
    await editor.turn_end(session)
    assert editor.text(path) == SEVEN.replace("three", "THREE")
    applies = editor.params("workspace/applyEdit")
    [apply] = applies
    edit = apply["edit"]
    edits = edits_for(edit, uri, DOCUMENT_CHANGES[name])
    questions = [
        q for q in editor.params("window/showMessageRequest") if q["message"].startswith("agentls proposes changes")
    ]
    if name == "vscode":
        # VS Code confirms annotated edits itself (Refactor Preview): no question, every edit annotated.
        assert questions == []
        annotation = edit["changeAnnotations"]["agentls"]
        assert annotation["needsConfirmation"] is True and "notes.txt" in annotation["label"]
        assert edits and all(e["annotationId"] == "agentls" for e in edits)
    else:
        assert "changeAnnotations" not in edit and all("annotationId" not in e for e in edits)
        assert [a["title"] for a in questions[0]["actions"]] == BUTTONS[name]
        assert "M notes.txt (1 hunk)" in questions[0]["message"]
        if name == "neovim-0.11":
            [shown] = editor.client.shown_documents
            diff = path_of(shown.uri).read_text()
            assert "-three\n+THREE\n" in diff
            assert len(questions) == 2, "asked again after showing the diff"
    assert not provider.tool_result("e1")["is_error"]
    # The final answer reaches a plain client as a message, and no agentls/event does.
    shown = await editor.wait_for(
        "showMessage", lambda: [m for m in editor.params("window/showMessage") if "Edited." in m["message"]]
    )
    assert shown[0]["type"] == 3 and shown[0]["message"] == "agentls: Edited."
    assert editor.messages("agentls/event") == []


@pytest.mark.parametrize("name", CLIENTS)
async def test_plain_review_rejected_tells_the_model(start_editor, provider, workspace, name):
    path = workspace / "notes.txt"
    path.write_text(SEVEN)
    editor = await start_editor(name)
    editor.open(path)
    editor.answer_message = lambda params: "Reject"
    editor.refuse_edit = "the user unticked the change in the preview"
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "five", "new_string": "FIVE"}),
        Turn().text("Fine."),
    )
    session = (await editor.command("agentls.prompt", {"text": "shout five"}))["sessionId"]
    await editor.turn_end(session)
    result = provider.tool_result("e1")
    assert result["is_error"], result
    assert editor.text(path) == SEVEN
    assert path.read_text() == SEVEN
    expected = "the user unticked the change" if name == "vscode" else "the user rejected the change in the editor"
    assert expected in result["text"], result
    assert provider.saw(2, expected)
    assert editor.messages("agentls/event") == []


@pytest.mark.parametrize("name", ["neovim-0.11", "eglot-1.9"])
async def test_an_unanswered_plain_review_is_rejected_at_the_deadline(start_editor, provider, workspace, name):
    path = workspace / "notes.txt"
    path.write_text(SEVEN)
    editor = await start_editor(name, env={"AGENTLS_QUESTION_TIMEOUT_MS": "700"})
    editor.open(path)
    editor.hold_questions = asyncio.get_running_loop().create_future()
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "five", "new_string": "FIVE"}),
        Turn().text("Left it."),
    )
    session = (await editor.command("agentls.prompt", {"text": "shout five"}))["sessionId"]
    await editor.turn_end(session)
    [question] = editor.params("window/showMessageRequest")
    assert question["message"].startswith("agentls proposes changes"), question
    result = provider.tool_result("e1")
    assert result["is_error"] and "did not answer the review within 700 ms" in result["text"], result
    warning = (
        "agentls: the proposed change to notes.txt got no answer within 700 ms; it was rejected and the agent was told"
    )
    assert {"type": 2, "message": warning} in editor.params("window/showMessage")
    await editor.wait_for("the answer", lambda: "agentls: Left it." in editor.shown_messages())
    # The user answers [Apply] long after: nothing is applied.
    editor.answer_message = lambda params: "Apply"
    editor.hold_questions.set_result(None)
    provider.push(Turn().text("Still here."))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "anything else?"})
    await editor.turn_end(session, 1)
    assert editor.params("workspace/applyEdit") == []
    assert editor.text(path) == SEVEN and path.read_text() == SEVEN


@pytest.mark.parametrize("name", ["vscode", "neovim-0.7"])
async def test_uris_match_however_the_editor_escapes_them(start_editor, provider, workspace, name):
    # The editor spells the URI its own way (Python's quote escapes "@", "[", "]" and the
    # space; the server may not); the review must still be resolvable with the editor's URI
    # and the edit must reach the open buffer.
    folder = workspace / "odd dir"
    folder.mkdir()
    path = folder / "a@b [é].txt"
    path.write_text(SEVEN)
    editor = await start_editor(name, plugin=True)
    uri = editor.open(path)
    assert "%40" in uri and "%5B" in uri
    proposed = SEVEN.replace("two", "TWO").replace("six", "SIX")
    relative = "odd dir/a@b [é].txt"
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": relative}),
        Turn().tool_call("w1", "write_file", {"file_path": relative, "content": proposed}),
        Turn().text("ok"),
    )
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "capitalise"})
    review = await editor.next_message("agentls/review")
    resolved = await editor.raw_command(
        "agentls.resolveReview",
        {"reviewId": review["reviewId"], "decision": "accept", "files": [{"uri": uri, "acceptedHunks": [1]}]},
    )
    assert "result" in resolved, resolved
    await editor.event(session, "processing_end")
    assert editor.text(path) == SEVEN.replace("six", "SIX")
    [apply] = editor.params("workspace/applyEdit")
    if DOCUMENT_CHANGES[name]:
        assert apply["edit"]["documentChanges"][0]["textDocument"]["version"] == 1


@pytest.mark.parametrize("name", ["eglot-1.9", "neovim-0.11"])
async def test_accepting_a_user_edited_final_text(start_editor, provider, workspace, name):
    path = workspace / "notes.txt"
    path.write_text(SEVEN)
    editor = await start_editor(name, plugin=True)
    uri = editor.open(path)
    provider.push(
        Turn().tool_call("r1", "read_file", {"file_path": "notes.txt"}),
        Turn().tool_call("e1", "edit_file", {"file_path": "notes.txt", "old_string": "three", "new_string": "THREE"}),
        Turn().text("ok"),
    )
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "shout three"})
    review = await editor.next_message("agentls/review")
    final = SEVEN.replace("three", "Three (edited by me)")
    both = await editor.raw_command(
        "agentls.resolveReview",
        {"reviewId": review["reviewId"], "decision": "accept",
         "files": [{"uri": uri, "finalText": final, "acceptedHunks": [0]}]},
    )
    assert both["error"]["data"] == "files[0].finalText"
    await editor.command(
        "agentls.resolveReview",
        {"reviewId": review["reviewId"], "decision": "accept", "files": [{"uri": uri, "finalText": final}]},
    )
    end = await editor.event(session, "tool_call_end", 1)
    assert "edited your change" in end["data"]["output"], end
    await editor.event(session, "processing_end")
    assert editor.text(path) == final
