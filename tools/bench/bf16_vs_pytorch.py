#!/usr/bin/env python3
"""BF16 accuracy against PyTorch on real text (docs/bf16.md, "Accuracy").

For all-MiniLM-L6-v2 over Tests/SwiftBERTTests/Fixtures/sentences.txt (300 real sentences):
the cosine between each sentence's embedding and sentence-transformers' FP32 one, for
  - SwiftBERT `--precision fp32` and `--precision bf16` (`bert embed`, npy output), and
  - PyTorch's own BF16: CPU autocast to bfloat16 (Linear layers and matmuls in BF16, LayerNorm and
    softmax in FP32: the closest to SwiftBERT's mode), and the whole model cast to bfloat16.

    $(tools/venv.sh reference) tools/bench/bf16_vs_pytorch.py [path/to/bert]
"""
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

root = pathlib.Path(__file__).resolve().parents[2]
bert = sys.argv[1] if len(sys.argv) > 1 else str(root / ".build/release/bert")
sentences = (root / "Tests/SwiftBERTTests/Fixtures/sentences.txt").read_text().splitlines()
model = SentenceTransformer(str(root / "weights/.cache/hf/all-MiniLM-L6-v2"), device="cpu")
torch.set_num_threads(1)


def encode(**kwargs):
    with torch.inference_mode():
        return model.encode(sentences, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, **kwargs)


reference = encode()
with torch.autocast("cpu", dtype=torch.bfloat16):
    autocast = encode().astype(np.float32)
model_bf16 = model.to(torch.bfloat16)
whole = encode().astype(np.float32)
model.to(torch.float32)


def swiftbert(precision):
    with tempfile.TemporaryDirectory() as directory:
        out = pathlib.Path(directory) / "e.npy"
        subprocess.run([bert, "embed", "--model", str(root / "weights/all-MiniLM-L6-v2"), "--precision", precision,
                        "--threads", "1", "--input", str(root / "Tests/SwiftBERTTests/Fixtures/sentences.txt"),
                        "--format", "npy", "--output", str(out), "--quiet"], check=True)
        return np.load(out)


def cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


rows = [("SwiftBERT fp32", swiftbert("fp32")), ("SwiftBERT bf16", swiftbert("bf16")),
        ("PyTorch autocast bf16", autocast), ("PyTorch model.to(bfloat16)", whole)]
print(f"all-MiniLM-L6-v2, {len(sentences)} sentences, cosine with sentence-transformers FP32 "
      f"(torch {torch.__version__})")
print("| engine and precision | mean cosine | smallest | mean 1 − cosine |")
print("|---|--:|--:|--:|")
for name, vectors in rows:
    c = cosines(vectors.astype(np.float64), reference.astype(np.float64))
    print(f"| {name} | {c.mean():.6f} | {c.min():.6f} | {1 - c.mean():.2e} |")
c = cosines(rows[1][1].astype(np.float64), rows[0][1].astype(np.float64))
print(f"| SwiftBERT bf16 vs SwiftBERT fp32 | {c.mean():.6f} | {c.min():.6f} | {1 - c.mean():.2e} |")
