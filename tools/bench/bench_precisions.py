#!/usr/bin/env python3
"""SwiftBERT's FP32, BF16 and INT8 beside ONNX Runtime (FP32, dynamic INT8) and OpenVINO (FP32,
BF16) on the same exported graph, at batch x sequence cells: the per-precision peer comparison of
issue 45, for the models tools/bench/bench_modern_encoders.py makes (DeBERTa-v3-base and
Qwen3-Embedding-0.6B shapes among them).

RANDOM weights (but all-mpnet-base-v2 and embeddinggemma-300m, whose rows say REAL): honest for timing only.

    tools/.venv/bin/python tools/bench/bench_modern_encoders.py make --models deberta     # once
    tools/.venv/bin/python tools/bench/bench_precisions.py --models deberta --cells 1x128,1x512,8x512 --threads 2 --rounds 3

With --int8-attention, SwiftBERT's int8-attention (INT8 Linear layers and attention's products on
VNNI; accuracy in `bert bench`'s report) runs too, as one more INT8 column against ORT INT8.

Each round runs every engine once per cell, the order reversed every other round:
  - SwiftBERT: `bert bench --precision P --batch B --seq N --repetitions R --json` in a fresh process
    (fp32, bf16, int8: dynamic INT8 activations on `bert quantize`'s weights), its median;
  - ONNX Runtime 1.x FP32 on model.onnx, and INT8 on model.int8.onnx (onnxruntime.quantization's
    quantize_dynamic, QInt8 weights per channel, made once beside model.onnx), intra-op threads T,
    ORT_ENABLE_ALL, R timed runs after one warm-up, median;
  - OpenVINO FP32 and BF16 on model.onnx (INFERENCE_PRECISION_HINT f32 / bf16, LATENCY hint,
    INFERENCE_NUM_THREADS T), the same.
Cells are medians over the rounds; ratios are SwiftBERT / the fastest peer of the same precision
(INT8 against ORT INT8; BF16 against OpenVINO BF16; FP32 against the faster of ORT and OpenVINO FP32).
The same token ids for all: [CLS], (1000 + 7919 i) mod vocab, [SEP], as `bert bench` makes them.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_modern_encoders import BERT, MODELS, cpu_name, log, ort_session, snapshot_bert, special_ids, token_ids, versions  # noqa: E402

SWIFT = ("fp32", "bf16", "int8")
PEERS = ("ort-fp32", "ort-int8", "ov-fp32", "ov-bf16")
PRECISION = {"ort-fp32": "fp32", "ov-fp32": "fp32", "ort-int8": "int8", "ov-bf16": "bf16"}
# SwiftBERT's precisions as the tables name them, the peers' precision each is compared with, and
# what that comparison is against.
LABEL = {"fp32": "FP32", "bf16": "BF16", "int8": "INT8", "int8-attention": "INT8-attention"}
AGAINST = {"fp32": "fp32", "bf16": "bf16", "int8": "int8", "int8-attention": "int8"}
BEST_PEER = {"fp32": "best FP32 peer", "bf16": "OpenVINO BF16", "int8": "ORT INT8"}


def swift_ms(bert, model, precision, batch, length, threads, passes):
    command = [str(bert), "bench", "--model", str(model.converted), "--precision", precision, "--batch", str(batch),
               "--seq", str(length), "--threads", str(threads), "--repetitions", str(passes), "--no-memory",
               "--accuracy-sentences", "0", "--json", "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"bert bench exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return [r for r in json.loads(done.stdout) if r["precision"] == precision][0]["median_ms"]


def int8_graph(model):
    """model.int8.onnx: ONNX Runtime's dynamic quantization of the exported graph, made once."""
    path = model.onnx / "model.int8.onnx"
    if not path.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic
        log(f"quantize_dynamic {model.onnx / 'model.onnx'} -> {path}")
        quantize_dynamic(str(model.onnx / "model.onnx"), str(path), weight_type=QuantType.QInt8, per_channel=True)
    return path


