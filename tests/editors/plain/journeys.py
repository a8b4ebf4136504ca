"""The plain-LSP journeys of issues 10, 14, 24 and 26, written once for every real editor.

Each journey is a function ``(journey, editor)``: ``journey`` holds the workspace and the fake
provider's requests, ``editor`` is a driver (nvim_driver.NvimDriver, emacs_driver.EmacsDriver)
that does what a user does and reports what the user sees. A journey declares its files, its
scripted model turns (and a second provider's, for a project file to point at), and extra server
environment or initializationOptions."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable

from harness import Editor, Journey, check, note, tool, wait_until

MAIN = "def add(a, b):\n    # agent: return the sum\n    pass\n\n\ndef sub(a, b):\n    return a - b\n"
EDITED = MAIN.replace("    pass\n", "    return a + b\n")
ACTION = "agentls: return the sum"
ACTION_LINE = 2

READ = [tool("r1", "read_file", file_path="main.py")]
EDIT = tool("e1", "edit_file", file_path="main.py", old_string="    pass\n", new_string="    return a + b\n")

# How long the server waits for an answer in the journeys that leave a question unanswered
# (AGENTLS_QUESTION_TIMEOUT_MS; the default is 10 minutes).
QUESTION_TIMEOUT_MS = 3000


@dataclass
class Spec:
    run: Callable[[Journey, Editor], None]
    files: dict[str, str]
    turns: list[list[dict]]
    env: dict[str, str] = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    stranger: list[list[dict]] | None = None  # turns of a second provider ({stranger} in files)


JOURNEYS: dict[str, Spec] = {}


def journey(files: dict[str, str] | None = None, turns: list[list[dict]] | None = None,
            env: dict[str, str] | None = None, options: dict | None = None,
            stranger: list[list[dict]] | None = None):
    def register(run: Callable[[Journey, Editor], None]) -> Callable[[Journey, Editor], None]:
        JOURNEYS[run.__name__] = Spec(run, files or {"main.py": MAIN}, turns or [], env or {}, options or {},
                                      stranger)
        return run
    return register


def wait_prompt(editor: Editor, contains: str, timeout: float = 20) -> dict:
    return wait_until(f"a prompt containing {contains!r}",
                      lambda: (p := editor.open_prompt()) and contains in p["message"] and p, timeout)


def wait_shown(editor: Editor, text: str, timeout: float = 20) -> str:
    return wait_until(f"{text!r} shown to the user", lambda: text in editor.shown_messages() and editor.shown_messages(),
                      timeout)


def check_relative(j: Journey, prompt: dict) -> None:
    check("M main.py" in prompt["message"], f"the review question names `M main.py`: {prompt['message']!r}")
    check(str(j.root) not in prompt["message"], f"the review question shows an absolute path: {prompt['message']!r}")


def result(j: Journey, request: int, call_id: str) -> dict:
    results = j.provider.tool_results(request)
    check(call_id in results, f"request {request} carries the result of {call_id} (has {list(results)})")
    return results[call_id]


# -- the happy paths (issue 10 item 8) -----------------------------------------------------------


@journey(turns=[READ, [EDIT], [{"text": "done: added the sum"}]])
def apply(j: Journey, editor: Editor) -> None:
    """A code action runs the agent; Apply → the buffer holds the edit, the disk is untouched."""
    editor.code_action(ACTION_LINE, ACTION)
    prompt = wait_prompt(editor, "agentls proposes changes")
    check_relative(j, prompt)
    editor.answer("Apply")
    wait_shown(editor, "done: added the sum")
    check(editor.buffer_text("main.py") == EDITED, f"the buffer holds the edit: {editor.buffer_text('main.py')!r}")
    check(j.disk("main.py") == MAIN, "the disk is untouched")
    check(not result(j, 2, "e1")["is_error"], f"the model is told the edit applied: {result(j, 2, 'e1')}")
    shown = editor.shown_messages() + "\n".join(editor.progress_titles())
    check(str(j.root) not in shown, f"messages and progress titles name workspace-relative paths: {shown!r}")


@journey(turns=[READ, [EDIT], [{"text": "fine, left it"}]])
def reject(j: Journey, editor: Editor) -> None:
    """Reject → the buffer is unchanged and the model's next request carries the rejection."""
    editor.code_action(ACTION_LINE, ACTION)
    wait_prompt(editor, "agentls proposes changes")
    editor.answer("Reject")
    wait_shown(editor, "fine, left it")
    check(editor.buffer_text("main.py") == MAIN, "the buffer is unchanged")
    outcome = result(j, 2, "e1")
    check(outcome["is_error"] and "reject" in outcome["text"].lower(), f"the model is told it was rejected: {outcome}")


