#!/usr/bin/env python3
"""`bert fill` against transformers' fill-mask pipeline on random hostile texts (those of
tokenizer_differential.py) with the model's mask token put in at one to three random places:
between words, inside a word, at either end, beside punctuation. For every mask the top-10
candidates must be the same token ids with probabilities within 1e-6 + 1e-4 relative; where two
candidates' probabilities are that close, their order may differ (ties), and so may a last
candidate tied with the 11th.

    tools/.venv/bin/python tools/fuzz/fill_differential.py [--count N] [--seed S] [FOLDER ...]

Default: the masked-LM fixtures of every family and tokenizer kind (DistilBERT, RoBERTa BPE,
XLM-R Unigram, DeBERTa-v3, ModernBERT, MobileBERT; random weights) and SPLADE-tiny's real
weights. Texts longer than the model's positions are left out (the pipeline does not cut them).
Outside CI: it needs torch and transformers (tools/venv.sh reference). Results in docs/models.md.
"""
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer_differential import ROOT, Tally, fuzz_arguments, random_text  # noqa: E402

FIXTURES = ["Tests/SwiftBERTTests/Fixtures/heads/distilbert-mlm", "Tests/SwiftBERTTests/Fixtures/encoders/roberta-mlm",
            "Tests/SwiftBERTTests/Fixtures/encoders/xlmr-mlm", "Tests/SwiftBERTTests/Fixtures/deberta/mlm",
            "Tests/SwiftBERTTests/Fixtures/rotary/modernbert", "Tests/SwiftBERTTests/Fixtures/mobilebert/mobilebert-layernorm",
            "weights/.cache/hf/splade-tiny"]
TOP_K = 10


def close(a, b):
    return abs(a - b) <= 1e-6 + 1e-4 * max(abs(a), abs(b))


def with_masks(rng, text, mask):
    """text with 1–3 masks at random character places (an argument cannot hold NUL)."""
    text = text.replace("\x00", "")
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        place = rng.randint(0, len(text))
        pad = rng.choice(["", " ", " "])
        text = text[:place] + pad + mask + pad + text[place:]
    return text


def same_candidates(expected, got):
    """Whether two top-10 lists agree: probabilities pairwise close, and the ids the same up to ties."""
    if len(got) != TOP_K:
        return False
    for want, have in zip(expected[:TOP_K], got):
        if not close(want["score"], have["probability"]):
            return False
    hf = {c["token"]: c["score"] for c in expected}  # top-(10 + 5), for a tie at the boundary
    for have in got:
        if have["id"] in hf:
            if not close(hf[have["id"]], have["probability"]):
                return False
        elif not close(expected[TOP_K - 1]["score"], have["probability"]):
            return False
    return True


def main():
    args = fuzz_arguments(__doc__, "*", count=100, seed=5).parse_args()
    import torch
    import transformers
    from tokenizers import Tokenizer

    folders = args.models or [os.path.join(ROOT, name) for name in FIXTURES]
    tally = Tally()
    for folder in folders:
        rng = random.Random(args.seed)
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        # transformers 5 rebuilds some tokenizers from their vocabulary (XLMRobertaTokenizer drops
        # tokenizer.json's byte_fallback); SwiftBERT reads tokenizer.json as `tokenizers` does.
        tokenizer._tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        if tokenizer.mask_token is None:  # a tokenizer_config.json without it (the ModernBERT fixture)
            tokenizer.mask_token = next(t for t in ("[MASK]", "<mask>") if t in tokenizer.get_vocab())
        model = transformers.AutoModelForMaskedLM.from_pretrained(folder, dtype=torch.float32)
        limit = model.config.max_position_embeddings - 2
        pipe = transformers.pipeline("fill-mask", model=model, tokenizer=tokenizer, device="cpu", top_k=TOP_K + 5)
        wrong, checked, masks = [], 0, 0
        for _ in range(args.count):
            text = with_masks(rng, random_text(rng), tokenizer.mask_token)
            ids = tokenizer(text)["input_ids"]
            if len(ids) > limit or ids.count(tokenizer.mask_token_id) == 0:
                continue
            expected = pipe(text)
            if ids.count(tokenizer.mask_token_id) == 1:
                expected = [expected]
            run = subprocess.run([args.bert, "fill", "--json", "--top-k", str(TOP_K), "--model", folder, "--", text],
                                 capture_output=True, text=True, cwd=ROOT)
            if run.returncode != 0:
                wrong.append((text, "exit %d: %s" % (run.returncode, run.stderr.strip()[:200]), None))
                continue
            got = json.loads(run.stdout)["masks"]
            checked += 1
            masks += len(expected)
            if len(got) != len(expected) or not all(same_candidates(e, g["candidates"]) for e, g in zip(expected, got)):
                wrong.append((text, [[(c["token"], round(c["score"], 6)) for c in e[:3]] for e in expected],
                              [[(c["id"], round(c["probability"], 6)) for c in g["candidates"][:3]] for g in got]))
        name = os.path.relpath(folder, ROOT)
        tally.check(not wrong, f"{name}: {checked} texts, {masks} masks, {len(wrong)} differ")
        for text, expected, got in wrong[:3]:
            print(f"   text {json.dumps(text)[:120]}\n     transformers {str(expected)[:200]}\n     SwiftBERT    {str(got)[:200]}")
    sys.exit(tally.finish())


if __name__ == "__main__":
    main()
