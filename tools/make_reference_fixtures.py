#!/usr/bin/env python3
"""Writes the reference fixtures the engine's tests compare against: Hugging Face transformers
(PyTorch, CPU) and sentence-transformers run on the original checkpoints, on real sentences
taken from the license texts Debian installs.

Needs a venv with the reference libraries (the test suite itself never needs them):
    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install torch==2.15.0 transformers==5.23.0 sentence-transformers==6.2.0 safetensors
    tools/fetch_models.sh
    /tmp/refenv/bin/python tools/make_reference_fixtures.py
Output: Tests/SwiftBERTTests/Fixtures/reference/<model>.{json,safetensors}
Then runs tools/make_head_fixtures.py: random-weight checkpoints for the task heads (classify,
rerank, NER, pooling variants, DistilBERT) in Tests/SwiftBERTTests/Fixtures/heads/.
"""
import json
import pathlib
import re

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
HF = ROOT / "weights/.cache/hf"
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/reference"
LICENSES = ["Apache-2.0", "GPL-3", "LGPL-2.1", "MPL-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.3"]
# The pair whose cosine sentence-transformers publishes for all-MiniLM-L6-v2 (0.7553).
PAIR = ["A man is eating food.", "A man is eating a piece of bread."]
LAYER_CHECK_SENTENCES = 4  # sentences whose every intermediate tensor is stored


def real_sentences(count):
    """Sentences of varied length from Debian's license texts, chosen deterministically."""
    found = set()
    for name in LICENSES:
        path = pathlib.Path("/usr/share/common-licenses") / name
        if not path.exists():
            continue
        text = re.sub(r"\s+", " ", path.read_text(errors="replace"))
        for s in re.split(r"(?<=[.;:])\s+(?=[A-Z])", text):
            s = s.strip()
            if 20 <= len(s) <= 600 and re.search(r"[a-z]{3}", s):
                found.add(s)
    ordered = sorted(found, key=lambda s: (len(s), s))
    # Evenly spaced by length: short, medium and long inputs (the longest reach ~130 tokens).
    step = len(ordered) / count
    return [ordered[int(i * step + step / 2)] for i in range(count)]


def run_encoder(model, tokenizer, sentences, tensors, prefix=""):
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    captured = {}
    hook = model.encoder.layer[0].attention.register_forward_hook(
        lambda mod, args, out: captured.__setitem__("attention", out[0] if isinstance(out, tuple) else out))
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
    hook.remove()
    lengths = batch["attention_mask"].sum(1).tolist()
    for i, n in enumerate(lengths):
        tensors[f"last_hidden_state.{i}"] = out.last_hidden_state[i, :n].numpy().copy()
        if i < LAYER_CHECK_SENTENCES:
            for k, h in enumerate(out.hidden_states):
                tensors[f"hidden_states.{k}.{i}"] = h[i, :n].numpy().copy()
            tensors[f"layer0_attention.{i}"] = captured["attention"][i, :n].numpy().copy()
    return [batch["input_ids"][i, :n].tolist() for i, n in enumerate(lengths)]


def minilm(sentences):
    from sentence_transformers import SentenceTransformer
    folder = HF / "all-MiniLM-L6-v2"
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    tensors = {}
    ids = run_encoder(model, tokenizer, sentences, tensors)
    st = SentenceTransformer(str(folder), device="cpu")
    embeddings = st.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
    for i, e in enumerate(embeddings):
        tensors[f"sentence_embedding.{i}"] = e.astype(np.float32)
    pair = st.encode(PAIR, normalize_embeddings=True, convert_to_numpy=True)
    pair_ids = [tokenizer(s)["input_ids"] for s in PAIR]
    meta = {"input_ids": ids, "pair": {"sentences": PAIR, "input_ids": pair_ids, "cosine": float(pair[0] @ pair[1])}}
    return tensors, meta


def masked_sentences(sentences, tokenizer):
    """Each sentence with one real word (two in every fourth) replaced by [MASK]."""
    out = []
    for n, s in enumerate(sentences):
        words = [m for m in re.finditer(r"\b[A-Za-z]{3,}\b", s) if len(tokenizer.tokenize(m.group())) == 1]
        if not words:
            continue
        picks = [words[len(words) // 2]] + ([words[len(words) // 4]] if n % 4 == 0 and len(words) > 4 else [])
        for m in sorted(picks, key=lambda m: -m.start()):
            s = s[:m.start()] + "[MASK]" + s[m.end():]
        out.append(s)
    return out


def splade(sentences):
    folder = HF / "splade-tiny"
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    tensors = {}
    ids = run_encoder(model.bert, tokenizer, sentences, tensors)
    masked = masked_sentences(sentences, tokenizer)
    batch = tokenizer(masked, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    fills = []
    for i, text in enumerate(masked):
        n = int(batch["attention_mask"][i].sum())
        positions = (batch["input_ids"][i, :n] == tokenizer.mask_token_id).nonzero().flatten().tolist()
        probs = logits[i, positions].softmax(-1)
        top = probs.topk(10)
        fills.append({"text": text, "input_ids": batch["input_ids"][i, :n].tolist(), "mask_positions": positions,
                      "top_ids": top.indices.tolist(), "top_probabilities": top.values.tolist()})
    return tensors, {"input_ids": ids, "fill_mask": fills}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    sentences = real_sentences(24)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    for name, build in [("all-MiniLM-L6-v2", minilm), ("splade-tiny", splade)]:
        tensors, meta = build(sentences)
        save_file(tensors, str(OUT / f"{name}.safetensors"))
        meta = {"model": name, "sentences": sentences, "versions": versions, **meta}
        (OUT / f"{name}.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        print(name, len(tensors), "tensors")
    import make_head_fixtures  # the task heads, on random-weight checkpoints
    make_head_fixtures.main()


if __name__ == "__main__":
    main()