@journey(turns=[READ, [EDIT], [{"text": "applied after a look"}]])
def show_diff(j: Journey, editor: Editor) -> None:
    """Show diff (where the editor can open documents) opens the change as a unified diff with
    workspace-relative headers and asks again; elsewhere only Apply and Reject are offered."""
    editor.code_action(ACTION_LINE, ACTION)
    prompt = wait_prompt(editor, "agentls proposes changes")
    if not editor.shows_documents:
        check(prompt["titles"] == ["Apply", "Reject"], f"the choices: {prompt['titles']}")
    else:
        check(prompt["titles"] == ["Apply", "Reject", "Show diff"], f"the choices: {prompt['titles']}")
        editor.answer("Show diff")
        diff = wait_until("the diff opened in the editor", lambda: next(
            (text for name, text in editor.opened_documents().items() if name.endswith(".diff")), None), 10)
        check("--- a/main.py" in diff and "+++ b/main.py" in diff and "-    pass" in diff
              and "+    return a + b" in diff, f"the diff: {diff!r}")
        wait_until("the question asked again", lambda: len(editor.prompts()) == 2 and editor.open_prompt(), 10)
    editor.answer("Apply")
    wait_shown(editor, "applied after a look")
    check(editor.buffer_text("main.py") == EDITED, f"the buffer holds the edit: {editor.buffer_text('main.py')!r}")


@journey(turns=[[tool("s1", "shell", command="echo ran > ran.txt")], [{"text": "the command ran"}]])
def permission(j: Journey, editor: Editor) -> None:
    """A shell command is asked; Allow once → it ran."""
    editor.code_action(ACTION_LINE, ACTION)
    prompt = wait_prompt(editor, "agentls wants to run")
    check("echo ran > ran.txt" in prompt["message"], f"the question shows the command: {prompt['message']!r}")
    editor.answer("Allow once")
    wait_shown(editor, "the command ran")
    check(j.path("ran.txt").exists() and j.disk("ran.txt") == "ran\n", "the command ran in the workspace")
    check(not result(j, 1, "s1")["is_error"], "the model is told the command ran")


@journey(files={"main.py": MAIN, "AGENTS.md": "Answer in haiku.\n"},
         turns=[[{"text": "first answer"}], [{"text": "second answer"}]])
def reload(j: Journey, editor: Editor) -> None:
    """AGENTS.md changed on disk between two prompts → the next request carries the new text."""
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "first answer")
    check("Answer in haiku." in j.provider.request_text(0), "the first request carries AGENTS.md")
    j.path("AGENTS.md").write_text("Answer in limericks.\n")
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "second answer")
    second = j.provider.request_text(1)
    check("Answer in limericks." in second and "Answer in haiku." not in second,
          "the second request carries the new AGENTS.md and not the old one")


@journey(turns=[READ, [tool("e1", "edit_file", file_path="main.py", old_string="    return nothing\n",
                            new_string="    return a + b\n")], [{"text": "could not edit"}]])
def bad_edit(j: Journey, editor: Editor) -> None:
    """edit_file with an old_string that is not in the file → the model gets an error, no question,
    the buffer is untouched."""
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "could not edit")
    check(result(j, 2, "e1")["is_error"], f"the model gets an error: {result(j, 2, 'e1')}")
    check(not editor.prompts(), f"no question was asked: {editor.prompts()}")
    check(editor.buffer_text("main.py") == MAIN and j.disk("main.py") == MAIN, "buffer and disk are untouched")


# -- issue 14 -------------------------------------------------------------------------------------

