#!/usr/bin/env python3
"""`bert ner` against transformers' token-classification pipeline on random hostile texts (those of
tokenizer_differential.py), for every aggregation strategy: labels, words, spans identical and
scores within 1e-4. The models are token-classifier checkpoint folders, run by transformers in
float32 (the test fixtures hold float16 weights, which transformers would otherwise keep).

    tools/.venv/bin/python tools/fuzz/ner_differential.py [--count N] [--seed S] [FOLDER ...]

Default: the token-classifier fixtures of every tokenizer kind (WordPiece BERT and DistilBERT,
DeBERTa-v3's Unigram, ModernBERT's byte-level BPE). Prints one line per model and strategy, then
`N passed, M failed`. Outside CI: it needs torch and transformers (tools/venv.sh reference).
Results in docs/models.md.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_differential import ROOT, Tally, fuzz_arguments, random_text  # noqa: E402

FIXTURES = ["heads/bert-ner", "heads/distilbert-ner", "deberta/ner", "rotary/modernbert-ner"]
STRATEGIES = ["none", "simple", "first", "average", "max"]


def main():
    args = fuzz_arguments(__doc__, "*", count=150, seed=3).parse_args()
    import torch
    import transformers

    folders = args.models or [os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures", name) for name in FIXTURES]
    tally = Tally()
    for folder in folders:
        rng = random.Random(args.seed)
        texts = [text for text in (random_text(rng) for _ in range(args.count)) if text.strip()]
        model = transformers.AutoModelForTokenClassification.from_pretrained(folder, dtype=torch.float32)
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        with tempfile.TemporaryDirectory() as scratch:
            lines = os.path.join(scratch, "texts.jsonl")
            with open(lines, "w", encoding="utf-8") as f:
                for text in texts:
                    f.write(json.dumps(text, ensure_ascii=False) + "\n")
            for strategy in STRATEGIES:
                pipe = transformers.pipeline("token-classification", model=model, tokenizer=tokenizer, device="cpu",
                                             aggregation_strategy=strategy)
                out = subprocess.run([args.bert, "ner", "--quiet", "--json", "--model", folder, "--aggregation", strategy,
                                      "--input", lines, "--input-format", "jsonl"],
                                     check=True, capture_output=True, text=True, cwd=ROOT).stdout
                rows = [json.loads(line) for line in out.split("\n") if line.strip()]
                key = "entity" if strategy == "none" else "entity_group"
                wrong = []
                for text, row in zip(texts, rows):
                    expected, got = pipe(text), row["entities"]
                    same = [(e[key], e["word"], e["start"], e["end"]) for e in expected] == \
                           [(e[key], e["word"], e["start"], e["end"]) for e in got]
                    if not same or any(abs(float(a["score"]) - b["score"]) > 1e-4 for a, b in zip(expected, got)):
                        wrong.append((text, expected, got))
                ok = not wrong and len(rows) == len(texts)
                tally.check(ok, f"{os.path.relpath(folder, ROOT)} {strategy}: {len(texts)} texts, {len(wrong)} differ")
                for text, expected, got in wrong[:2]:
                    print(f"   text {json.dumps(text)[:100]}\n     transformers {[(e[key], e['word']) for e in expected][:4]}"
                          f"\n     SwiftBERT    {[(e[key], e['word']) for e in got][:4]}")
    sys.exit(tally.finish())


if __name__ == "__main__":
    main()