def peer_runner(engine, model, threads):
    """A function feed -> outputs for one peer engine."""
    if engine.startswith("ort"):
        session = ort_session(model.onnx / "model.onnx" if engine == "ort-fp32" else int8_graph(model), threads)
        return lambda feed: session.run(None, feed)
    import openvino as ov
    compiled = ov.Core().compile_model(str(model.onnx / "model.onnx"), "CPU", {
        "INFERENCE_PRECISION_HINT": "f32" if engine == "ov-fp32" else "bf16", "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    return lambda feed: request.infer(feed)


def median_ms(run, feed, passes):
    run(feed)  # warm-up at the cell's shape
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        run(feed)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="deberta")
    parser.add_argument("--cells", default="1x128,1x512,8x512", help="batch x sequence, comma-separated")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--bert", default=str(BERT))
    parser.add_argument("--int8-attention", action="store_true", help="also time SwiftBERT's int8-attention")
    args = parser.parse_args()
    swift = SWIFT + (("int8-attention",) if args.int8_attention else ())
    cells = [tuple(int(x) for x in c.split("x")) for c in args.cells.split(",")]
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench-precisions-") as folder:
        bert, note = snapshot_bert(pathlib.Path(args.bert), folder)
        started = time.time()
        for key in args.models.split(","):
            model = MODELS[key]
            config = json.loads((model.converted / "config.json").read_text())
            cls, sep = special_ids(bert, model.converted)
            runners = {engine: peer_runner(engine, model, args.threads) for engine in PEERS}
            for batch, length in cells:
                ids = np.repeat(token_ids(length, config["vocab_size"], cls, sep), batch, axis=0)
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
                figures = {e: [] for e in (*[f"swift-{p}" for p in swift], *PEERS)}
                for r in range(args.rounds):
                    engines = list(figures)
                    if r % 2:
                        engines.reverse()
                    for engine in engines:
                        if engine.startswith("swift-"):
                            value = swift_ms(bert, model, engine[6:], batch, length, args.threads, args.passes)
                        else:
                            value = median_ms(runners[engine], feed, args.passes)
                        figures[engine].append(value)
                    log(f"{model.label} {batch}x{length} round {r + 1}/{args.rounds}: "
                        + ", ".join(f"{k} {v[-1]:.1f}" for k, v in figures.items()))
                med = {k: statistics.median(v) for k, v in figures.items()}
                best = {p: min(med[e] for e in PEERS if PRECISION[e] == p) for p in SWIFT}
                cellsText = " | ".join(f"{med[e]:,.1f}" for e in figures)
                ratios = " | ".join(f"{med[f'swift-{p}'] / best[AGAINST[p]]:.2f}" for p in swift)
                lines.append(f"| {model.label} | {batch}x{length} | {cellsText} | {ratios} |")
        seconds = time.time() - started
    v = versions()
    header = [
        "## SwiftBERT per precision beside ONNX Runtime and OpenVINO"
        + ("" if all(MODELS[k].real for k in args.models.split(",")) else " (random weights where the model says -random: timing only)"),
        "",
        f"- machine: {cpu_name()}, {os.cpu_count()} logical CPUs; {args.threads} threads everywhere",
        f"- bert: {note}; onnxruntime {v['onnxruntime']}, openvino {_openvino_version()}, transformers {v['transformers']}",
        f"- {args.rounds} rounds, engines alternating; per round the median of {args.passes} passes; cells: medians over the rounds, ms. Took {seconds / 60:.1f} min.",
        "",
        "| model | batch x seq | " + " | ".join(f"SwiftBERT {LABEL[p]}" for p in swift)
        + " | ORT FP32 | ORT INT8 | OpenVINO FP32 | OpenVINO BF16 | "
        + " | ".join(f"{LABEL[p]} / {BEST_PEER[AGAINST[p]]}" for p in swift) + " |",
        "|---|---|" + "--:|" * (len(swift) + len(PEERS) + len(swift)),
    ]
    text = "\n".join(header + lines) + "\n"
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)


def _openvino_version():
    try:
        import openvino
        return openvino.__version__
    except ImportError:
        return "not installed"


if __name__ == "__main__":
    main()