TWO = "def add(a, b):\n    # agent: fill in add and sub\n    return None  # add\n\n\ndef sub(a, b):\n    return None  # sub\n"
TWO_EDITED = ("def add(a, b):\n    # agent: fill in add and sub\n    total = a + b\n    return total\n\n\n"
              "def sub(a, b):\n    return a - b\n")


@journey(files={"main.py": TWO}, options={"approval": "auto"}, turns=[
    [tool("r1", "read_file", file_path="main.py")],
    [tool("e1", "edit_file", file_path="main.py", old_string="    return None  # add\n",
          new_string="    total = a + b\n    return total\n"),
     tool("e2", "edit_file", file_path="main.py", old_string="    return None  # sub\n", new_string="    return a - b\n")],
    [tool("r2", "read_file", file_path="main.py")],
    [{"text": "both filled in"}]])
def two_edits_auto(j: Journey, editor: Editor) -> None:
    """Two edit_file calls to one file in one response, approval auto → both edits exactly once,
    both reported applied, and a read right after sees them."""
    editor.code_action(ACTION_LINE, "agentls: fill in add and sub")
    wait_shown(editor, "both filled in")
    check(editor.buffer_text("main.py") == TWO_EDITED, f"the buffer holds both edits once: {editor.buffer_text('main.py')!r}")
    for call in ("e1", "e2"):
        check(not result(j, 2, call)["is_error"], f"{call} is reported applied: {result(j, 2, call)}")
    check("total = a + b" in result(j, 3, "r2")["text"] and "return a - b" in result(j, 3, "r2")["text"],
          f"read_file right after the edits sees them: {result(j, 3, 'r2')['text']!r}")
    check(not editor.prompts(), f"approval auto asks nothing: {editor.prompts()}")


def one_at_a_time(editor: Editor, answers: list[tuple[str, str]], think: float = 0.0) -> list[dict]:
    """Answers the questions in order; each must open only after the previous one was answered."""
    for contains, answer in answers:
        wait_prompt(editor, contains)
        if think:
            time.sleep(think)  # the user reads the question before answering: that is the point
        editor.answer(answer)
    prompts = editor.prompts()
    check(len(prompts) == len(answers), f"{len(answers)} questions were asked: {[p['message'] for p in prompts]}")
    for before, after in zip(prompts, prompts[1:]):
        check(after["opened_ms"] >= before["answered_ms"],
              f"{after['message']!r} opened at {after['opened_ms']} ms, before {before['message']!r} was answered "
              f"at {before['answered_ms']} ms")
    return prompts


@journey(turns=[READ, [EDIT, tool("s1", "shell", command="cat main.py > copy.txt")], [{"text": "copied"}]])
def edit_then_shell(j: Journey, editor: Editor) -> None:
    """edit_file and shell in one response → the questions come one at a time in call order and
    the command copies the EDITED file."""
    editor.code_action(ACTION_LINE, ACTION)
    one_at_a_time(editor, [("agentls proposes changes", "Apply"), ("agentls wants to run", "Allow once")])
    wait_shown(editor, "copied")
    check(j.path("copy.txt").exists() and j.disk("copy.txt") == EDITED,
          f"copy.txt has the edited text: {j.disk('copy.txt') if j.path('copy.txt').exists() else None!r}")
    check(editor.buffer_text("main.py") == EDITED, "the buffer holds the edit once")


USER_NOTE = "# user note: not saved yet"


def report_save_question(saved: dict) -> None:
    """Both editors decide "changed on disk" from the file's mtime alone, and nothing in plain LSP
    lets a server save a buffer or reset that mtime: once the server has written an open file for
    a command, the user's next save asks (Neovim: "WARNING: The file has been changed since
    reading it!!!", eglot: "main.py has changed since visited or saved.  Save anyway?"). The
    buffer holds everything the disk does, so answering yes loses nothing (checked above); the
    question itself is reported, not failed on."""
    for question in saved["conflict"]:
        note(f"the save asked: {question.strip()}")


