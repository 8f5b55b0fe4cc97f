#!/usr/bin/env python3
"""The last layer for the rows a head reads (HeadRows), end to end: two `bert` binaries (one
from before the change, one after) run the same `bert embed` in interleaved rounds, and the
medians of their wall times are compared, per model and pooling.

[CLS] and last-token pooling read one row of each text, so the new binary runs the last layer's
attention queries, output projection and feed-forward network for that row alone; mean pooling
reads every row and is the control (its ratio should be 1). The time is what bert reports for
embedding (tokenizing, the passes, the head), not loading the model.

    python3 tools/bench/rows_read_bench.py --before /tmp/bert-before --after .build/release/bert \\
        --rounds 5 --threads 2
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# (label, model folder, pooling, weights, texts): mean pooling is the control. Texts enough for
# a few seconds of embedding each.
CASES = [
    ("all-MiniLM-L6-v2, cls", "weights/all-MiniLM-L6-v2", "cls", "real", 256),
    ("all-MiniLM-L6-v2, mean (control)", "weights/all-MiniLM-L6-v2", "mean", "real", 256),
    ("bert-base shape, cls", "weights/bert-base-random", "cls", "random", 48),
    ("bert-base shape, mean (control)", "weights/bert-base-random", "mean", "random", 48),
    ("DeBERTa-v3-base, cls", "weights/deberta-v3-base-random", "cls", "random", 32),
    ("Qwen3-Embedding-0.6B shape, lasttoken", "weights/qwen3-embedding-0.6b-random", "lasttoken", "random", 8),
]


def texts(count: int) -> str:
    lines = (ROOT / "Tests/SwiftBERTTests/Fixtures/sentences.txt").read_text().splitlines()
    # Six fixture sentences a text, cut at --max-length: about 128 tokens each.
    return "".join(" ".join(lines[(6 * i + j) % len(lines)] for j in range(6)) + "\n" for i in range(count))


def run(binary: str, model: str, pooling: str, threads: int, input_text: str, max_length: int) -> float:
    """The embedding time bert reports on stderr ("embedded N lines in S s"): tokenizing, the
    passes and the head, without loading the model (whose page-cache reads moved the wall time
    of a 2.4 GB model by seconds from run to run)."""
    env = dict(os.environ, OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", "Haswell"))
    done = subprocess.run([binary, "embed", "--model", str(ROOT / model), "--pooling", pooling, "--format", "npy",
                           "--threads", str(threads), "--max-length", str(max_length)],
                          input=input_text.encode(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, env=env)
    found = re.search(r"embedded \d+ lines in ([0-9.]+) s", done.stderr.decode())
    if not found:
        sys.exit(f"{binary}: no embedding time on stderr: {done.stderr.decode()[-300:]}")
    return float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="bert built before the change")
    parser.add_argument("--after", required=True, help="bert built with it")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--texts", type=int, default=0, help="texts per run (default: each case's own)")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--cases", default="", help="comma-separated substrings of the case labels to run (default: all)")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.cases or any(s in c[0] for s in args.cases.split(","))]
    cases = [c for c in cases if (ROOT / c[1] / "model.safetensors").exists()]
    inputs = {c[0]: texts(args.texts or c[4]) for c in cases}
    times = {(c[0], b): [] for c in cases for b in ("before", "after")}
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load {' '.join(load)} at start; "
          f"texts of up to {args.max_length} tokens, {args.threads} thread(s), {args.rounds} rounds", file=sys.stderr)
    for round_ in range(args.rounds):
        for label, model, pooling, _, _ in cases:
            # Alternate which binary goes first from round to round.
            order = [("before", args.before), ("after", args.after)]
            if round_ % 2:
                order.reverse()
            for name, binary in order:
                times[(label, name)].append(run(binary, model, pooling, args.threads, inputs[label], args.max_length))
        print(f"round {round_ + 1} done", file=sys.stderr)
    print("| model, pooling | weights | texts | before s (median; min–max) | after s (median; min–max) | after / before |")
    print("|---|---|--:|--:|--:|--:|")
    for label, _, _, weights, count in cases:
        b, a = times[(label, "before")], times[(label, "after")]
        before, after = statistics.median(b), statistics.median(a)
        print(f"| {label} | {weights} | {args.texts or count} | {before:.2f} ({min(b):.2f}–{max(b):.2f}) | "
              f"{after:.2f} ({min(a):.2f}–{max(a):.2f}) | {after / before:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
