"""Random-weight checkpoints of BERT-family encoders, for timing only (make_random_bert.py,
bench_xlmr_base.py): speed depends only on the shapes, the outputs are meaningless. Needs numpy only.
"""
import json
import struct

import numpy as np


def encoder_tensors(config, normal, prefix=""):
    """BertModel's (or XLMRobertaModel's) embeddings and layers by their checkpoint names, each
    name after `prefix`: Linear weights and biases drawn by `normal(*shape)`, LayerNorms 1 and 0."""
    h, f, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]

    def norm(name):
        return {name + ".weight": np.ones(h, np.float32), name + ".bias": np.zeros(h, np.float32)}

    out = {prefix + "embeddings.word_embeddings.weight": normal(v, h),
           prefix + "embeddings.position_embeddings.weight": normal(config["max_position_embeddings"], h),
           prefix + "embeddings.token_type_embeddings.weight": normal(config["type_vocab_size"], h),
           **norm(prefix + "embeddings.LayerNorm")}
    for i in range(config["num_hidden_layers"]):
        p = f"{prefix}encoder.layer.{i}."
        for part in ["query", "key", "value"]:
            out.update(linear(normal, p + "attention.self." + part, h, h))
        out.update(linear(normal, p + "attention.output.dense", h, h))
        out.update(norm(p + "attention.output.LayerNorm"))
        out.update(linear(normal, p + "intermediate.dense", h, f))
        out.update(linear(normal, p + "output.dense", f, h))
        out.update(norm(p + "output.LayerNorm"))
    return out


def linear(normal, name, n_in, n_out):
    """nn.Linear(n_in, n_out) at `name`: weight [n_out x n_in] and bias drawn by `normal`."""
    return {name + ".weight": normal(n_out, n_in), name + ".bias": normal(n_out)}


def save_safetensors(arrays, path):
    """float32 arrays as a safetensors file whose metadata says the weights are random."""
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