@journey(turns=[READ, [EDIT], [tool("s1", "shell", command="cat main.py > seen.txt")], [{"text": "looked"}]])
def save_before_shell(j: Journey, editor: Editor) -> None:
    """An edit, then a command reading the file → the command sees the agent's edit, not the
    user's unrelated unsaved edit; saving afterwards raises no "changed on disk" conflict."""
    editor.insert_lines(7, [USER_NOTE])
    wait_until("the user's unsaved line in the buffer", lambda: USER_NOTE in editor.buffer_text("main.py"), 5)
    editor.code_action(ACTION_LINE, ACTION)
    one_at_a_time(editor, [("agentls proposes changes", "Apply"), ("agentls wants to run", "Allow once")])
    wait_shown(editor, "looked")
    seen = j.disk("seen.txt") if j.path("seen.txt").exists() else ""
    check("return a + b" in seen, f"the command saw the agent's edit: {seen!r}")
    check(USER_NOTE not in seen and USER_NOTE not in j.disk("main.py"),
          f"the user's unsaved line was not written to disk: {j.disk('main.py')!r}")
    check(editor.buffer_text("main.py") == EDITED + USER_NOTE + "\n", f"the buffer: {editor.buffer_text('main.py')!r}")
    saved = editor.save()
    check(j.disk("main.py") == EDITED + USER_NOTE + "\n", f"the user's save wrote the buffer: {j.disk('main.py')!r}")
    report_save_question(saved)


@journey(turns=[READ, [EDIT], [tool("s1", "shell", command="cat main.py > seen.txt")], [{"text": "looked"}]])
def save_after_shell(j: Journey, editor: Editor) -> None:
    """The common case: no unsaved edits of the user's. The command sees the agent's edit and the
    user's next save raises no "changed on disk" conflict."""
    editor.code_action(ACTION_LINE, ACTION)
    one_at_a_time(editor, [("agentls proposes changes", "Apply"), ("agentls wants to run", "Allow once")])
    wait_shown(editor, "looked")
    check(j.path("seen.txt").exists() and j.disk("seen.txt") == EDITED, "the command saw the agent's edit")
    saved = editor.save()
    check(j.disk("main.py") == EDITED, f"the save wrote the buffer: {j.disk('main.py')!r}")
    report_save_question(saved)


@journey(turns=[READ, [EDIT, tool("s1", "shell", command="cat main.py > copy.txt")], [{"text": "took my time"}]])
def slow_answer(j: Journey, editor: Editor) -> None:
    """The user answers each question after ~3 s → the turn completes and later messages are
    still processed (eglot 1.9's parser broke here)."""
    editor.code_action(ACTION_LINE, ACTION)
    one_at_a_time(editor, [("agentls proposes changes", "Apply"), ("agentls wants to run", "Allow once")], think=3)
    wait_shown(editor, "took my time")
    check(j.path("copy.txt").exists() and j.disk("copy.txt") == EDITED, "the command ran on the edited file")


def told_rejected(editor: Editor) -> bool:
    return bool(re.search(r"agentls.*(no answer|not answered|unanswered|timed out|rejected)", editor.shown_messages(),
                          re.IGNORECASE))


@journey(env={"AGENTLS_QUESTION_TIMEOUT_MS": str(QUESTION_TIMEOUT_MS)},
         turns=[READ, [EDIT], [{"text": "ok, not applied"}]])
def dismiss_prompt(j: Journey, editor: Editor) -> None:
    """Escape (Neovim: answers null) / C-g (eglot: answers nothing) at the review question → the
    turn does not hang: the change is rejected (at once, or at the question deadline, and then
    the user is told) and the turn ends."""
    editor.code_action(ACTION_LINE, ACTION)
    wait_prompt(editor, "agentls proposes changes")
    editor.dismiss()
    wait_shown(editor, "ok, not applied", timeout=QUESTION_TIMEOUT_MS / 1000 + 15)
    check(result(j, 2, "e1")["is_error"], f"the model is told nothing was applied: {result(j, 2, 'e1')}")
    if not editor.dismissal_answers:
        check(told_rejected(editor), "the user is told the unanswered question was rejected")
    check(editor.buffer_text("main.py") == MAIN, "the buffer is unchanged")


@journey(env={"AGENTLS_QUESTION_TIMEOUT_MS": str(QUESTION_TIMEOUT_MS)},
         turns=[READ, [EDIT], [{"text": "nobody answered"}], [{"text": "still alive"}]])
