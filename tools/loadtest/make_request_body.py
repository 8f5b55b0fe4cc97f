#!/usr/bin/env python3
"""Writes request bodies for wrk (tools/loadtest/wrk_body.lua), one JSON body per line: COUNT bodies of N
texts each, taken in turn from the 300 sentences of Tests/SwiftBERTTests/Fixtures/sentences.txt.
   make_request_body.py N [--count 300] [--model NAME] [--route openai|tei] > bodies.jsonl"""
import argparse, json, pathlib
p = argparse.ArgumentParser()
p.add_argument("n", type=int)
p.add_argument("--count", type=int, default=300)
p.add_argument("--model", default="all-MiniLM-L6-v2")
p.add_argument("--route", default="openai", choices=["openai", "tei"])
a = p.parse_args()
lines = [l for l in (pathlib.Path(__file__).resolve().parents[2] / "Tests/SwiftBERTTests/Fixtures/sentences.txt").read_text().splitlines() if l]
for b in range(a.count):
    texts = [lines[(b * a.n + i) % len(lines)] for i in range(a.n)]
    if a.route == "openai":
        print(json.dumps({"input": texts if a.n > 1 else texts[0], "model": a.model}))
    else:
        print(json.dumps({"inputs": texts}))
