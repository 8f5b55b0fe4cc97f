#!/usr/bin/env python3
"""The whole embedding pipeline on hostile text, against sentence-transformers: the random texts of
tokenizer_differential.py (scripts, combining marks, emoji sequences, odd whitespace, controls,
special-token look-alikes, long runs), embedded by `bert embed` (fed as JSON Lines) and by
sentence-transformers' own `encode` on the same checkpoint; cosine of each pair.

    tools/.venv/bin/python tools/fuzz/embedding_differential.py [--count N] [--seed S] [--min-cosine C] MODEL ...

MODEL: a model name whose Hugging Face checkpoint is in weights/.cache/hf/MODEL (where `make
setup` and `bert pull` leave it) and whose converted folder `bert` finds by that name. Prints the
minimum and mean cosine per model and the worst text, then `N passed, M failed`; a model fails
below --min-cosine (default 0.9999, the project's FP32 bound). Outside CI: it needs torch and
sentence-transformers (tools/venv.sh). Results in docs/exactness.md.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_differential import ROOT, fuzz_arguments, random_text  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    parser = fuzz_arguments(__doc__, "+", count=500, seed=7)
    parser.add_argument("--min-cosine", type=float, default=0.9999)
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    passed = failed = 0
    for name in args.models:
        rng = random.Random(args.seed)
        texts = [random_text(rng) for _ in range(args.count)]
        reference = SentenceTransformer(os.path.join(ROOT, "weights/.cache/hf", name), device="cpu")
        expected = reference.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
        with tempfile.TemporaryDirectory() as scratch:
            lines, vectors = os.path.join(scratch, "texts.jsonl"), os.path.join(scratch, "vectors.npy")
            with open(lines, "w", encoding="utf-8") as f:
                for text in texts:
                    f.write(json.dumps(text, ensure_ascii=False) + "\n")
            subprocess.run([args.bert, "embed", "--quiet", "--model", name, "--input", lines, "--input-format", "jsonl",
                            "--format", "npy", "--output", vectors], check=True, cwd=ROOT)
            got = np.load(vectors)
        got = got / np.linalg.norm(got, axis=1, keepdims=True)
        cosines = (expected * got).sum(axis=1)
        worst = int(cosines.argmin())
        ok = len(got) == len(texts) and cosines.min() >= args.min_cosine
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(texts)} texts, min cosine {cosines.min():.7f}, mean {cosines.mean():.7f};"
              f" worst {json.dumps(texts[worst])[:120]}")
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
