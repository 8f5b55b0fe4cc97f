#!/usr/bin/env python3
"""What numpy's own OpenBLAS threads do to SwiftBERT in one Python process (issue 46).

numpy loads its own OpenBLAS, with a worker per core. After each multi-threaded product those
workers spin (sched_yield) for a while, about 2^28 cycles by default, before they sleep, on the
cores the engine's helper threads then need. This times `SentenceEncoder.encode` of one 128-token
text (all-MiniLM-L6-v2, fp32), alone and right after a 256 x 256 float32 numpy product, under:

- `default`: no OpenBLAS variable set;
- `OPENBLAS_THREAD_TIMEOUT=4`: numpy's workers sleep at once (2^4 cycles);
- `OPENBLAS_NUM_THREADS=1`: numpy runs its products on the calling thread;

each with the engine at threads=2 and threads=1. It also times the numpy product itself in each
setting, which is what a smaller timeout or one thread costs numpy.

Every setting runs in a process of its own (OpenBLAS reads its variables when it loads), in
rounds: each round runs every setting in turn, and the figures are medians over the rounds of
each round's median, so that the machine's drift hits every setting alike.

    SWIFTBERT_LIBRARY=.build/release/libswiftbert.so SWIFTBERT_HOME=. PYTHONPATH=python \\
        tools/.venv/bin/python tools/bench/numpy_interplay.py [--rounds 6] [--calls 40]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

SETTINGS = {
    "default": {},
    "OPENBLAS_THREAD_TIMEOUT=4": {"OPENBLAS_THREAD_TIMEOUT": "4"},
    "OPENBLAS_NUM_THREADS=1": {"OPENBLAS_NUM_THREADS": "1"},
}

WORKER = r"""
import json, statistics, sys, time
import numpy as np
import swiftbert
threads, calls = int(sys.argv[1]), int(sys.argv[2])
encoder = swiftbert.SentenceEncoder("all-MiniLM-L6-v2", threads=threads)
text = " ".join(["the quick brown fox jumps over the lazy dog"] * 14)
assert len(encoder.tokenize(text)["ids"]) == 128, "the text should be 128 tokens with [CLS] and [SEP]"
a = np.random.default_rng(0).random((256, 256), dtype=np.float32)
encoder.encode(text); a @ a  # warm up
def encode_times(after_product):
    out = []
    for _ in range(calls):
        if after_product:
            a @ a
        start = time.perf_counter(); encoder.encode(text); out.append(time.perf_counter() - start)
    return statistics.median(out) * 1e3
def product_time():
    out = []
    for _ in range(calls):
        start = time.perf_counter(); a @ a; out.append(time.perf_counter() - start)
    return statistics.median(out) * 1e3
print(json.dumps({"alone": encode_times(False), "after": encode_times(True), "product": product_time()}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=40, help="timed calls per figure in each round")
    args = parser.parse_args()
    results = {}
    for _ in range(args.rounds):
        for name, variables in SETTINGS.items():
            for threads in (2, 1):
                env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_") or k == "OPENBLAS_CORETYPE"}
                env.update(variables)
                out = subprocess.run([sys.executable, "-c", WORKER, str(threads), str(args.calls)], env=env,
                                     check=True, capture_output=True, text=True).stdout
                for key, value in json.loads(out).items():
                    results.setdefault((name, threads, key), []).append(value)
    load = open("/proc/loadavg").read().split()[0]
    print(f"{args.rounds} rounds, {args.calls} calls per figure; load average at the end {load}; medians over rounds\n")
    print("| numpy's OpenBLAS | engine threads | encode alone ms | encode after a numpy product ms | after / alone | numpy 256x256 product ms |")
    print("|---|--:|--:|--:|--:|--:|")
    for name in SETTINGS:
        for threads in (2, 1):
            alone, after, product = (statistics.median(results[(name, threads, key)]) for key in ("alone", "after", "product"))
            print(f"| {name} | {threads} | {alone:.2f} | {after:.2f} | {after / alone:.2f} | {product:.3f} |")


if __name__ == "__main__":
    main()
