#!/usr/bin/env python3
"""The whole embedding pipeline on hostile text, against sentence-transformers: the random texts of
tokenizer_differential.py (scripts, combining marks, emoji sequences, odd whitespace, controls,
special-token look-alikes, long runs), embedded by `bert embed` (fed as JSON Lines) and by
sentence-transformers' own `encode` on the same checkpoint; cosine of each pair.

    tools/.venv/bin/python tools/fuzz/embedding_differential.py [--count N] [--seed S] [--min-cosine C] MODEL ...
    tools/.venv/bin/python tools/fuzz/embedding_differential.py --sparse [--max-difference D] splade-tiny

    tools/.venv/bin/python tools/fuzz/embedding_differential.py --rerank [--max-difference D] CROSS_ENCODER_FOLDER ...

--rerank compares `bert rerank` with sentence-transformers' CrossEncoder.predict (float32) on random
queries and documents, some long enough to be truncated (tabs, new lines and NULs left out: the
documents are lines and the query an argument).
--sparse compares `bert embed --sparse` (SPLADE: max over the tokens of log(1 + relu(logit))) with
the same made from transformers' AutoModelForMaskedLM logits; a model fails when a weight differs
by more than --max-difference (default 1e-4).

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
from tokenizer_differential import ROOT, Tally, fuzz_arguments, random_text  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def write_lines(texts, path):
    with open(path, "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")


def check_sparse(args):
    """SPLADE weights of `bert embed --sparse` against transformers; the exit status."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tally = Tally()
    for name in args.models:
        rng = random.Random(args.seed)
        texts = [random_text(rng) for _ in range(args.count)]
        source = os.path.join(ROOT, "weights/.cache/hf", name)
        tokenizer, model = AutoTokenizer.from_pretrained(source), AutoModelForMaskedLM.from_pretrained(source).eval()
        with tempfile.TemporaryDirectory() as scratch:
            lines = os.path.join(scratch, "texts.jsonl")
            write_lines(texts, lines)
            out = subprocess.run([args.bert, "embed", "--quiet", "--model", name, "--sparse", "--input", lines,
                                  "--input-format", "jsonl"], check=True, capture_output=True, text=True, cwd=ROOT).stdout
        rows = [json.loads(line) for line in out.split("\n") if line.strip()]
        largest = 0.0
        for text, row in zip(texts, rows):
            encoded = tokenizer(text, return_tensors="pt", truncation=True, max_length=512)
            with torch.no_grad():
                weights = torch.log1p(torch.relu(model(**encoded).logits[0])).max(dim=0).values.numpy()
            expected = {int(i): float(weights[i]) for i in np.nonzero(weights)[0]}
            got = {entry["index"]: entry["value"] for entry in row["sparse"]}
            largest = max([largest] + [abs(expected.get(k, 0) - got.get(k, 0)) for k in set(expected) | set(got)])
        ok = len(rows) == len(texts) and largest <= args.max_difference
        tally.check(ok, f"{name} sparse: {len(texts)} texts, largest weight difference {largest:.2e}")
    return tally.finish()


def check_rerank(args):
    """`bert rerank` against CrossEncoder.predict, 8 documents a query; the exit status."""
    import torch
    from sentence_transformers import CrossEncoder

    tally = Tally()
    for folder in args.models:
        reference = CrossEncoder(folder, device="cpu", model_kwargs={"dtype": torch.float32})
        # transformers 5 rebuilds some tokenizers from their vocabulary (XLMRobertaTokenizer drops
        # tokenizer.json's byte_fallback); SwiftBERT reads tokenizer.json as `tokenizers` does.
        from tokenizers import Tokenizer
        reference.tokenizer._tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        rng = random.Random(args.seed)
        largest, pairs = 0.0, 0

        def line(text):
            return text.replace("\n", " ").replace("\r", " ").replace("\x00", "")

        for _ in range(max(1, args.count // 8)):
            query = line(random_text(rng))
            documents = [line(" ".join(random_text(rng) for _ in range(rng.randint(1, 12)))) for _ in range(8)]
            with tempfile.TemporaryDirectory() as scratch:
                path = os.path.join(scratch, "documents.txt")
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(documents) + "\n")
                out = subprocess.run([args.bert, "rerank", "--json", "--model", folder, "--documents", path, query],
                                     check=True, capture_output=True, text=True, cwd=ROOT).stdout
            got = {entry["index"]: entry["score"] for entry in json.loads(out)["results"]}
            expected = reference.predict([(query, document) for document in documents])
            largest = max([largest] + [abs(float(expected[i]) - got[i]) for i in range(len(documents))])
            pairs += len(documents)
        tally.check(largest <= args.max_difference,
                    f"{os.path.relpath(folder, ROOT)} rerank: {pairs} pairs, largest score difference {largest:.2e}")
    return tally.finish()


def main():
    parser = fuzz_arguments(__doc__, "+", count=500, seed=7)
    parser.add_argument("--min-cosine", type=float, default=0.9999)
    parser.add_argument("--sparse", action="store_true", help="SPLADE weights against transformers' masked-LM logits")
    parser.add_argument("--rerank", action="store_true", help="cross-encoder scores against sentence-transformers' CrossEncoder")
    parser.add_argument("--max-difference", type=float, default=1e-4)
    args = parser.parse_args()
    if args.sparse:
        sys.exit(check_sparse(args))
    if args.rerank:
        sys.exit(check_rerank(args))
    from sentence_transformers import SentenceTransformer

    tally = Tally()
    for name in args.models:
        rng = random.Random(args.seed)
        texts = [random_text(rng) for _ in range(args.count)]
        reference = SentenceTransformer(os.path.join(ROOT, "weights/.cache/hf", name), device="cpu")
        expected = reference.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
        with tempfile.TemporaryDirectory() as scratch:
            lines, vectors = os.path.join(scratch, "texts.jsonl"), os.path.join(scratch, "vectors.npy")
            write_lines(texts, lines)
            subprocess.run([args.bert, "embed", "--quiet", "--model", name, "--input", lines, "--input-format", "jsonl",
                            "--format", "npy", "--output", vectors], check=True, cwd=ROOT)
            got = np.load(vectors)
        got = got / np.linalg.norm(got, axis=1, keepdims=True)
        cosines = (expected * got).sum(axis=1)
        worst = int(cosines.argmin())
        ok = len(got) == len(texts) and cosines.min() >= args.min_cosine
        tally.check(ok, f"{name}: {len(texts)} texts, min cosine {cosines.min():.7f}, mean {cosines.mean():.7f};"
                        f" worst {json.dumps(texts[worst])[:120]}")
    sys.exit(tally.finish())


if __name__ == "__main__":
    main()
