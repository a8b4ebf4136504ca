"""Instruction files: watched through the client where it registers file watching dynamically,
by the server itself (notify) where it cannot; an edit on disk reaches the next model request."""

from __future__ import annotations

import pytest
from editor import file_uri
from fake_provider import Turn

DYNAMIC = {"vscode": True, "neovim-0.7": False, "neovim-0.11": False, "eglot": True}


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
