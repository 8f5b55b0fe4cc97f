#!/usr/bin/env python3
"""Writes a TEI /embed body of N texts of 300 random words each, truncated by the server to the
model's limit (256 tokens for all-MiniLM-L6-v2): the long requests of one_behind_many.sh and
late_requests.sh.
   long_texts_body.py N OUT.json [--seed 7]"""
import argparse, json, random
p = argparse.ArgumentParser()
p.add_argument("n", type=int)
p.add_argument("out")
p.add_argument("--seed", type=int, default=7)
a = p.parse_args()
random.seed(a.seed)
words = ("the quick brown fox jumps over a lazy dog while searchers build retrieval systems with dense "
         "vectors and sparse lexical weights for every query").split()
texts = [" ".join(random.choice(words) for _ in range(300)) for _ in range(a.n)]
with open(a.out, "w") as f:
    json.dump({"inputs": texts, "truncate": True}, f)
