"""What BGE-M3's sparse and multi-vector heads cost beside the forward pass, on a BGE-M3-shaped
checkpoint with RANDOM weights (speed depends only on the shapes; the outputs are meaningless).

BGE-M3's encoder is XLM-RoBERTa large: 24 layers, hidden 1024, 16 heads, feed-forward 4096, and
its heads are sparse_linear (Linear(1024, 1)) and colbert_linear (Linear(1024, 1024)). The
vocabulary is the 6,002-entry XLM-R Unigram tokenizer fixture instead of 250,002: an embedding
lookup costs the same whatever the table's size, and neither head reads the table.

    $(tools/venv.sh reference) tools/bench/bench_retrieval_heads.py make    # weights/bge-m3-random-hf, weights/bge-m3-random
    $(tools/venv.sh reference) tools/bench/bench_retrieval_heads.py bench   # `bert bench --heads`
"""
import json
import pathlib
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))  # random_checkpoint.py
from random_checkpoint import encoder_tensors, save_safetensors
from bench_xlmr_base import BERT, CONFIG as XLMR_BASE, ROOT, TOKENIZER, run

HF = ROOT / "weights/bge-m3-random-hf"
CONVERTED = ROOT / "weights/bge-m3-random"
# XLM-R base's config at XLM-R large's (BGE-M3's) sizes, with the tokenizer fixture's vocabulary.
CONFIG = {**XLMR_BASE, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
          "intermediate_size": 4096, "max_position_embeddings": 8194, "vocab_size": 6002}
# BGE-M3's sentence-transformers modules: CLS pooling, then Normalize.
MODULES = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
           {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
           {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
POOLING = {"word_embedding_dimension": 1024, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}


def make():
    if not (HF / "model.safetensors").exists():
        rng = np.random.default_rng(0)

        def normal(*shape):
            return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)

        HF.mkdir(parents=True, exist_ok=True)
        save_safetensors(encoder_tensors(CONFIG, normal), HF / "model.safetensors")
        (HF / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
        (HF / "modules.json").write_text(json.dumps(MODULES, indent=2) + "\n")
        (HF / "1_Pooling").mkdir(exist_ok=True)
        (HF / "1_Pooling/config.json").write_text(json.dumps(POOLING, indent=2) + "\n")
        shutil.copy(TOKENIZER, HF / "tokenizer.json")
        torch.manual_seed(0)
        h = CONFIG["hidden_size"]
        torch.save(torch.nn.Linear(h, 1).state_dict(), HF / "sparse_linear.pt")
        torch.save(torch.nn.Linear(h, h).state_dict(), HF / "colbert_linear.pt")
        print(f"wrote {HF} (random weights, for timing only)")
    if not (CONVERTED / "model.int8.safetensors").exists():
        run(BERT, "convert", HF, CONVERTED)
        run(BERT, "quantize", CONVERTED)


def bench():
    run(BERT, "bench", "--model", CONVERTED, "--heads", "--precision", "fp32,int8,bf16", "--batch", "1,8",
        "--seq", "128,512", "--threads", "2", "--accuracy-sentences", "0", "--no-memory")


if __name__ == "__main__":
    {"make": make, "bench": bench}[sys.argv[1] if len(sys.argv) > 1 else "bench"]()
