#!/usr/bin/env python3
"""Types into the benchmark's editor like a person: one `x` every INTERVAL seconds for SECONDS
seconds through `tmux -L SESSION send-keys` (the benchmark's private tmux server), printing the CLOCK_MONOTONIC time (ns) at which each key was
sent (before send-keys starts: tmux's own delivery, a millisecond or two, is counted, and shows
in the control run), one per line."""

import subprocess
import sys
import time

session, seconds, interval = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + seconds
while time.monotonic() < end:
    sent = time.monotonic_ns()
    subprocess.run(["tmux", "-L", session, "send-keys", "-t", session, "-l", "x"], check=True)
    print(sent, flush=True)
    time.sleep(interval)
