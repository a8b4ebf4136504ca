"""What every plain-editor journey needs around the editor: a workspace, the scripted fake
provider as a process, the server's environment, and waiting on a condition with a deadline.

The editors themselves are driven by the drivers (``nvim_driver.py``, ``emacs_driver.py``)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any, Callable, Protocol, TypeVar

HERE = pathlib.Path(__file__).resolve().parent
FAKE_PROVIDER = HERE.parent / "fake_provider_cli.py"

T = TypeVar("T")


class JourneyFailed(AssertionError):
    """A check of a journey failed; the message says what was expected and what was seen."""


NOTES: list[str] = []


def note(message: str) -> None:
    """Records what an editor did that the suite reports but does not fail on (printed by run.py)."""
    NOTES.append(message)


def check(condition: object, message: str) -> None:
    if not condition:
        raise JourneyFailed(message)


def wait_until(what: str, probe: Callable[[], T], timeout: float = 20.0, interval: float = 0.1) -> T:
    """Polls ``probe`` until it returns something truthy; fails naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise JourneyFailed(f"timed out after {timeout:.0f}s waiting for {what} (last seen: {last!r})")
        time.sleep(interval)


class Editor(Protocol):
    """What a journey asks of an editor driver (nvim_driver.NvimDriver, emacs_driver.EmacsDriver):
    a user's actions, and what the user can see."""

    name: str
    dismissal_answers: bool  # dismissing a question answers it (null) rather than not at all
    shows_documents: bool  # the editor supports window/showDocument
    gets_progress: bool  # the editor announces window.workDoneProgress

    def open(self, relative: str) -> None: ...
    def code_action(self, line: int, title: str) -> None: ...
    def code_action_on_lines(self, first: int, last: int, title: str) -> None: ...
    def answer(self, title: str | None) -> None: ...
    def dismiss(self) -> None: ...
    def insert_lines(self, after: int, lines: list[str]) -> None: ...
    def save(self) -> dict: ...
    def prompts(self) -> list[dict]: ...
    def open_prompt(self) -> dict | None: ...  # {message, titles, preset: an answer typed in for the user}
    def buffer_text(self, relative: str) -> str: ...
    def shown_messages(self) -> str: ...
    def progress_titles(self) -> list[str]: ...
    def opened_documents(self) -> dict[str, str]: ...
    def stop(self) -> None: ...


def tool(call_id: str, name: str, **arguments: Any) -> dict:
    return {"tool": name, "id": call_id, "input": arguments}


