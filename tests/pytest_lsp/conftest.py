"""Fixtures: the agentls binary, a fake provider per test, a workspace in a temp dir, and a
factory that starts the server under a recorded editor's capabilities."""

from __future__ import annotations

import os
import pathlib

import pytest
import pytest_asyncio
from editor import Editor
from fake_provider import FakeProvider

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def binary() -> pathlib.Path:
    """The server binary: ``AGENTLS_BIN`` or the debug build (scripts/test-extra builds it)."""
    path = pathlib.Path(os.environ.get("AGENTLS_BIN", REPO / "target" / "debug" / "agentls"))
    if not path.is_file():
        pytest.fail(f"{path} does not exist: run `cargo build` first (scripts/test-extra does)")
    return path


@pytest.fixture
def provider():
    fake = FakeProvider().start()
    yield fake
    fake.stop()


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return root


@pytest.fixture
def server_env(tmp_path: pathlib.Path, provider: FakeProvider) -> dict[str, str]:
    """Exactly the environment the server gets: no user config, no real keys, a private data dir."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ANTHROPIC_API_KEY": "sk-ant-fake-key",
        "ANTHROPIC_BASE_URL": provider.base_url,
        "AGENTLS_CONFIG": str(tmp_path / "no-user-config.toml"),
        "AGENTLS_DATA_DIR": str(tmp_path / "data"),
        "AGENTLS_CLIENT_TIMEOUT_MS": "5000",
        "AGENTLS_LOG": os.environ.get("AGENTLS_LOG", "agentls=info"),
    }


@pytest_asyncio.fixture
async def start_editor(binary, server_env, workspace, provider):
    """``await start_editor("vscode", plugin=False, options={...})`` → a connected :class:`Editor`."""
    started: list[Editor] = []

    async def start(name: str, env: dict[str, str] | None = None, **kwargs) -> Editor:
        options = {"model": "claude-test", **kwargs.pop("options", {})}
        command = [str(binary), "serve", "--stdio"]
        editor = await Editor.start(
            name, command, {**server_env, **(env or {})}, workspace, options=options, provider=provider, **kwargs
        )
        started.append(editor)
        return editor

    yield start
    for editor in started:
        await editor.stop()
