"""Instruction files: watched through the client where it registers file watching dynamically,
by the server itself (notify) where it cannot; an edit on disk reaches the next model request."""

from __future__ import annotations

import pytest
from editor import file_uri
from fake_provider import Turn

DYNAMIC = {"vscode": True, "neovim-0.7": False, "neovim-0.11": False, "eglot": True, "eglot-1.9": True}


@pytest.mark.parametrize("name", sorted(DYNAMIC))
async def test_agents_md_edited_on_disk_reaches_the_next_request(start_editor, provider, workspace, name):
    agents = workspace / "AGENTS.md"
    agents.write_text("Always answer in French.\n")
    editor = await start_editor(name, plugin=True)
    session = (await editor.command("agentls.newSession", {}))["sessionId"]
    provider.push(Turn().text("Bonjour"), Turn().text("nuqneH"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "hello"})
    await editor.event(session, "processing_end")
    assert provider.saw(0, "Always answer in French.")

    registered = [
        r for p in editor.params("client/registerCapability") for r in p["registrations"]
        if r["method"] == "workspace/didChangeWatchedFiles"
    ]
    assert bool(registered) == DYNAMIC[name]
    agents.write_text("Always answer in Klingon.\n")
    if DYNAMIC[name]:
        # The editor watches and reports the change.
        editor.write_message({
            "jsonrpc": "2.0",
            "method": "workspace/didChangeWatchedFiles",
            "params": {"changes": [{"uri": file_uri(agents), "type": 2}]},
        })
    reloaded = await editor.event(session, "project_docs_reloaded")
    assert reloaded["data"]["path"] == str(agents)
    assert "next model call" in reloaded["data"]["message"]
    await editor.command("agentls.prompt", {"sessionId": session, "text": "hello again"})
    await editor.event(session, "processing_end", 1)
    assert provider.saw(1, "Always answer in Klingon.") and not provider.saw(1, "French")
    logged = [m for m in editor.params("window/logMessage") if "reloaded instructions" in m["message"]]
    assert logged, "the reload is announced in the log"


async def test_a_codex_directory_created_later_is_watched_too(start_editor, provider, workspace):
    # Neovim cannot watch files for the server: the server's own watcher must see
    # .codex/instructions.md appear (and change) although .codex did not exist at startup.
    editor = await start_editor("neovim-0.7", plugin=True)
    session = (await editor.command("agentls.newSession", {"profile": "openai"}))["sessionId"]
    await editor.event(session, "session_start")
    (workspace / ".codex").mkdir()
    instructions = workspace / ".codex" / "instructions.md"
    instructions.write_text("Prefer small functions.\n")
    first = await editor.event(session, "project_docs_reloaded")
    assert first["data"]["path"] == str(instructions)
    provider.push(Turn().text("ok"), Turn().text("ok again"))
    await editor.command("agentls.prompt", {"sessionId": session, "text": "hi"})
    await editor.event(session, "processing_end")
    assert provider.saw(0, "Prefer small functions.")
    # The reload above was consumed by that call; only a watch on .codex can see this change.
    reloads = len(editor.events(session, "project_docs_reloaded"))
    instructions.write_text("Prefer long functions.\n")
    await editor.event(session, "project_docs_reloaded", reloads)
    await editor.command("agentls.prompt", {"sessionId": session, "text": "hi again"})
    await editor.event(session, "processing_end", 1)
    assert provider.saw(1, "Prefer long functions.") and not provider.saw(1, "Prefer small functions.")
