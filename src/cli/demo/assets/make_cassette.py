#!/usr/bin/env python3
"""Writes session.jsonl, the model side of the session `agentls demo` plays.

The cassette is written by hand (here) rather than recorded: it holds only what a provider would
stream (text deltas, tool calls, the final response of each call), in the neutral format of
src/llm/cassette.rs, without the requests, which replay does not need. Everything else in the
demo (the agent loop, the tools, the review, the file on disk) is real. Run it after changing the
session, then `AGENTLS_UPDATE_FIXTURES=1 cargo test --test cli demo::` and read the new output.
"""

import json
import pathlib
import re

PATCH = """\
*** Begin Patch
*** Update File: greet.py
@@ def main() -> None:
     parser.add_argument("names", nargs="+", help="who to greet")
+    parser.add_argument("-v", "--verbose", action="store_true", help="say what the script is doing")
     args = parser.parse_args()
+    if args.verbose:
+        print(f"greeting {len(args.names)} name(s)")
     for name in args.names:
-        print(f"Hello, {name}!")
+        print(f"Hi there, {name}!")
*** End Patch
"""

# (answer text, [(call id, tool, arguments)]) per model call, in order.
TURNS = [
    ("I'll read greet.py first to see how it handles its command line.",
     [("call_demo_1", "read_file", {"file_path": "greet.py"})]),
    ("It parses its arguments with argparse. Before adding output of my own, I'll check everything "
     "the script prints.",
     [("call_demo_2", "shell", {"command": "grep -n 'print(' greet.py",
                                "description": "list what greet.py prints"})]),
    ("It prints one greeting per name. `--verbose` fits in next to `names`: I'll add the flag, "
     "print a line about what the script is doing when it is set, and while I'm there make the "
     "greeting a little friendlier.",
     [("call_demo_3", "apply_patch", {"patch": PATCH})]),
    ("Done. greet.py now has a `-v/--verbose` flag: with it the script first says how many names "
     "it is about to greet, then greets them as before.\n\n"
     "You rejected the friendlier greeting because other scripts parse this output, so the greeting "
     "stays exactly `Hello, <name>!` and the output without `--verbose` is unchanged.\n\n"
     "Try it: `python3 greet.py --verbose Ada Grace`.", []),
]


def deltas(text):
    """A few words per delta, as a provider streams them."""
    words = re.findall(r"\S+\s*|\s+", text)
    return ["".join(words[i:i + 3]) for i in range(0, len(words), 3)]


def exchange(n, text, calls):
    events = [{"type": "text_delta", "data": d} for d in deltas(text)]
    content = [{"type": "text", "text": text}]
    for call_id, name, arguments in calls:
        events += [
            {"type": "tool_call_start", "data": {"id": call_id, "name": name}},
            {"type": "tool_call_delta", "data": {"id": call_id, "arguments_fragment": json.dumps(arguments)}},
            {"type": "tool_call_end", "data": {"id": call_id, "name": name, "arguments": arguments}},
        ]
        content.append({"type": "tool_call", "id": call_id, "name": name, "arguments": arguments})
    response = {"id": f"demo_{n}", "model": "replay", "content": content,
                "finish_reason": "tool_calls" if calls else "stop",
                "usage": {"input_tokens": 0, "output_tokens": 0}}
    events.append({"type": "finish", "data": response})
    return {"mode": "stream", "provider": "replay", "events": events}


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_name("session.jsonl")
    lines = [json.dumps(exchange(n, text, calls)) for n, (text, calls) in enumerate(TURNS, 1)]
    out.write_text("\n".join(lines) + "\n")
