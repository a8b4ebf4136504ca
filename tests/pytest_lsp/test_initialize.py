"""What each recorded editor negotiates in ``initialize`` and right after ``initialized``."""

from __future__ import annotations

import pytest
from editor import Editor

COMMANDS = {
    "agentls.newSession",
    "agentls.prompt",
    "agentls.steer",
    "agentls.followUp",
    "agentls.cancel",
    "agentls.closeSession",
    "agentls.listSessions",
    "agentls.resumeSession",
    "agentls.history",
    "agentls.configure",
    "agentls.compact",
    "agentls.undoTurn",
    "agentls.redoTurn",
    "agentls.resolveReview",
    "agentls.resolvePermission",
    "agentls.trustFolder",
    "agentls.mcpServers",
    "agentls.mcpRestart",
}

# client → (position encoding the server must pick, does the client register file watching dynamically)
EXPECTED = {
    "vscode": ("utf-16", True),  # offers no positionEncodings: the UTF-16 default
    "neovim-0.7": ("utf-16", False),  # offers none; no didChangeWatchedFiles capability
    "neovim-0.11": ("utf-8", False),  # offers utf-8 first; dynamicRegistration: false
    "eglot": ("utf-8", True),  # offers utf-32, utf-8, utf-16: UTF-8 is preferred
    "eglot-1.9": ("utf-16", True),  # offers none
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_initialize_negotiates_what_the_client_offers(start_editor, name):
    editor: Editor = await start_editor(name)
    encoding, watches = EXPECTED[name]
    capabilities = editor.initialize_result["capabilities"]
    assert capabilities.get("positionEncoding", "utf-16") == encoding
    assert editor.initialize_result["serverInfo"]["name"] == "agentls"
    assert set(capabilities["executeCommandProvider"]["commands"]) == COMMANDS
    assert capabilities["textDocumentSync"]["change"] == 2, "incremental sync"
    assert capabilities["experimental"]["agentls"]["protocolVersion"] == 1

    # A request after `initialized` is answered after the server's own follow-up requests went out.
    listed = await editor.command("agentls.listSessions", {})
    assert listed["sessions"] == []
    registrations = [
        r
        for params in editor.params("client/registerCapability")
        for r in params["registrations"]
        if r["method"] == "workspace/didChangeWatchedFiles"
    ]
    if watches:
        await editor.wait_for("registerCapability", lambda: editor.params("client/registerCapability"))
        registrations = [
            r
            for params in editor.params("client/registerCapability")
            for r in params["registrations"]
            if r["method"] == "workspace/didChangeWatchedFiles"
        ]
        globs = {w["globPattern"] for w in registrations[0]["registerOptions"]["watchers"]}
        assert "**/AGENTS.md" in globs and "**/CLAUDE.md" in globs
    else:
        assert registrations == [], f"{name} cannot register file watching dynamically"


# client → does it announce workspace.configuration (the server pulls its settings then)
PULLS_SETTINGS = {"vscode": True, "neovim-0.7": False, "neovim-0.11": True, "eglot": True, "eglot-1.9": True}


@pytest.mark.parametrize("name", sorted(PULLS_SETTINGS))
async def test_settings_are_pulled_only_from_clients_that_offer_them(start_editor, name):
    editor: Editor = await start_editor(name, settings={"model": "claude-from-settings"})
    if PULLS_SETTINGS[name]:
        await editor.wait_for(
            "the settings confirmation",
            lambda: [m for m in editor.params("window/logMessage") if "using the editor's" in m["message"]],
        )
        [asked] = editor.params("workspace/configuration")
        assert asked["items"] == [{"section": "agentls"}]
        expected = "claude-from-settings"
    else:
        expected = "claude-test"  # initializationOptions
    created = await editor.command("agentls.newSession", {})
    assert created["model"] == expected
    assert bool(editor.params("workspace/configuration")) == PULLS_SETTINGS[name]
