#!/usr/bin/env python3
"""SwiftBERT against ONNX Runtime on an XLM-R-base-shaped model with RANDOM weights (issue 17).

No real XLM-R weights can be reached here; speed depends only on the shapes, so the timing is
honest, the outputs are meaningless. Everything that reports a figure from it names it
'xlmr-base-random'.

    $(tools/venv.sh reference) tools/bench/bench_xlmr_base.py make     # weights/xlmr-base-random-hf (HF folder),
                                                             # weights/xlmr-base-random (converted + INT8),
                                                             # weights/xlmr-base-random-onnx (ORT FP32 + INT8)
    $(tools/venv.sh reference) tools/bench/bench_xlmr_base.py bench [--rounds 5] [--threads 2]

make: XLMRobertaModel shapes (12 layers, hidden 768, 12 heads, intermediate 3072, vocab 250,002,
514 positions, one token type), random normal(0, 0.02) weights written by numpy as float32
safetensors (~1.1 GB: the 250,002 x 768 embedding table is 768 MB of it, kept at full size so
the files and load times are XLM-R base's), the XLM-R Unigram tokenizer fixture as tokenizer.json.
Then `bert convert` and `bert quantize`, and for ONNX Runtime: torch.onnx (TorchScript exporter,
eager attention) -> onnxruntime.transformers.optimizer (model_type bert: its fusions cover
RoBERTa's layers) -> quantize_dynamic (QInt8 weights) for the INT8 graph.

bench: for each shape (b1x128, b32x128) the engines take turns, block by block (SwiftBERT FP32 and
INT8 are one `bert bench` call, which interleaves them itself; then ORT FP32, ORT INT8; repeated
--rounds times), each on the same token ids ([CLS] + random ids + [SEP]). It prints the median of
every engine's per-pass times, the ratios, and the load average before and after.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))  # random_checkpoint.py
from random_checkpoint import encoder_tensors, save_safetensors

ROOT = pathlib.Path(__file__).resolve().parents[2]
HF = ROOT / "weights/xlmr-base-random-hf"
CONVERTED = ROOT / "weights/xlmr-base-random"
ONNX = ROOT / "weights/xlmr-base-random-onnx"
TOKENIZER = ROOT / "Tests/SwiftBERTTests/Fixtures/multilingual/xlmr-unigram/tokenizer.json"
BERT = ROOT / ".build/release/bert"
CONFIG = {
    "architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta", "hidden_act": "gelu",
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "max_position_embeddings": 514, "type_vocab_size": 1, "vocab_size": 250002, "layer_norm_eps": 1e-5,
    "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "position_embedding_type": "absolute",
}
SHAPES = [(1, 128), (32, 128)]


def random_tensors(rng):
    def normal(*shape):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)

    # XLMRobertaModel's own names, without a prefix (as BGE-M3's file has them).
    return encoder_tensors(CONFIG, normal)


def run(*command):
    print("+", " ".join(map(str, command)), flush=True)
    subprocess.run(list(map(str, command)), check=True)


def make():
    if not (HF / "model.safetensors").exists():
        HF.mkdir(parents=True, exist_ok=True)
        save_safetensors(random_tensors(np.random.default_rng(0)), HF / "model.safetensors")
        (HF / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
        shutil.copy(TOKENIZER, HF / "tokenizer.json")
        print(f"wrote {HF} (random weights, for timing only)")
    if not (CONVERTED / "model.int8.safetensors").exists():
        run(BERT, "convert", HF, CONVERTED)
        run(BERT, "quantize", CONVERTED)
    if not (ONNX / "model.int8.onnx").exists():
        export_onnx()


def export_onnx():
    import onnx
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    ONNX.mkdir(parents=True, exist_ok=True)
    model = transformers.XLMRobertaModel.from_pretrained(str(HF), add_pooling_layer=False, dtype=torch.float32,
                                                         attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.randint(1000, 2000, (2, 16))
    names = ["input_ids", "attention_mask"]
    raw = ONNX / "model.raw.onnx"
    with torch.no_grad():
        torch.onnx.export(LastHiddenState(model), (ids, torch.ones_like(ids)), str(raw), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
    fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=CONFIG["num_attention_heads"],
                                     hidden_size=CONFIG["hidden_size"])
    fusions = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
    fused.save_model_to_file(str(ONNX / "model.onnx"), use_external_data_format=True)
    quantize_dynamic(str(ONNX / "model.onnx"), str(ONNX / "model.int8.onnx"), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    for p in ONNX.glob("model.raw.onnx*"):
        p.unlink()
    (ONNX / "export.json").write_text(json.dumps({"onnx_fusions": fusions}, indent=1) + "\n")
    print("ONNX fusions:", fusions)


def token_ids(batch, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, CONFIG["vocab_size"], (batch, seq), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 0, 2
    return ids


def ort_session(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_times(session, feed, passes):
    session.run(None, feed)  # warm-up
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def swift_times(batch, seq, threads, passes):
    """`bert bench` interleaves FP32 and INT8 itself; its JSON rows give each precision's median."""
    out = subprocess.run([str(BERT), "bench", "--model", str(CONVERTED), "--precision", "fp32,int8",
                          "--batch", str(batch), "--seq", str(seq), "--threads", str(threads), "--repetitions", str(passes),
                          "--no-memory", "--accuracy-sentences", "0", "--json", "--quiet"],
                         check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    return {f"swift-{r['precision']}": r["median_ms"] for r in rows}


def bench(rounds, threads, passes):
    load_before = os.getloadavg()
    sessions = {"ort-fp32": ort_session(ONNX / "model.onnx", threads), "ort-int8": ort_session(ONNX / "model.int8.onnx", threads)}
    results = {}
    for batch, seq in SHAPES:
        ids = token_ids(batch, seq, seed=batch)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        medians = {}
        for r in range(rounds):
            for engine, value in swift_times(batch, seq, threads, passes).items():
                medians.setdefault(engine, []).append(value)
            for engine, session in sessions.items():
                medians.setdefault(engine, []).append(statistics.median(ort_times(session, feed, passes)))
            print(f"b{batch}x{seq} round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in medians.items()),
                  flush=True)
        results[f"b{batch}x{seq}"] = {k: statistics.median(v) for k, v in medians.items()}
    load_after = os.getloadavg()
    print(f"\nxlmr-base-random (RANDOM weights), threads {threads}, {rounds} rounds x {passes} passes per engine;"
          f" load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (2 cores)")
    print("| shape | SwiftBERT FP32 | ORT FP32 | FP32 ratio (ORT/Swift) | SwiftBERT INT8 | ORT INT8 | INT8 ratio (ORT/Swift) |")
    print("|---|---|---|---|---|---|---|")
    for shape, m in results.items():
        print(f"| {shape} | {m['swift-fp32']:.1f} ms | {m['ort-fp32']:.1f} ms | {m['ort-fp32'] / m['swift-fp32']:.2f} |"
              f" {m['swift-int8']:.1f} ms | {m['ort-int8']:.1f} ms | {m['ort-int8'] / m['swift-int8']:.2f} |")
    print(json.dumps({"threads": threads, "rounds": rounds, "passes": passes, "load_before": load_before,
                      "load_after": load_after, "medians_ms": results}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["make", "bench"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passes", type=int, default=3, help="timed passes per engine per round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bert", default=str(BERT), help="the bert binary (default: .build/release/bert)")
    args = parser.parse_args()
    globals()["BERT"] = pathlib.Path(args.bert)
    if not BERT.exists():
        sys.exit(f"{BERT} is missing: make bert")
    make() if args.step == "make" else bench(args.rounds, args.threads, args.passes)


if __name__ == "__main__":
    main()
