#!/usr/bin/env python3
"""Times two builds of `bert` side by side: `bert bench --json` of build A, then of build B,
then A, B, ... for --rounds rounds, so that drifts in the machine's speed hit both alike.
Prints, per cell (model, precision, batch x seq, threads), the median over rounds of each
build's median ms and CPU ms, and the ratio B / A (below 1: B is faster).

    # the build before a change, beside the current one:
    git worktree add /tmp/before REV && (cd /tmp/before && make bert)
    tools/bench/compare_builds.py /tmp/before/.build/release/bert .build/release/bert --rounds 3 -- --seconds 2

Run it from the repository root (both binaries find weights/ there). Options after `--` go to
`bert bench` (default: its default cells). Standard library only.
"""
import argparse
import json
import statistics
import subprocess
import sys


def bench(binary, options):
    out = subprocess.run([binary, "bench", "--json", *options], check=True, capture_output=True, text=True).stdout
    return {(r["model"], r["precision"], f'{r["batch"]}x{r["seq"]}', r["threads"]): r for r in json.loads(out)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="bert binary A (before)")
    parser.add_argument("b", help="bert binary B (after)")
    parser.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:]
    options = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.options = options
    runs = {"a": [], "b": []}
    for r in range(args.rounds):
        for name in ("a", "b"):
            print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr)
            runs[name].append(bench(getattr(args, name), args.options))
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"A = {args.a}\nB = {args.b}\n{args.rounds} rounds, A B A B ...; load average at the end {load}\n")
    print("| model | precision | cell | threads | A median ms | B median ms | B/A | A CPU ms | B CPU ms | B/A CPU |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for key in runs["a"][0]:
        if not all(key in run for run in runs["a"] + runs["b"]):
            continue
        med = {n: statistics.median(run[key]["median_ms"] for run in runs[n]) for n in runs}
        cpu = {n: statistics.median(run[key]["cpu_median_ms"] for run in runs[n]) for n in runs}
        model, precision, cell, threads = key
        print(f"| {model} | {precision} | {cell} | {threads} | {med['a']:.2f} | {med['b']:.2f} | {med['b'] / med['a']:.3f} "
              f"| {cpu['a']:.2f} | {cpu['b']:.2f} | {cpu['b'] / cpu['a']:.3f} |")


if __name__ == "__main__":
    main()
