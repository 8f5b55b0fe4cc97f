#!/usr/bin/env python3
"""Makes a bert-base-shaped BertForMaskedLM with RANDOM weights, for timing only.

Its outputs are meaningless; it exists because no real bert-base-sized checkpoint can be
fetched here, and speed depends only on the shapes. Everything that reports a figure measured
on it names it 'bert-base-random'. Writes a Hugging Face folder to weights/.cache/hf/bert-base-random
(vocabulary borrowed from all-MiniLM-L6-v2, the same uncased 30,522 entries) for `bert convert`.
Needs numpy only.
"""
import json
import pathlib
import shutil
import struct

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "weights/.cache/hf/bert-base-random"
VOCAB_FROM = ROOT / "weights/.cache/hf/all-MiniLM-L6-v2"
CONFIG = {
    "architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_act": "gelu",
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "max_position_embeddings": 512, "type_vocab_size": 2, "vocab_size": 30522, "layer_norm_eps": 1e-12,
    "pad_token_id": 0, "position_embedding_type": "absolute",
}


def tensors(rng):
    h, f, v = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["vocab_size"]

    def normal(*shape):
        return rng.normal(0, 0.02, shape).astype(np.float32)

    def norm(prefix):
        return {prefix + ".weight": np.ones(h, np.float32), prefix + ".bias": np.zeros(h, np.float32)}

    def linear(prefix, n_in, n_out):
        return {prefix + ".weight": normal(n_out, n_in), prefix + ".bias": normal(n_out)}

    out = {"bert.embeddings.word_embeddings.weight": normal(v, h),
           "bert.embeddings.position_embeddings.weight": normal(CONFIG["max_position_embeddings"], h),
           "bert.embeddings.token_type_embeddings.weight": normal(2, h), **norm("bert.embeddings.LayerNorm")}
    for i in range(CONFIG["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}."
        for part in ["query", "key", "value"]:
            out.update(linear(p + "attention.self." + part, h, h))
        out.update(linear(p + "attention.output.dense", h, h))
        out.update(norm(p + "attention.output.LayerNorm"))
        out.update(linear(p + "intermediate.dense", h, f))
        out.update(linear(p + "output.dense", f, h))
        out.update(norm(p + "output.LayerNorm"))
    out.update(linear("cls.predictions.transform.dense", h, h))
    out.update(norm("cls.predictions.transform.LayerNorm"))
    out["cls.predictions.bias"] = normal(v)
    return out


def save_safetensors(arrays, path):
    header, offset = {"__metadata__": {"format": "pt", "note": "random weights, for timing only"}}, 0
    for name, a in arrays.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for a in arrays.values():
            f.write(a.tobytes())


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    save_safetensors(tensors(np.random.default_rng(0)), OUT / "model.safetensors")
    (OUT / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    for name in ["vocab.txt", "tokenizer.json"]:
        shutil.copy(VOCAB_FROM / name, OUT / name)
    print(f"wrote {OUT} (random weights, for timing only)")


if __name__ == "__main__":
    main()