def unanswered_prompt(j: Journey, editor: Editor) -> None:
    """The user walks away from the question → at the deadline the change is rejected, the user is
    told, the turn ends; answering Apply afterwards changes nothing, and the next prompt works."""
    editor.code_action(ACTION_LINE, ACTION)
    wait_prompt(editor, "agentls proposes changes")
    wait_shown(editor, "nobody answered", timeout=QUESTION_TIMEOUT_MS / 1000 + 15)
    check(result(j, 2, "e1")["is_error"], f"the model is told nothing was applied: {result(j, 2, 'e1')}")
    check(told_rejected(editor), "the user is told the unanswered question was rejected")
    if editor.open_prompt():
        editor.answer("Apply")  # the question is still on screen: the user comes back and answers it
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "still alive")
    check(editor.buffer_text("main.py") == MAIN, "a late Apply applied nothing")


@journey(options={"shell": {"permission": "allow"}},
         turns=[[tool("s1", "shell", command="sleep 30; echo late > late.txt")], [{"text": "after the cancel"}]])
def cancel_action(j: Journey, editor: Editor) -> None:
    """While a turn runs, the code action "agentls: cancel the running turn" cancels it; the
    session then takes the next prompt."""
    editor.code_action(ACTION_LINE, ACTION)
    j.provider.wait_requests(1)
    editor.code_action(ACTION_LINE, "agentls: cancel the running turn")
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "after the cancel", timeout=15)
    check(not j.path("late.txt").exists(), "the cancelled command did not finish")


@journey(turns=[[{"text": "it subtracts"}]])
def explain_at_cursor(j: Journey, editor: Editor) -> None:
    """"agentls: explain" with the cursor on a line and nothing selected → the prompt carries the
    lines around the cursor (not an empty or one-word context) with their line numbers."""
    editor.code_action(7, "agentls: explain")
    wait_shown(editor, "it subtracts")
    request = j.provider.request_text(0)
    check("return a - b" in request, f"the prompt carries the line under the cursor: {request[-600:]!r}")


@journey(turns=[[{"text": "it adds"}]])
def explain_selection(j: Journey, editor: Editor) -> None:
    """"agentls: explain" on lines 1-3 selected linewise (Neovim: V, to the end of line 3; Emacs:
    a region ending at column 0 of line 4) → the prompt says lines 1-3, not 1-4."""
    editor.code_action_on_lines(1, 3, "agentls: explain")
    wait_shown(editor, "it adds")
    request = j.provider.request_text(0)
    check("lines 1-3" in request and "def add(a, b):" in request,
          f"the prompt names lines 1-3 with their text: {request[-400:]!r}")


LONG = "".join(f"line {n:02d}: the answer goes on with enough words to make a long reply, {n * 7} units.\n"
               for n in range(1, 41))


@journey(turns=[[{"text": LONG}]])
def long_answer(j: Journey, editor: Editor) -> None:
    """A ~3,400-character answer over 40 lines: every line reaches the user with default settings
    (the message history, or a document the server opened)."""
    check(len(LONG) > 3000, "the answer is long")
    editor.code_action(ACTION_LINE, ACTION)
    j.provider.wait_requests(1)

    def everything_shown() -> bool:
        seen = editor.shown_messages() + "\n".join(editor.opened_documents().values())
        return all(f"line {n:02d}:" in seen and f"{n * 7} units." in seen for n in range(1, 41))

    wait_until("every line of the long answer shown to the user", everything_shown, 20)


# -- issue 24: workspace trust ---------------------------------------------------------------------
# The project file of a folder the user has not trusted points the provider at a second fake
# provider (the stranger). Plain clients get one window/showMessageRequest (eglot: a minibuffer
# prompt; Neovim: vim.ui.select) right after `initialized`, before any session starts.

STRANGER_FILE = '[providers.anthropic]\nbase_url = "{stranger}"\n'
TRUST_QUESTION = "this folder is not trusted"
# "Not now" first: eglot types the first action in, so RET alone must not trust the folder.
TRUST_CHOICES = ["Not now", "Trust this folder"]