class Provider:
    """tests/editors/fake_provider_cli.py as a child process: scripted turns, recorded requests."""

    def __init__(self, directory: pathlib.Path, turns: list[list[dict]]) -> None:
        self.directory = directory
        script = directory / "turns.json"
        script.write_text(json.dumps(turns))
        self.requests_file = directory / "requests.jsonl"
        port_file = directory / "provider.port"
        self.process = subprocess.Popen(
            [sys.executable, str(FAKE_PROVIDER), "--script", str(script), "--requests", str(self.requests_file),
             "--port-file", str(port_file)],
            stdin=subprocess.DEVNULL,
        )
        port = wait_until("the fake provider's port", lambda: port_file.exists() and port_file.read_text().strip(), 10)
        self.base_url = f"http://127.0.0.1:{port}"

    def push(self, *turns: list[dict]) -> None:
        request = urllib.request.Request(self.base_url + "/_push", data=json.dumps(list(turns)).encode(), method="POST")
        urllib.request.urlopen(request, timeout=5).read()

    def requests(self) -> list[dict]:
        if not self.requests_file.exists():
            return []
        return [json.loads(line) for line in self.requests_file.read_text().splitlines() if line.strip()]

    def request_text(self, index: int) -> str:
        requests = self.requests()
        return json.dumps(requests[index], ensure_ascii=False) if index < len(requests) else ""

    def tool_results(self, index: int) -> dict[str, dict]:
        """The tool results the ``index``-th request carries, by tool_use_id: ``{text, is_error}``."""
        requests = self.requests()
        if index >= len(requests):
            return {}
        results: dict[str, dict] = {}
        for message in requests[index].get("messages", []):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, list):
                        text = "".join(part.get("text", "") for part in inner if isinstance(part, dict))
                    else:
                        text = str(inner or "")
                    results[block["tool_use_id"]] = {"text": text, "is_error": bool(block.get("is_error"))}
        return results

    def wait_requests(self, count: int, timeout: float = 20.0) -> list[dict]:
        return wait_until(f"{count} model request(s)", lambda: len(self.requests()) >= count and self.requests(),
                          timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Journey:
    """One run: a temporary workspace (a git repository, so project roots are found), the user's
    provider, optionally a second one a project file may point at (the stranger), the server's
    environment with its own HOME and XDG_CONFIG_HOME (so its trust store), and where the
    server's log goes.

    ``{stranger}`` in a file's text is replaced by the stranger's base URL."""

    def __init__(self, name: str, files: dict[str, str], turns: list[list[dict]], env: dict[str, str] | None = None,
                 options: dict | None = None, stranger: list[list[dict]] | None = None) -> None:
        self.name = name
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"agentls-plain-{name}-"))
        self.root = self.tmp / "proj"
        self.root.mkdir()
        self.provider = Provider(self.tmp, turns)
        self.stranger: Provider | None = None
        if stranger is not None:
            (self.tmp / "stranger").mkdir()
            self.stranger = Provider(self.tmp / "stranger", stranger)
        for relative, text in files.items():
            path = self.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{stranger}", self.stranger.base_url) if self.stranger else text)
        subprocess.run(["git", "init", "-q", str(self.root)], check=True)
        home = self.tmp / "home"
        home.mkdir()
        self.log_file = home / ".local" / "state" / "agentls" / "agentls.log"
        self.trust_store = home / ".config" / "agentls" / "trust.toml"
        self.server_env = {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "ANTHROPIC_API_KEY": "sk-ant-fake-key",
            "ANTHROPIC_BASE_URL": self.provider.base_url,
            "AGENTLS_CONFIG": str(self.tmp / "no-user-config.toml"),
            "AGENTLS_DATA_DIR": str(self.tmp / "data"),
            "AGENTLS_CLIENT_TIMEOUT_MS": "5000",
            "AGENTLS_LOG": os.environ.get("AGENTLS_LOG", "agentls=debug"),
            **(env or {}),
        }
        self.options = {"model": "claude-test", **(options or {})}

    def wire_env(self, agentls: str) -> dict[str, str]:
        """The editor starts the server through wire-tee.sh, which keeps a wire trace in tmp."""
        return {"AGENTLS_PLAIN_BIN": str(HERE / "wire-tee.sh"), "AGENTLS_WIRE_BIN": agentls,
                "AGENTLS_WIRE_DIR": str(self.tmp)}

    def path(self, relative: str) -> pathlib.Path:
        return self.root / relative

    def disk(self, relative: str) -> str:
        return self.path(relative).read_text()

    def keep(self, into: pathlib.Path) -> None:
        """Keeps the evidence of a failed run (server log, requests, editor transcript) under ``into``."""
        into.mkdir(parents=True, exist_ok=True)
        for item in [*self.tmp.iterdir(), self.log_file, self.trust_store]:
            if item.is_file():
                shutil.copy(item, into / item.name)
        if self.stranger is not None and self.stranger.requests_file.exists():
            shutil.copy(self.stranger.requests_file, into / "stranger-requests.jsonl")
        sessions = self.tmp / "data" / "sessions"
        if sessions.is_dir():
            shutil.copytree(sessions, into / "sessions", dirs_exist_ok=True)

    def close(self) -> None:
        self.provider.stop()
        if self.stranger is not None:
            self.stranger.stop()
        if not os.environ.get("PLAIN_KEEP"): shutil.rmtree(self.tmp, ignore_errors=True)
