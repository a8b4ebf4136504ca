"""Creating, deleting and moving files with ``apply_patch``: resource operations inside
``documentChanges`` where the client announces them (VS Code), the server's own disk operations
where it cannot (eglot: text edits only; Neovim: no ``documentChanges``), and never behind the
back of a buffer the editor has open."""

from __future__ import annotations

import pytest
from editor import file_uri
from fake_provider import Turn

PATCH = """*** Begin Patch
*** Add File: added.txt
+new file
*** Delete File: gone.txt
*** Update File: old.txt
*** Move to: moved.txt
@@
-alpha
+ALPHA
 beta
*** End Patch"""


@pytest.mark.parametrize("name", ["vscode", "neovim-0.7", "neovim-0.11", "eglot", "eglot-1.9"])
async def test_create_delete_and_move(start_editor, provider, workspace, name):
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "old.txt").write_text("alpha\nbeta\n")
    editor = await start_editor(name, plugin=True, options={"approval": "auto"})
    session = (await editor.command("agentls.newSession", {"profile": "openai"}))["sessionId"]
    provider.push(Turn().tool_call("p1", "apply_patch", {"patch": PATCH}), Turn().text("done"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "reorganise"})
    end = await editor.event(session, "tool_call_end")
    assert end["data"]["status"] == "ok", end
    await editor.event(session, "processing_end")
    assert not (workspace / "gone.txt").exists() and not (workspace / "old.txt").exists()
    applies = editor.params("workspace/applyEdit")
    if name == "vscode":
        [apply] = applies
        ops = apply["edit"]["documentChanges"]
        kinds = {(op.get("kind"), op.get("uri") or op.get("newUri") or op["textDocument"]["uri"]) for op in ops}
        assert ("create", file_uri(workspace / "added.txt")) in kinds
        assert ("delete", file_uri(workspace / "gone.txt")) in kinds
        assert ("rename", file_uri(workspace / "moved.txt")) in kinds
        # The texts land in (unsaved) buffers.
        assert editor.buffers[file_uri(workspace / "added.txt")].text == "new file\n"
        assert editor.buffers[file_uri(workspace / "moved.txt")].text == "ALPHA\nbeta\n"
    else:
        assert applies == [], "nothing the client could take: the server did it on disk"
        assert (workspace / "added.txt").read_text() == "new file\n"
        assert (workspace / "moved.txt").read_text() == "ALPHA\nbeta\n"


@pytest.mark.parametrize("name", ["neovim-0.11", "eglot"])
async def test_an_open_file_is_not_deleted_behind_the_editor(start_editor, provider, workspace, name):
    gone = workspace / "gone.txt"
    gone.write_text("bye\n")
    editor = await start_editor(name, plugin=True, options={"approval": "auto"})
    editor.open(gone)
    patch = "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch"
    session = (await editor.command("agentls.newSession", {"profile": "openai"}))["sessionId"]
    provider.push(Turn().tool_call("p1", "apply_patch", {"patch": patch}), Turn().text("ok"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "delete it"})
    end = await editor.event(session, "tool_call_end")
    assert end["data"]["status"] == "error"
    assert "open in the editor" in end["data"]["error"], end
    assert gone.read_text() == "bye\n"


async def test_plain_vscode_confirms_every_operation_in_its_preview(start_editor, provider, workspace):
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "old.txt").write_text("alpha\nbeta\n")
    editor = await start_editor("vscode")  # no plugin, approval review: needsConfirmation
    session = (await editor.command("agentls.newSession", {"profile": "openai"}))["sessionId"]
    provider.push(Turn().tool_call("p1", "apply_patch", {"patch": PATCH}), Turn().text("done"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "reorganise"})
    await editor.turn_end(session)
    [apply] = editor.params("workspace/applyEdit")
    edit = apply["edit"]
    assert edit["changeAnnotations"]["agentls"]["needsConfirmation"] is True
    for op in edit["documentChanges"]:
        if "kind" in op:
            assert op["annotationId"] == "agentls", op
        else:
            assert all(e["annotationId"] == "agentls" for e in op["edits"]), op
    assert editor.messages("window/showMessageRequest") == []
    assert not (workspace / "gone.txt").exists()
    assert not provider.tool_result("p1")["is_error"]
    assert editor.messages("agentls/event") == []
