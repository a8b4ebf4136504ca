"""Emacs 28 + eglot 1.9, a real interactive `emacs -nw` inside a private tmux server (eglot sends
didChange from an idle timer, which never fires in --batch). The suite types like a user with
`tmux send-keys` and reads Emacs's state with emacsclient (emacs/probe.el)."""

from __future__ import annotations

import json
import shlex
import subprocess
import time

from harness import HERE, Journey, JourneyFailed, wait_until

EMACS_DIR = HERE / "emacs"


class EmacsDriver:
    name = "emacs"
    # C-g at a question sends no answer at all: only the server's deadline ends it.
    dismissal_answers = False
    # eglot 1.9 does not announce window.showDocument.
    shows_documents = False
    gets_progress = False  # eglot 1.9 does not announce window.workDoneProgress

    def __init__(self, agentls: str, journey: Journey, first_file: str) -> None:
        self.journey = journey
        self.tmux_socket = str(journey.tmp / "tmux.sock")
        self.server_dir = journey.tmp / "emacs-server"
        self.server_dir.mkdir(mode=0o700)
        self.state_file = journey.tmp / "emacs-state.json"
        env = {
            **journey.server_env,
            **journey.wire_env(agentls),
            "AGENTLS_PLAIN_OPTIONS": json.dumps(journey.options),
            "AGENTLS_PLAIN_EMACS_SOCKET_DIR": str(self.server_dir),
            "TERM": "xterm-256color",
        }
        command = " ".join(
            ["env", *(shlex.quote(f"{k}={v}") for k, v in env.items()),
             "emacs", "-nw", "-Q", "-l", shlex.quote(str(EMACS_DIR / "init.el")),
             "-l", shlex.quote(str(EMACS_DIR / "probe.el")), shlex.quote(str(journey.path(first_file)))]
            + ["2>", shlex.quote(str(journey.tmp / "emacs.err"))])
        subprocess.run(["tmux", "-S", self.tmux_socket, "new-session", "-d", "-s", "plain", "-x", "160", "-y", "48",
                        "-c", str(journey.root), command], check=True)
        wait_until("Emacs's server socket", lambda: (self.server_dir / "probe").exists(), 20)
        self.current = first_file
        wait_until("eglot connected to agentls", lambda: self._buffer(first_file).get("eglot") is True, 20)

    # -- plumbing ------------------------------------------------------------------------------

    def eval(self, expression: str) -> str:
        done = subprocess.run(["emacsclient", "-s", str(self.server_dir / "probe"), "--eval", expression],
                              capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise JourneyFailed(f"emacsclient {expression!r} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "-S", self.tmux_socket, "send-keys", "-t", "plain", *keys], check=True)

    def type(self, text: str) -> None:
        """Types ``text`` as a user would in the minibuffer: spaces quoted with C-q so that
        completion does not take them."""
        for i, word in enumerate(text.split(" ")):
            if i:
                self.keys("C-q", "Space")
            if word:
                subprocess.run(["tmux", "-S", self.tmux_socket, "send-keys", "-t", "plain", "-l", word], check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "-S", self.tmux_socket, "capture-pane", "-p", "-t", "plain"],
                              capture_output=True, text=True).stdout

    def state(self) -> dict:
        if self.state_file.exists():
            self.state_file.unlink()
        self.eval(f'(agentls-probe-dump "{self.state_file}")')
        return json.loads(self.state_file.read_text())

    def _buffer(self, relative: str) -> dict:
        return self.state()["buffers"].get(str(self.journey.path(relative)), {})

    def _wait_minibuffer(self, contains: str, timeout: float = 10) -> dict:
        return wait_until(f"a minibuffer prompt containing {contains!r}",
                          lambda: (m := self.state()["minibuffer"]) and contains in (m.get("prompt") or "") and m,
                          timeout)

    # -- what a user does ---------------------------------------------------------------------

    def open(self, relative: str) -> None:
        if relative != self.current:
            self.keys("C-x", "C-f")
            self._wait_minibuffer("Find file")
            self.keys("C-a", "C-k")
            self.type(str(self.journey.path(relative)))
            self.keys("Enter")
            self.current = relative
            wait_until(f"eglot managing {relative}", lambda: self._buffer(relative).get("eglot") is True, 20)

    def code_action(self, line: int, title: str) -> None:
        """M-g g LINE, then M-x eglot-code-actions and the action whose title starts with ``title``."""
        self.keys("M-g", "g")
        self._wait_minibuffer("Goto line")
        self.type(str(line))
        self.keys("Enter")
        self._pick_code_action(title)

    def _pick_code_action(self, title: str) -> None:
        self.keys("M-x")
        self._wait_minibuffer("M-x")
        self.type("eglot-code-actions")
        self.keys("Enter")
        self._wait_minibuffer("Pick an action")
        self.type(title)
        self.keys("Tab", "Enter")
        wait_until("the code action menu to close",
                   lambda: not ((m := self.state()["minibuffer"]) and "Pick an action" in (m.get("prompt") or "")), 10)

    def code_action_on_lines(self, first: int, last: int, title: str) -> None:
        """Selects lines ``first``..``last`` (the region ends at column 0 of the next line), then
        M-x eglot-code-actions and the action whose title starts with ``title``."""
        self.eval(f'(agentls-probe-select-lines "{self.journey.path(self.current)}" {first} {last})')
        self._pick_code_action(title)

    def answer(self, title: str | None) -> None:
        """Types ``title`` at the open prompt and RET; ``None`` is C-g."""
        state = self.state()
        if not state["minibuffer"]:
            raise JourneyFailed("no prompt was open to answer")
        opened = len(state["prompts"]) - 1
        if title is None:
            self.keys("C-g")
        else:
            # eglot 1.9 puts the first action in the minibuffer as initial input: clear it first.
            self.keys("C-a", "C-k")
            self.type(title)
            self.keys("Enter")
        # The next question may open at once: wait for this one to close, not for the minibuffer.
        wait_until("the prompt to close", lambda: self.state()["prompts"][opened].get("answered_ms") is not None, 10)

    def dismiss(self) -> None:
        self.answer(None)

    def insert_lines(self, after: int, lines: list[str]) -> None:
        text = "".join(line + "\n" for line in lines)
        self.eval(f'(agentls-probe-insert "{self.journey.path(self.current)}" {after} {json.dumps(text)})')

    def save(self) -> dict:
        """C-x C-s; a "changed since visited or saved" question is recorded and answered yes."""
        conflict = []
        self.keys("C-x", "C-s")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            state = self.state()
            minibuffer = state["minibuffer"]
            if minibuffer and minibuffer.get("prompt"):
                conflict.append(minibuffer["prompt"])
                self.type("yes")
                self.keys("Enter")
                break
            if not state["buffers"][str(self.journey.path(self.current))]["modified"]:
                break
            time.sleep(0.1)
        wait_until("the buffer to be saved",
                   lambda: self.state()["buffers"][str(self.journey.path(self.current))]["modified"] is False, 10)
        return {"conflict": conflict}

    # -- what a user sees ---------------------------------------------------------------------

    def prompts(self) -> list[dict]:
        """The server's questions (eglot's "Server reports" prompts), as they opened and closed."""
        return [p for p in self.state()["prompts"] if "Server reports" in p["message"]]

    def open_prompt(self) -> dict | None:
        state = self.state()
        minibuffer = state["minibuffer"]
        if minibuffer and "Server reports" in (minibuffer.get("prompt") or ""):
            # eglot 1.9 offers the first action as the minibuffer's initial input: RET takes it.
            return {"message": minibuffer["prompt"], "titles": state["prompts"][-1]["titles"],
                    "preset": minibuffer.get("contents") or None}
        return None

    def buffer_text(self, relative: str) -> str:
        buffer = self._buffer(relative)
        if not buffer:
            raise JourneyFailed(f"{relative} is not open in Emacs")
        return buffer["text"]

    def shown_messages(self) -> str:
        """Everything the user can read back: the *Messages* buffer."""
        return self.state()["messages"]

    def progress_titles(self) -> list[str]:
        """eglot 1.9 does not announce window.workDoneProgress: it gets no progress."""
        return []

    def opened_documents(self) -> dict[str, str]:
        return {name: b["text"] for name, b in self.state()["buffers"].items()}

    def stop(self) -> None:
        (self.journey.tmp / "emacs-screen.txt").write_text(self.screen())
        try:
            self.eval(f'(agentls-probe-save-events "{self.journey.tmp / "eglot-events.txt"}")')
            self.eval("(kill-emacs 0)")
        except (JourneyFailed, subprocess.TimeoutExpired):
            pass
        subprocess.run(["tmux", "-S", self.tmux_socket, "kill-server"], capture_output=True)