def trust_question(j: Journey, editor: Editor, key: str) -> dict:
    prompt = wait_prompt(editor, TRUST_QUESTION)
    check(prompt["titles"] == TRUST_CHOICES, f"the choices: {prompt['titles']}")
    check(key in prompt["message"], f"the question names the ignored key `{key}`: {prompt['message']!r}")
    check(f"agentls trust {j.root}" in prompt["message"],
          f"the question names the command that trusts the folder: {prompt['message']!r}")
    if prompt.get("preset"):
        check(prompt["preset"] == "Not now", f"RET alone must not trust the folder: {prompt['preset']!r} is typed in")
    return prompt


def stored(j: Journey) -> str:
    return j.trust_store.read_text() if j.trust_store.exists() else ""


def check_real_store_untouched(j: Journey) -> None:
    """The server's store is the journey's own (its XDG_CONFIG_HOME), never the real user's."""
    real = pathlib.Path.home() / ".config" / "agentls" / "trust.toml"
    check(not real.exists() or str(j.root) not in real.read_text(), f"the real user's {real} holds {j.root}")


@journey(files={"main.py": MAIN, ".agentls.toml": STRANGER_FILE},
         turns=[[{"text": "answered by your provider"}]], stranger=[[{"text": "answered by the stranger"}]])
def trust_not_now(j: Journey, editor: Editor) -> None:
    """An untrusted project file sends the provider to another host → the user is asked once;
    Not now → the prompt is answered by the user's provider, the stranger gets no request, and
    nothing is trusted."""
    assert j.stranger is not None
    prompt = trust_question(j, editor, "providers.anthropic.base_url")
    check(j.stranger.base_url in prompt["message"], f"the question names the stranger's host: {prompt['message']!r}")
    editor.answer("Not now")
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "answered by your provider")
    check(len(j.provider.requests()) == 1, f"one request to the user's provider: {len(j.provider.requests())}")
    check(not j.stranger.requests(), f"the stranger got no request: {j.stranger.requests()}")
    check(str(j.root) not in stored(j), f"the folder is not trusted: {stored(j)!r}")
    check(len([p for p in editor.prompts() if TRUST_QUESTION in p["message"]]) == 1, "asked once")
    check_real_store_untouched(j)


@journey(files={"main.py": MAIN, ".agentls.toml": STRANGER_FILE},
         turns=[[{"text": "answered by your provider"}]], stranger=[[{"text": "answered by the stranger"}]])
def trust_folder(j: Journey, editor: Editor) -> None:
    """Trust this folder → the journey's own trust store holds the folder, the user is told, and
    the session the next prompt starts uses the whole project file: it reaches the stranger."""
    assert j.stranger is not None
    trust_question(j, editor, "providers.anthropic.base_url")
    editor.answer("Trust this folder")
    wait_until("the folder in the trust store", lambda: str(j.root) in stored(j), 10)
    wait_shown(editor, f"agentls: trusted {j.root}")
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "answered by the stranger")
    check(len(j.stranger.requests()) == 1, f"one request to the stranger: {len(j.stranger.requests())}")
    check(not j.provider.requests(), f"the user's provider got no request: {j.provider.requests()}")
    check_real_store_untouched(j)


@journey(files={"main.py": MAIN, ".agentls.toml": '[shell]\npermission = "allow"\n'},
         turns=[[tool("s1", "shell", command="echo ran > ran.txt")], [{"text": "not run, then"}]])
def trust_shell_ignored(j: Journey, editor: Editor) -> None:
    """An untrusted project file's `[shell] permission = "allow"` is ignored (Not now) → the
    agent's command is asked about (Allow once / Always allow / Deny), and Deny keeps it from
    running."""
    trust_question(j, editor, "shell.permission")
    editor.answer("Not now")
    editor.code_action(ACTION_LINE, ACTION)
    prompt = wait_prompt(editor, "agentls wants to run")
    check("echo ran > ran.txt" in prompt["message"], f"the question shows the command: {prompt['message']!r}")
    check(prompt["titles"] == ["Allow once", "Always allow", "Deny"], f"the choices: {prompt['titles']}")
    editor.answer("Deny")
    wait_shown(editor, "not run, then")
    check(not j.path("ran.txt").exists(), "the command did not run")
    check(result(j, 1, "s1")["is_error"], f"the model is told the command was denied: {result(j, 1, 's1')}")


