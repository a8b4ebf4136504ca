"""Neovim 0.11 without the plugin, headless, with the user's init (nvim/init.lua) and the suite's
probe (nvim/probe.lua). Every call goes through `nvim --server SOCK --remote-expr`."""

from __future__ import annotations

import json
import os
import subprocess

from harness import HERE, Journey, JourneyFailed, wait_until

NVIM_DIR = HERE / "nvim"


class NvimDriver:
    name = "nvim"
    # Escape at a question answers it (null): the server rejects at once.
    dismissal_answers = True
    shows_documents = True
    gets_progress = True

    def __init__(self, nvim: str, agentls: str, journey: Journey, init: str = "init.lua") -> None:
        self.nvim = nvim
        self.journey = journey
        self.socket = str(journey.tmp / "nvim.sock")
        env = {
            **os.environ,
            **journey.server_env,
            **journey.wire_env(agentls),
            "AGENTLS_PLAIN_OPTIONS": json.dumps(journey.options),
        }
        self.transcript = open(journey.tmp / "nvim.out", "w")
        self.process = subprocess.Popen(
            [nvim, "--headless", "--listen", self.socket, "-n", "-i", "NONE", "-u", str(NVIM_DIR / init),
             "--cmd", f"luafile {NVIM_DIR / 'probe.lua'}"],
            cwd=journey.root, env=env, stdin=subprocess.DEVNULL, stdout=self.transcript, stderr=subprocess.STDOUT,
        )
        wait_until("Neovim's socket", lambda: os.path.exists(self.socket), 15)

    def call(self, op: str, timeout: float = 20, **args) -> object:
        request = json.dumps({"op": op, **args})
        expr = "luaeval('AgentlsProbe.call(_A)', '" + request.replace("'", "''") + "')"
        done = subprocess.run([self.nvim, "--clean", "--headless", "--server", self.socket, "--remote-expr", expr],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0 or not done.stdout.strip():
            raise JourneyFailed(f"nvim probe {op} failed: {done.stderr.strip() or done.stdout.strip()}")
        answer = json.loads(done.stdout)
        if "error" in answer:
            raise JourneyFailed(f"nvim probe {op}: {answer['error']}")
        return answer["result"]

    # -- what a user does ---------------------------------------------------------------------

    def open(self, relative: str) -> None:
        self.call("open", path=str(self.journey.path(relative)))
        wait_until("agentls attached to the buffer",
                   lambda: any(c["initialized"] and c["attached"] for c in self.state()["clients"]), 20)

    def code_action(self, line: int, title: str) -> None:
        """Puts the cursor on ``line`` (1-based) and picks the code action starting with ``title``."""
        self.call("cursor", line=line)
        self.call("code_action", title=title)
        wait_until(f"the code action menu offering {title!r}",
                   lambda: any(t.startswith(title) for t in self.state()["actions_offered"]), 10)

    def code_action_on_lines(self, first: int, last: int, title: str) -> None:
        """Selects lines ``first``..``last`` (1-based) with V and picks the code action starting
        with ``title`` (Neovim sends the range to the end of the last line)."""
        self.call("code_action", title=title, lines=[first, last])
        wait_until(f"the code action menu offering {title!r}",
                   lambda: any(t.startswith(title) for t in self.state()["actions_offered"]), 10)

    def answer(self, title: str | None) -> None:
        """Picks ``title`` in the open prompt; ``None`` is Escape."""
        if not self.call("answer", title=title):
            raise JourneyFailed("no prompt was open to answer")

    def dismiss(self) -> None:
        self.answer(None)

    def insert_lines(self, after: int, lines: list[str]) -> None:
        self.call("insert_lines", after=after, lines=lines)

    def save(self) -> dict:
        """`:w`. When the file changed on disk since Neovim read it, Neovim asks "WARNING: The file
        has been changed since reading it!!! Do you really want to write to it (y/n)?"; headless,
        the question gets no key and is declined. The warning is the conflict reported; the user
        then writes anyway (`:w!`)."""
        path = str(self.journey.path("main.py"))
        self.call("write")

        def outcome() -> str | None:
            state = self.state()
            if "changed since reading" in state["messages"]:
                return "conflict"
            return "written" if not state["buffers"][path]["modified"] else None

        seen = wait_until("the buffer written or a warning shown", outcome, 10)
        conflict = [line for line in self.shown_messages().splitlines() if "changed since reading" in line]
        if seen == "conflict":
            self.call("write", force=True)
            wait_until("the buffer written with :w!", lambda: not self.state()["buffers"][path]["modified"], 10)
        return {"conflict": conflict}

    # -- what a user sees ---------------------------------------------------------------------

    def state(self) -> dict:
        return self.call("state")  # type: ignore[return-value]

    def prompts(self) -> list[dict]:
        return self.state()["prompts"]

    def open_prompt(self) -> dict | None:
        return next((p for p in self.prompts() if p.get("answered_ms") is None), None)

    def buffer_text(self, relative: str) -> str:
        buffers = self.state()["buffers"]
        path = str(self.journey.path(relative))
        if path not in buffers:
            raise JourneyFailed(f"{relative} is not open in Neovim (buffers: {list(buffers)})")
        return buffers[path]["text"]

    def shown_messages(self) -> str:
        """Everything the user can read back: the message history (`:messages`)."""
        return self.state()["messages"]

    def progress_titles(self) -> list[str]:
        """Titles and messages of the $/progress Neovim received (shown by a statusline)."""
        return [f"{p.get('title') or ''} {p.get('message') or ''}" for p in self.state()["progress"]]

    def opened_documents(self) -> dict[str, str]:
        return {name: b["text"] for name, b in self.state()["buffers"].items()}

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                subprocess.run([self.nvim, "--clean", "--headless", "--server", self.socket, "--remote-send",
                                "<C-\\><C-N>:qa!<CR>"], capture_output=True, timeout=5)
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.transcript.close()
