#!/usr/bin/env python3
"""Runs the plain-LSP journeys (journeys.py) in real editors against the real agentls binary.

    run.py --agentls BIN [--nvim NVIM] [--editors nvim,emacs,nvim-start] [--logs DIR] [-k SUBSTRING] [--keep-all]

PLAIN_KEEP=1 in the environment keeps every journey's temporary directory.

Prints one line per journey and editor, keeps the evidence of each failure (server log, model
requests, editor output) under --logs, and ends with `N passed, N failed`."""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from emacs_driver import EmacsDriver  # noqa: E402
from harness import NOTES, Journey, JourneyFailed  # noqa: E402
from journeys import JOURNEYS  # noqa: E402
from nvim_driver import NvimDriver  # noqa: E402


# The editors and the journeys each runs: `nvim-start` is Neovim with the vim.lsp.start form of
# the configuration (the one Neovim 0.10 needs), checked on the happy path only.
EDITORS = {"nvim": None, "emacs": None, "nvim-start": ("apply", "reject", "permission")}


def start(editor: str, args: argparse.Namespace, journey: Journey):
    if editor in ("nvim", "nvim-start"):
        init = "init.lua" if editor == "nvim" else "init-start.lua"
        driver = NvimDriver(args.nvim, args.agentls, journey, init)
        driver.open("main.py")
        return driver
    return EmacsDriver(args.agentls, journey, "main.py")


def print_evidence(evidence: pathlib.Path, lines: int = 25) -> None:
    """The editor's screen and the end of the server's log of a failed journey, in the output: a
    failure on a machine whose files are gone afterwards (CI) still shows what the editor showed."""
    for name in sorted(p.name for p in evidence.glob("*screen*.txt")) + ["agentls.log"]:
        path = evidence / name
        if not path.is_file():
            continue
        tail = path.read_text(errors="replace").splitlines()[-lines:]
        print(f"       --- {name} (last {len(tail)} lines)", *(f"       | {line}" for line in tail), sep="\n", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agentls", required=True)
    parser.add_argument("--nvim", default="nvim")
    parser.add_argument("--editors", default=",".join(EDITORS))
    parser.add_argument("--logs", type=pathlib.Path, default=pathlib.Path("target/editors/plain-logs"))
    parser.add_argument("-k", dest="only", default="")
    parser.add_argument("--keep-all", action="store_true", help="keep the evidence of passing journeys too")
    args = parser.parse_args()
    # The editors run in the journey's workspace: paths given relative to here must not move.
    args.nvim = str(pathlib.Path(args.nvim).resolve()) if "/" in args.nvim else args.nvim
    args.agentls = str(pathlib.Path(args.agentls).resolve())
    args.logs = args.logs.resolve()

    passed = failed = 0
    for editor in args.editors.split(","):
        for name, spec in JOURNEYS.items():
            label = f"{editor}::{name}"
            if args.only and args.only not in label or EDITORS[editor] and name not in EDITORS[editor]:
                continue
            journey = Journey(f"{editor}-{name}", spec.files, spec.turns, spec.env, spec.options, spec.stranger)
            began = time.monotonic()
            driver = None
            error = None
            try:
                driver = start(editor, args, journey)
                spec.run(journey, driver)
            except JourneyFailed as failure:
                error = str(failure)
            except Exception:  # noqa: BLE001 - a broken driver is a failed journey, with its trace
                error = traceback.format_exc()
            finally:
                if driver is not None:
                    try:
                        driver.stop()
                    except Exception:  # noqa: BLE001
                        error = error or traceback.format_exc()
            seconds = time.monotonic() - began
            notes = [f"       note: {line}" for line in NOTES]
            NOTES.clear()
            if error is None:
                passed += 1
                print(f"ok     {label} ({seconds:.1f}s)", *notes, sep="\n", flush=True)
                if args.keep_all:
                    journey.keep(args.logs / label.replace("::", "-"))
            else:
                failed += 1
                evidence = args.logs / label.replace("::", "-")
                journey.keep(evidence)
                print(f"FAIL   {label} ({seconds:.1f}s): {error}\n       evidence: {evidence}", *notes, sep="\n",
                      flush=True)
                print_evidence(evidence)
            journey.close()
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
