#!/usr/bin/env python3
"""SwiftBERT's Python API, texts/s (issue 46): batch 1 and 32 of 128-token texts, from 1 and 2
Python threads (each encoder with threads=1, so Python threads are the only parallelism), and
one thread with the engine's own pool (threads=None). The comparison with sentence-transformers
and fastembed is not here yet.

    python tools/bench/python_bench.py [--model all-MiniLM-L6-v2] [--seconds 5]

Runs against the installed wheel, or a build tree with SWIFTBERT_LIBRARY=.build/release/libswiftbert.so
and PYTHONPATH=python.
"""
import argparse
import threading
import time

import swiftbert


def text_of(encoder, tokens):
    """A text of exactly `tokens` tokens, [CLS] and [SEP] included."""
    words = ("the quick brown fox jumps over the lazy dog while engines embed text " * 40).split()
    for n in range(len(words), 0, -1):
        text = " ".join(words[:n])
        if len(encoder.tokenize(text, max_length=512)["ids"]) <= tokens:
            assert len(encoder.tokenize(text, max_length=512)["ids"]) == tokens, "no text of exactly that length"
            return text
    raise RuntimeError("no text fits")


def rate(encoders, batch, seconds):
    """Texts per second with one Python thread per encoder, each calling encode(batch) in a loop."""
    counts = [0] * len(encoders)
    stop = time.perf_counter() + seconds

    def work(index):
        while time.perf_counter() < stop:
            encoders[index].encode(batch, batch_size=len(batch))
            counts[index] += len(batch)

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(encoders))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    single = [swiftbert.SentenceEncoder(args.model, threads=1) for _ in range(2)]
    pooled = swiftbert.SentenceEncoder(args.model)
    text = text_of(single[0], 128)
    for encoder in single + [pooled]:
        encoder.encode([text] * 32)  # warm up
    print(f"{args.model}, fp32, 128-token texts, {args.seconds:.0f} s each")
    print("batch  python-threads  engine-threads  texts/s")
    for size in (1, 32):
        batch = [text] * size
        one = rate(single[:1], batch, args.seconds)
        two = rate(single, batch, args.seconds)
        pool = rate([pooled], batch, args.seconds)
        print(f"{size:5d}  {1:14d}  {1:14d}  {one:7.1f}")
        print(f"{size:5d}  {2:14d}  {1:14d}  {two:7.1f}   ({two / one:.2f}x one thread)")
        print(f"{size:5d}  {1:14d}  {'per core':>14s}  {pool:7.1f}")


if __name__ == "__main__":
    main()
