#!/usr/bin/env python3
"""Hugging Face `tokenizers` speed on the tokenizer fixture corpus, single-threaded.

    $(tools/venv.sh reference) tools/bench/bench_tokenizer.py [--model all-MiniLM-L6-v2] [--seconds 5]

Counts tokens as len(ids) with [CLS]/[SEP], no truncation, no padding: the same corpus and count as
`swift run -c release SwiftBERTBenchmarks tokenizer` (Benchmarks/TokenizerBenchmark.swift).
--tokenizer-json PATH --corpus PATH: another tokenizer.json on another JSON-lines corpus (as the Swift side).
"""
import os

# Before `tokenizers` is imported: one thread for Rayon, no parallel batch encoding.
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from tokenizers import Tokenizer, __version__  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "Tests/SwiftBERTTests/Fixtures/tokenizer/corpus.jsonl"


def corpus(path=CORPUS):
    with open(path, encoding="utf-8") as f:
        return [r["text"] for r in map(json.loads, f) if "text" in r]


def measure(name, run, seconds):
    """Best pass over at least `seconds` of repeated passes: tokens per second."""
    best, tokens, deadline = float("inf"), 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline or best == float("inf"):
        start = time.perf_counter()
        tokens = run()
        best = min(best, time.perf_counter() - start)
    print(f"{name:<28} {tokens / best:>12,.0f} tokens/s   ({tokens} tokens, best pass {best * 1e3:.1f} ms)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--tokenizer-json")
    parser.add_argument("--corpus", default=str(CORPUS))
    args = parser.parse_args()
    tok = Tokenizer.from_file(args.tokenizer_json or str(ROOT / "weights/.cache/hf" / args.model / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    texts = corpus(args.corpus)
    print(f"tokenizers {__version__}, {args.tokenizer_json or args.model}, {len(texts)} lines, "
          f"{sum(len(t.encode()) for t in texts) / 1e6:.2f} MB UTF-8, RAYON_NUM_THREADS=1")
    measure("encode_batch", lambda: sum(len(e.ids) for e in tok.encode_batch(texts)), args.seconds)
    measure("encode (per line)", lambda: sum(len(tok.encode(t).ids) for t in texts), args.seconds)


if __name__ == "__main__":
    main()
