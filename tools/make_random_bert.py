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

import numpy as np

from random_checkpoint import encoder_tensors, linear, save_safetensors

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
    def normal(*shape):
        return rng.normal(0, 0.02, shape).astype(np.float32)

    h, v = CONFIG["hidden_size"], CONFIG["vocab_size"]
    out = encoder_tensors(CONFIG, normal, prefix="bert.")
    out.update(linear(normal, "cls.predictions.transform.dense", h, h))
    out["cls.predictions.transform.LayerNorm.weight"] = np.ones(h, np.float32)
    out["cls.predictions.transform.LayerNorm.bias"] = np.zeros(h, np.float32)
    out["cls.predictions.bias"] = normal(v)
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    save_safetensors(tensors(np.random.default_rng(0)), OUT / "model.safetensors")
    (OUT / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    for name in ["vocab.txt", "tokenizer.json"]:
        shutil.copy(VOCAB_FROM / name, OUT / name)
    print(f"wrote {OUT} (random weights, for timing only)")


if __name__ == "__main__":
    main()
