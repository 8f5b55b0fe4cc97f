#!/usr/bin/env python3
"""Writes Tests/SwiftBERTTests/Fixtures/sentences.txt: 300 real English sentences from the license
and copyright texts Debian installs, for the INT8-versus-FP32 accuracy tests. Deterministic: the
same machine image gives the same file. Standard library only."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/sentences.txt"
COUNT = 300


def sources():
    yield from sorted(pathlib.Path("/usr/share/common-licenses").glob("*"))
    yield from sorted(pathlib.Path("/usr/share/doc").glob("*/copyright"))


def main():
    found = set()
    for path in sources():
        if not path.is_file():
            continue
        text = re.sub(r"\s+", " ", path.read_text(errors="replace"))
        for s in re.split(r"(?<=[.;:!?])\s+(?=[A-Z])", text):
            s = s.strip()
            # Prose, not lists of file names or e-mail addresses.
            if 30 <= len(s) <= 300 and s.isascii() and len(re.findall(r"\b[a-z]{3,}\b", s)) >= 5 and "@" not in s:
                found.add(s)
    ordered = sorted(found)
    step = len(ordered) / COUNT
    chosen = [ordered[int(i * step)] for i in range(COUNT)]
    OUT.write_text("\n".join(chosen) + "\n")
    print(f"{len(chosen)} sentences from {len(found)} candidates -> {OUT}")


if __name__ == "__main__":
    main()
