#!/usr/bin/env python3
"""Seeds the apply_patch fuzz corpus from the conformance fixtures (tests/fixtures/patch).

Each seed is the input format of fuzz_targets/apply_patch.rs: a file text with `\\x01` for its
line breaks, a newline, then a patch. Without seeds libFuzzer seldom builds a valid patch header.
Run from the repository root: python3 fuzz/seed.py
"""
import glob
import os

OUT = "fuzz/corpus/apply_patch"
MAX_LEN = 4096

os.makedirs(OUT, exist_ok=True)
count = 0
for case in sorted(glob.glob("tests/fixtures/patch/*")):
    patch_path = os.path.join(case, "patch.txt")
    if not os.path.exists(patch_path):
        continue
    with open(patch_path, encoding="utf-8", errors="replace") as f:
        patch = f.read()
    texts = []
    for path in sorted(glob.glob(os.path.join(case, "before", "**", "*"), recursive=True)):
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    texts.append(f.read())
            except UnicodeDecodeError:
                pass
    for index, text in enumerate(texts[:2] or [""]):
        data = text.replace("\n", "\x01") + "\n" + patch
        if len(data.encode()) > MAX_LEN:
            continue
        with open(os.path.join(OUT, f"seed-{os.path.basename(case)}-{index}"), "w", encoding="utf-8") as f:
            f.write(data)
        count += 1
print(f"{count} seeds in {OUT}")