# -- MCP (issue 26) --------------------------------------------------------------------------------


def mcp_servers() -> pathlib.Path:
    """Where scripts/install-mcp-servers put the real MCP servers (it installs them once)."""
    repo = pathlib.Path(__file__).resolve().parents[3]
    out = subprocess.run([str(repo / "scripts" / "install-mcp-servers")], check=True, capture_output=True, text=True)
    return pathlib.Path(out.stdout.strip())


EVERYTHING = mcp_servers() / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
MCP_JSON = json.dumps({"mcpServers": {"everything": {"command": str(EVERYTHING)}}})


@journey(files={"main.py": MAIN, ".mcp.json": MCP_JSON},
         turns=[[tool("m1", "mcp__everything__echo", message="hello from a plain client")],
                [{"text": "the MCP server echoed it"}]])
def mcp_call(j: Journey, editor: Editor) -> None:
    """A trusted project's .mcp.json (server-everything from npm): the agent's MCP call is asked
    with the tool, the server and its arguments; Allow once → the server's answer reaches the
    model, and the call is seen in $/progress with the server's name (where the editor takes
    progress: not eglot 1.9)."""
    trust_question(j, editor, "mcp_servers.everything")
    editor.answer("Trust this folder")
    wait_until("the folder in the trust store", lambda: str(j.root) in stored(j), 10)
    editor.code_action(ACTION_LINE, ACTION)
    prompt = wait_prompt(editor, "agentls wants to call the tool", timeout=60)
    check("`echo` of the MCP server `everything`" in prompt["message"]
          and '"message":"hello from a plain client"' in prompt["message"],
          f"the question shows the tool, the server and the arguments: {prompt['message']!r}")
    check(prompt["titles"] == ["Allow once", "Always allow", "Deny"], f"the choices: {prompt['titles']}")
    editor.answer("Allow once")
    wait_shown(editor, "the MCP server echoed it", timeout=60)
    outcome = result(j, 1, "m1")
    check(not outcome["is_error"] and "Echo: hello from a plain client" in outcome["text"],
          f"the model got the server's answer: {outcome}")
    titles = editor.progress_titles()
    if editor.gets_progress:
        check(any(t.startswith("everything: echo") for t in titles), f"the call in $/progress: {titles}")
    else:
        note("no $/progress: the editor does not announce window.workDoneProgress")


@journey(options={"approval": "auto", "shell": {"permission": "allow"}},
         turns=[READ, [tool("s1", "shell", command="echo made > notes.txt")], [EDIT], [{"text": "done: sum and notes"}]])
def undo_action(j: Journey, editor: Editor) -> None:
    """Issue 28: after a turn that ran a command that created a file and edited the open buffer,
    the code action "agentls: undo the last turn" reverts both (the buffer through the editor,
    unsaved; the new file removed) and says so; "agentls: redo the undone turn" brings both back.
    (The command runs first: a buffer edited after the server saved it for a command makes
    Emacs ask "changed on disk" at the next edit, the undo's included; see report_save_question.)"""
    editor.code_action(ACTION_LINE, ACTION)
    wait_shown(editor, "done: sum and notes")
    check(editor.buffer_text("main.py") == EDITED, f"the buffer holds the edit: {editor.buffer_text('main.py')!r}")
    check(j.path("notes.txt").exists(), "the command made notes.txt")
    editor.code_action(ACTION_LINE, "agentls: undo the last turn")
    wait_shown(editor, "undid turn 1")
    wait_until("the buffer back as it was", lambda: editor.buffer_text("main.py") == MAIN, 10)
    check(not j.path("notes.txt").exists(), "the file the command made is removed")
    editor.code_action(ACTION_LINE, "agentls: redo the undone turn")
    wait_shown(editor, "redid turn 1")
    wait_until("the buffer holds the edit again", lambda: editor.buffer_text("main.py") == EDITED, 10)
    check(j.path("notes.txt").exists() and j.disk("notes.txt") == "made\n", "notes.txt is back")
    check(j.disk("main.py") == MAIN, "the open file's disk text was never written")
