#!/usr/bin/env python3
"""SwiftBERT against ONNX Runtime, OpenVINO, CTranslate2 and PyTorch, side by side in one run.

    python3 tools/bench/compare_engines.py            # the full run (~20 min on 2 shared cores before the three
                                                # OpenVINO rows came, about a quarter more per cell; MiniLM
                                                # alone 26 min when other jobs held 1.9 cores),
                                                # writes docs/benchmarks.md
    python3 tools/bench/compare_engines.py --quick    # fewer repetitions (~7 min); same tables, noisier
    python3 tools/bench/compare_engines.py --render weights/.cache/compare/results-....json   # docs only
    python3 tools/bench/compare_engines.py --swift-binary DIR/SwiftBERTBenchmarks   # no Swift build (`bert` beside it)

What it does, in order (every step is skipped when its output is already there):
1. Makes tools/.venv with the peers from PyPI (`tools/venv.sh reference`: the pins of
   tools/requirements.txt; torch comes from a local CPU wheel where pip's find-links has one, e.g.
   /opt/wheels, else PyPI's CUDA build with its nvidia-* wheels: large, but it works) and re-runs
   itself inside it.
2. Builds `SwiftBERTBenchmarks` (release; `--swift-binary` takes a built one and the `bert` beside
   it instead) and, when missing, makes the models: the random bert-base-shaped checkpoint
   (tools/fixtures/make_random_bert.py), the converted folders and their INT8 files (`bert convert`,
   `bert quantize`), and int8-static's file (`bert quantize --calibrate`) on the same 300 corpus
   sentences NNCF calibrates OpenVINO INT8 on.
3. Exports the peers' models from the same Hugging Face weights (weights/.cache/hf/<model>):
   ONNX (torch.onnx, fused with onnxruntime.transformers.optimizer; INT8 with
   onnxruntime.quantization.quantize_dynamic) and CTranslate2 (its transformers converter,
   float32 and int8), under weights/.cache/compare/<model>/. OpenVINO reads ONNX Runtime's FP32
   graph (model.fused.onnx) as it is, for FP32 and BF16; its INT8 is NNCF's static post-training
   quantisation of that graph, calibrated on 300 of the corpus sentences (ov-int8/model.xml).
4. Chooses the token ids once (real license and copyright lines from /usr/share) and writes them
   to a JSON file every engine reads: SwiftBERT (`SwiftBERTBenchmarks peer --serve`) and one
   Python worker per peer, each a subprocess kept alive for the whole model. Each engine's pooled
   output at b1x128 is checked against PyTorch FP32 (cosine).
5. For every cell (workload x thread count) it interleaves the engines, A B C ... then B C ... A,
   each turn a few engine calls, and keeps the medians. Times are the engine call only, measured
   inside each worker (wall clock), on identical token ids.
6. Writes the raw results (weights/.cache/compare/results-<time>.json), docs/benchmarks.md
   (between its GENERATED markers; text outside them is kept) and docs/benchmarks-chart.svg.
"""
import argparse
import datetime
import hashlib
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = ROOT / "weights/.cache"
HF = CACHE / "hf"
WORK = CACHE / "compare"
DEFAULT_VENV = ROOT / "tools/.venv"
# The peers' pins: the reference group of tools/requirements.txt, which tools/venv.sh installs.
REQUIREMENTS = [line.split("#")[0].strip() for line in (ROOT / "tools/requirements.txt").read_text().splitlines()
                if re.search(r"#\s*reference\b", line)]
DOC = ROOT / "docs/benchmarks.md"
CHART = ROOT / "docs/benchmarks-chart.svg"
BEGIN, END = "<!-- BEGIN GENERATED: tools/bench/compare_engines.py -->", "<!-- END GENERATED -->"

# SwiftBERT's precisions, one row each: (engine id, label, the peers' precision class it is judged
# against, `SwiftBERTBenchmarks peer --precision` value, OpenBLAS left to pick its own kernels).
# Issue 28's rule: FP32 against the fastest FP32 peer, BF16 against OpenVINO BF16 (the one BF16
# peer), INT8 against the fastest INT8 peer.
# A precision the built binary does not know (e.g. bf16 before it exists) is left out of the run.
SWIFT_ENGINES = [
    ("swift-fp32", "SwiftBERT FP32", "fp32", "fp32", False),
    ("swift-fp32-auto", "SwiftBERT FP32, OpenBLAS auto", "fp32", "fp32", True),
    ("swift-bf16", "SwiftBERT BF16", "bf16", "bf16", False),
    ("swift-int8", "SwiftBERT INT8 (W8A8)", "int8", "int8", False),
    ("swift-int8a", "SwiftBERT INT8 (W8A8) + INT8 attention", "int8", "int8-attention", False),
    ("swift-int8w", "SwiftBERT INT8 weight-only", "int8", "int8-weights", False),
    ("swift-int8s", "SwiftBERT INT8 static (calibrated) + INT8 attention", "int8", "int8-static", False),
    ("swift-int8-auto", "SwiftBERT INT8 (W8A8), OpenBLAS auto", "int8", "int8", True),
    # Issue 47: the same binary with AMX off (SWIFTBERT_ISA=avx512), beside the tile rows, on a
    # CPU with AMX; pass them with --engines (on a CPU without AMX they equal swift-bf16/int8).
    ("swift-bf16-vector", "SwiftBERT BF16, AMX off", "bf16", "bf16", False),
    ("swift-int8-vector", "SwiftBERT INT8 (W8A8), AMX off", "int8", "int8", False),
]
# The environment a SwiftBERT row adds to the machine's.
SWIFT_ENVIRONMENT = {"swift-bf16-vector": {"SWIFTBERT_ISA": "avx512"}, "swift-int8-vector": {"SWIFTBERT_ISA": "avx512"}}
SWIFT_DEFAULT = ["swift-fp32", "swift-fp32-auto", "swift-bf16", "swift-int8", "swift-int8a", "swift-int8w", "swift-int8s",
                 # AMX off in the same binary; --engines leaves them out where the CPU has no AMX.
                 "swift-bf16-vector", "swift-int8-vector"]
PEER_ENGINES = {  # id: (label, family, precision class)
    "torch-fp32": ("PyTorch FP32", "torch", "fp32"),
    "ort-fp32": ("ONNX Runtime FP32", "ort", "fp32"),
    "ort-int8": ("ONNX Runtime INT8", "ort", "int8"),
    "ov-fp32": ("OpenVINO FP32", "ov", "fp32"),
    "ov-bf16": ("OpenVINO BF16", "ov", "bf16"),
    "ov-int8": ("OpenVINO INT8 (NNCF static)", "ov", "int8"),
    "ct2-fp32": ("CTranslate2 float32", "ct2", "fp32"),
    "ct2-int8": ("CTranslate2 int8", "ct2", "int8"),
}
ENGINES = {e: (label, "swift", cls) for e, label, cls, _, _ in SWIFT_ENGINES} | PEER_ENGINES
SWIFT_PRECISION = {e: (precision, auto) for e, _, _, precision, auto in SWIFT_ENGINES}

MODELS = {
    "minilm": {"name": "all-MiniLM-L6-v2", "title": "all-MiniLM-L6-v2 (6 layers, hidden 384)",
               "cells": [("b1x128", 1), ("b1x128", 2), ("b1x16", 1), ("b1x256", 1), ("b1x512", 1),
                         ("b32x128", 1), ("b32x128", 2), ("sentences", 1), ("sentences", 2)],
               "engines": SWIFT_DEFAULT + ["torch-fp32", "ort-fp32", "ort-int8", "ov-fp32", "ov-bf16", "ov-int8",
                                           "ct2-fp32", "ct2-int8"]},
    "bert-base": {"name": "bert-base-random", "title": "bert-base-shaped, random weights (12 layers, hidden 768)",
                  "cells": [("b1x128", 1), ("b1x128", 2), ("b1x16", 1), ("b1x512", 1), ("b32x128", 1),
                            ("b32x128", 2)],
                  "engines": SWIFT_DEFAULT + ["ort-fp32", "ort-int8", "ov-fp32", "ov-bf16", "ov-int8", "ct2-fp32",
                                              "ct2-int8"]},
}
# The SwiftBERT engine each target is judged on, and the peers it is judged against.
TARGETS = [("swift-fp32", "fp32"), ("swift-fp32-auto", "fp32"), ("swift-bf16", "bf16"), ("swift-int8", "int8"),
           ("swift-int8a", "int8"), ("swift-int8s", "int8")]
# Issue 28: SwiftBERT's time at most 0.8 x the fastest peer's of the same precision (1.25 x as fast).
TARGET_TIME_RATIO = 0.8
PRECISION_TITLES = {"fp32": "FP32", "bf16": "BF16", "int8": "INT8"}
# NNCF's calibration set for OpenVINO INT8: every third corpus sentence, this many of them.
OV_CALIBRATION_SENTENCES = 300
# The runtime model's layer types whose kernels (primitiveType) info() reports: the Linear layers
# (FullyConnected, MatMul), the fused attention and element-wise chains (Snippets' Subgraph), and
# the FakeQuantize nodes INT8 leaves as such.
OV_KERNEL_LAYERS = ("FullyConnected", "MatMul", "ScaledDotProductAttention", "Subgraph", "FakeQuantize")
WORKLOAD_TITLES = {"b1x128": "b1x128", "b1x16": "b1x16", "b1x256": "b1x256", "b1x512": "b1x512",
                   "b32x128": "b32x128 seq/s", "sentences": "1,000 sentences seq/s"}
SENTENCE_COUNT, SENTENCE_BATCH = 1000, 32


# ---------------------------------------------------------------------------------------------
# 1. The virtual environment


def ensure_venv(venv):
    if venv.resolve() == DEFAULT_VENV.resolve():
        out = subprocess.run([str(ROOT / "tools/venv.sh"), "reference"], check=True, stdout=subprocess.PIPE, text=True)
        return pathlib.Path(out.stdout.strip().splitlines()[-1])
    # Another --venv: the same pins, installed with pip.
    python = venv / "bin/python"
    marker = venv / ".compare-engines-requirements"
    wanted = "\n".join(REQUIREMENTS) + "\n"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    log(f"making the peers' virtual environment in {venv} (once; without a local CPU torch wheel, PyPI's CUDA torch is a few GB)")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *REQUIREMENTS], check=True)
    marker.write_text(wanted)
    return python


def in_venv(venv):
    return pathlib.Path(sys.prefix).resolve() == venv.resolve()


# ---------------------------------------------------------------------------------------------
# 2. SwiftBERT: build, models


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def swift_build(product):
    # The native build line (docs/builds.md) with the Makefile's trait: a trait reaches every target,
    # so the same flags let this build share .build/release with `make` (the benchmarks themselves
    # do not link the server).
    native = (ROOT / "tools" / "native-flags").read_text().split() + (ROOT / "tools" / "build-flags").read_text().split()
    log(f"swift build -c release {' '.join(native)} --product {product}")
    result = subprocess.run(["swift", "build", "-c", "release", *native, "--product", product], cwd=ROOT,
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"swift build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    binpath = subprocess.run(["swift", "build", "-c", "release", *native, "--show-bin-path"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    return pathlib.Path(binpath) / product


def ensure_swift_models(names, build, calibration):
    """Converted and quantised models for every SwiftBERT precision; int8-static calibrated on
    `calibration`, the same sentences NNCF calibrates OpenVINO INT8 on."""
    if not (HF / "all-MiniLM-L6-v2/config.json").exists():
        subprocess.run([str(ROOT / "tools/setup.sh")], cwd=ROOT, check=True)
    if "bert-base-random" in names and not (HF / "bert-base-random/model.safetensors").exists():
        subprocess.run([sys.executable, str(ROOT / "tools/fixtures/make_random_bert.py")], cwd=ROOT, check=True)
    bert = None
    for name in names:
        folder = ROOT / "weights" / name
        if not (folder / "model.safetensors").exists():
            bert = bert or build("bert")
            subprocess.run([str(bert), "convert", str(HF / name), str(folder)], cwd=ROOT, check=True)
        if not (folder / "model.int8.safetensors").exists():
            bert = bert or build("bert")
            subprocess.run([str(bert), "quantize", str(folder)], cwd=ROOT, check=True)
        text = WORK / "calibration.txt"
        text.parent.mkdir(parents=True, exist_ok=True)
        text.write_text("\n".join(calibration) + "\n")
        stamp = folder / ".int8-static-calibration"
        key = hashlib.sha256(text.read_bytes()).hexdigest()[:16]
        if not (folder / "model.int8-static.safetensors").exists() or not stamp.exists() or stamp.read_text() != key:
            bert = bert or build("bert")
            subprocess.run([str(bert), "quantize", "--calibrate", str(text), str(folder)], cwd=ROOT, check=True)
            stamp.write_text(key)
    return build("SwiftBERTBenchmarks")


# ---------------------------------------------------------------------------------------------
# 3. The peers' models


def export_peer_models(name):
    """Encoder-only HF folder, ONNX FP32 (fused) + INT8, CTranslate2 float32 + int8."""
    import torch
    import transformers

    out = WORK / name
    source = HF / name
    stamp = out / ".exported"
    key = json.dumps({"source": str(source), "mtime": (source / "model.safetensors").stat().st_mtime,
                      "requirements": REQUIREMENTS, "version": 2})
    if stamp.exists() and stamp.read_text() == key:
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    log(f"exporting {name} for the peers into {out}")
    encoder = out / "hf-encoder"
    model = transformers.BertModel.from_pretrained(source, add_pooling_layer=False).eval()
    model.save_pretrained(encoder)
    for f in ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]:
        if (source / f).exists():
            shutil.copy(source / f, encoder / f)

    # ONNX: the TorchScript exporter over the eager attention (the graph ONNX Runtime's BERT fusions
    # recognise), then onnxruntime.transformers.optimizer (Attention, SkipLayerNormalization,
    # BiasGelu, EmbedLayerNormalization), then dynamic INT8 quantisation of the fused graph.
    eager = transformers.BertModel.from_pretrained(encoder, attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    ids = torch.randint(1000, 2000, (2, 16))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    raw = out / "model.onnx"
    torch.onnx.export(LastHiddenState(eager), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(raw),
                      input_names=names, output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
    from onnxruntime.transformers import optimizer
    config = model.config
    fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=config.num_attention_heads,
                                     hidden_size=config.hidden_size)
    fusions = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
    fused.save_model_to_file(str(out / "model.fused.onnx"))
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(str(out / "model.fused.onnx"), str(out / "model.int8.onnx"), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    raw.unlink()

    import ctranslate2
    for quantization, folder in [(None, "ct2-float32"), ("int8", "ct2-int8")]:
        ctranslate2.converters.TransformersConverter(str(encoder)).convert(str(out / folder), quantization=quantization,
                                                                          force=True)
    (out / "export.json").write_text(json.dumps({"onnx_fusions": fusions}, indent=1))
    stamp.write_text(key)
    return out


def ov_calibration(lines):
    """NNCF's calibration set (and SwiftBERT int8-static's): every third corpus sentence."""
    return lines[::3][:OV_CALIBRATION_SENTENCES]


def quantize_for_openvino(out, name, lines):
    """OpenVINO INT8: NNCF's static post-training quantisation of ONNX Runtime's FP32 graph
    (model.fused.onnx, the graph ov-fp32 runs), calibrated on real corpus sentences, saved as
    out/ov-int8/model.xml. Its facts go into export.json."""
    import nncf
    import numpy as np
    import openvino
    import transformers

    source = out / "model.fused.onnx"
    target = out / "ov-int8"
    stamp = target / ".quantized"
    calibration = ov_calibration(lines)
    key = json.dumps({"source_mtime": source.stat().st_mtime, "sentences": len(calibration),
                      "corpus_sha256": hashlib.sha256("\n".join(calibration).encode()).hexdigest()[:16]})
    if stamp.exists() and stamp.read_text() == key:
        return
    log(f"quantizing {name} for OpenVINO with NNCF (static INT8, {len(calibration)} calibration sentences)")
    model = openvino.Core().read_model(str(source))
    inputs = {i.get_any_name() for i in model.inputs}
    tokenizer = transformers.AutoTokenizer.from_pretrained(HF / name)
    samples = []
    for line in calibration:  # one unpadded sentence per sample, as the dynamic shapes allow
        ids = np.array([tokenizer(line, truncation=True, max_length=256)["input_ids"]], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        samples.append({k: v for k, v in feed.items() if k in inputs})
    started = time.time()
    quantized = nncf.quantize(model, nncf.Dataset(samples), model_type=nncf.ModelType.TRANSFORMER,
                              subset_size=len(samples))
    seconds = time.time() - started
    if target.exists():
        shutil.rmtree(target)
    target.mkdir()
    # compress_to_fp16=False: the layers left in float keep their FP32 weights, as in the ONNX graph.
    openvino.save_model(quantized, str(target / "model.xml"), compress_to_fp16=False)
    fake_quantize = sum(op.get_type_name() == "FakeQuantize" for op in quantized.get_ops())
    facts = json.loads((out / "export.json").read_text())
    facts["openvino_int8"] = {"source": source.name, "calibration_sentences": len(samples),
                              "fake_quantize": fake_quantize, "seconds": round(seconds, 1)}
    (out / "export.json").write_text(json.dumps(facts, indent=1))
    stamp.write_text(key)


# ---------------------------------------------------------------------------------------------
# 4. Token ids


def corpus_lines():
    """1,000 real license and copyright lines, 20-142 characters, chosen deterministically."""
    found = set()
    paths = sorted(pathlib.Path("/usr/share/common-licenses").glob("*")) + \
        sorted(pathlib.Path("/usr/share/doc").glob("*/copyright"))
    for path in paths:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            line = " ".join(line.split())
            if 20 <= len(line) <= 142 and line.isascii() and re.search(r"[A-Za-z]{3}", line):
                found.add(line)
    ordered = sorted(found)
    if len(ordered) < SENTENCE_COUNT:
        sys.exit(f"only {len(ordered)} license/copyright lines found under /usr/share; need {SENTENCE_COUNT}")
    step = len(ordered) / SENTENCE_COUNT
    return [ordered[int(i * step)] for i in range(SENTENCE_COUNT)]


def make_workloads(model_name, lines):
    """{name: [batch, ...]}, a batch being unpadded id lists ([CLS] ... [SEP])."""
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(HF / model_name)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    stream = [t for line in lines for t in tokenizer(line, add_special_tokens=False)["input_ids"]]

    def window(i, length):
        return [cls] + stream[i * (length - 2):(i + 1) * (length - 2)] + [sep]

    workloads = {"b1x128": [[window(0, 128)]], "b1x16": [[window(0, 16)]], "b1x256": [[window(0, 256)]],
                 "b1x512": [[window(0, 512)]],
                 "b32x128": [[window(i, 128) for i in range(32)]]}
    if model_name == "all-MiniLM-L6-v2":
        # As sentence-transformers encodes a list: longest text first, batches of 32, each padded to
        # its longest member (the padding happens in the workers, for the engines that take it).
        order = sorted(range(len(lines)), key=lambda i: -len(lines[i]))
        batches = []
        for start in range(0, len(order), SENTENCE_BATCH):
            texts = [lines[i] for i in order[start:start + SENTENCE_BATCH]]
            batches.append([tokenizer(t, truncation=True, max_length=256)["input_ids"] for t in texts])
        workloads["sentences"] = batches
    return workloads


def workload_stats(workloads):
    out = {}
    for name, batches in workloads.items():
        lengths = [len(s) for b in batches for s in b]
        padded = sum(max(len(s) for s in b) * len(b) for b in batches)
        out[name] = {"sequences": len(lengths), "batches": len(batches), "tokens": sum(lengths),
                     "padded_tokens": padded, "min_len": min(lengths), "max_len": max(lengths)}
    return out


# ---------------------------------------------------------------------------------------------
# Python workers (run inside the venv): one engine each, driven over stdin/stdout


def padded(batch):
    import numpy as np
    longest = max(len(s) for s in batch)
    ids = np.zeros((len(batch), longest), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, s in enumerate(batch):
        ids[i, :len(s)] = s
        mask[i, :len(s)] = 1
    return ids, mask


class TorchEngine:
    def __init__(self, folder, precision):
        import torch
        import transformers
        torch.set_num_interop_threads(1)
        self.torch = torch
        self.model = transformers.BertModel.from_pretrained(folder / "hf-encoder").eval()
        self.threads = None

    def info(self):
        torch = self.torch
        config = torch.__config__.show()
        blas = re.search(r"BLAS_INFO=(\w+)", config)
        mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
        dnnl = re.search(r"(?:oneDNN|MKL-DNN) v([\d.]+)", config)
        return {"engine": "PyTorch", "version": torch.__version__, "attention": self.model.config._attn_implementation,
                "blas": blas.group(1) if blas else "?", "mkl": mkl.group(1) if mkl else "?",
                "onednn": dnnl.group(1) if dnnl else "?", "cpu_capability": torch.backends.cpu.get_cpu_capability()}

    def prepare(self, batches):
        out = []
        for b in batches:
            ids, mask = padded(b)
            ids = self.torch.from_numpy(ids)
            out.append({"input_ids": ids, "attention_mask": self.torch.from_numpy(mask),
                        "token_type_ids": self.torch.zeros_like(ids)})
        return out

    def set_threads(self, threads):
        if threads != self.threads:
            self.torch.set_num_threads(threads)
            self.threads = threads

    def call(self, feed, threads):
        with self.torch.inference_mode():
            return self.model(**feed).last_hidden_state

    def hidden(self, output, feed):
        return output.numpy(), feed["attention_mask"].numpy()


class OrtEngine:
    def __init__(self, folder, precision):
        import onnxruntime
        self.ort = onnxruntime
        self.path = folder / ("model.fused.onnx" if precision == "fp32" else "model.int8.onnx")
        self.sessions = {}

    def session(self, threads):
        if threads not in self.sessions:
            options = self.ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = self.ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            self.sessions[threads] = self.ort.InferenceSession(str(self.path), options,
                                                               providers=["CPUExecutionProvider"])
        return self.sessions[threads]

    def info(self):
        return {"engine": "ONNX Runtime", "version": self.ort.__version__, "model": self.path.name,
                "providers": ["CPUExecutionProvider"]}

    def prepare(self, batches):
        import numpy as np
        inputs = {i.name for i in self.session(1).get_inputs()}
        out = []
        for b in batches:
            ids, mask = padded(b)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out.append(({k: v for k, v in feed.items() if k in inputs}, mask))
        return out

    def set_threads(self, threads):
        self.session(threads)

    def call(self, feed, threads):
        return self.sessions[threads].run(["last_hidden_state"], feed[0])[0]

    def hidden(self, output, feed):
        return output, feed[1]


class OvEngine:
    """OpenVINO's CPU plugin. FP32 and BF16 run ONNX Runtime's FP32 graph (its ONNX frontend reads the
    com.microsoft fusions), INT8 NNCF's static INT8 of it with the f32 hint (INT8 layers run INT8, the
    rest FP32). Batch and sequence stay dynamic, so one compiled model serves every workload; the
    thread count is a compile property, so there is one compiled model per thread count."""

    def __init__(self, folder, precision):
        import openvino
        self.ov = openvino
        self.core = openvino.Core()
        self.graph = "ov-int8/model.xml" if precision == "int8" else "model.fused.onnx"
        self.path = folder / self.graph
        self.precision_hint = "bf16" if precision == "bf16" else "f32"
        self.model = self.core.read_model(str(self.path))
        self.inputs = {i.get_any_name() for i in self.model.inputs}
        self.requests = {}
        self.compiled = {}

    def request(self, threads):
        if threads not in self.requests:
            self.compiled[threads] = self.core.compile_model(self.model, "CPU", {
                "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": threads,
                "INFERENCE_PRECISION_HINT": self.precision_hint})
            self.requests[threads] = self.compiled[threads].create_infer_request()
        return self.requests[threads]

    def info(self):
        import numpy as np
        # With dynamic shapes a node picks its kernel at its first inference: run one (b1x128 T1) first.
        ids = np.full((1, 128), 1000, dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        self.request(1).infer({k: v for k, v in feed.items() if k in self.inputs})
        kernels = {}
        for op in self.compiled[1].get_runtime_model().get_ordered_ops():
            rt = op.get_rt_info()
            layer = rt["layerType"].astype(str)
            if layer in OV_KERNEL_LAYERS:
                kernel = f"{rt['primitiveType'].astype(str)} {rt['runtimePrecision'].astype(str)}"
                kernels.setdefault(layer, {})
                kernels[layer][kernel] = kernels[layer].get(kernel, 0) + 1
        return {"engine": "OpenVINO", "version": self.ov.__version__,
                "model": self.graph,
                "precision_hint": self.precision_hint, "kernels": kernels,
                "fake_quantize": sum(op.get_type_name() == "FakeQuantize" for op in self.model.get_ops()),
                "capabilities": list(self.core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))}

    def prepare(self, batches):
        import numpy as np
        out = []
        for b in batches:
            ids, mask = padded(b)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out.append(({k: v for k, v in feed.items() if k in self.inputs}, mask))
        return out

    def set_threads(self, threads):
        self.request(threads)

    def call(self, feed, threads):
        # Shared inputs and outputs: no copies (ONNX Runtime and PyTorch make none either). The output
        # is a view of the request's tensor, valid until its next call.
        return self.requests[threads].infer(feed[0], share_inputs=True, share_outputs=True)[0]

    def hidden(self, output, feed):
        import numpy as np
        return np.array(output), feed[1]


class Ct2Engine:
    def __init__(self, folder, precision):
        import logging

        import ctranslate2
        ctranslate2.set_log_level(logging.INFO)  # its CPU/backend choice goes to this worker's log
        self.ct2 = ctranslate2
        self.path = folder / ("ct2-float32" if precision == "fp32" else "ct2-int8")
        self.compute_type = "float32" if precision == "fp32" else "int8"
        self.encoders = {}

    def encoder(self, threads):
        if threads not in self.encoders:
            self.encoders[threads] = self.ct2.Encoder(str(self.path), device="cpu", compute_type=self.compute_type,
                                                      intra_threads=threads, inter_threads=1)
        return self.encoders[threads]

    def info(self):
        return {"engine": "CTranslate2", "version": self.ct2.__version__, "compute_type": self.compute_type}

    def prepare(self, batches):
        import numpy as np
        out = []
        for b in batches:
            ids, mask = padded(b)
            ids32 = np.ascontiguousarray(ids.astype(np.int32))
            lengths = mask.sum(1).astype(np.int32)
            out.append((self.ct2.StorageView.from_array(ids32), self.ct2.StorageView.from_array(lengths),
                        ids32, lengths, mask))
        return out

    def set_threads(self, threads):
        self.encoder(threads)

    def call(self, feed, threads):
        return self.encoders[threads].forward_batch(feed[0], feed[1])

    def hidden(self, output, feed):
        import numpy as np
        return np.array(output.last_hidden_state), feed[4]


def worker_main(args):
    import numpy as np
    kind, precision = args.worker.split(":")
    engine = {"torch": TorchEngine, "ort": OrtEngine, "ov": OvEngine, "ct2": Ct2Engine}[kind](pathlib.Path(args.folder),
                                                                                            precision)
    workloads = json.loads(pathlib.Path(args.input).read_text())["workloads"]
    prepared = {}

    def feeds(name):
        if name not in prepared:
            prepared[name] = engine.prepare(workloads[name])
        return prepared[name]

    def respond(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            op = request["op"]
            threads = request.get("threads", 1)
            if op == "info":
                respond(engine.info())
            elif op == "run":
                batch_feeds = feeds(request["workload"])
                engine.set_threads(threads)
                for _ in range(request.get("warmup", 0)):
                    for f in batch_feeds:
                        engine.call(f, threads)
                times, cpu = [], []
                for _ in range(request.get("calls", 1)):
                    total = total_cpu = 0
                    for f in batch_feeds:
                        cpu_start = time.process_time_ns()
                        start = time.perf_counter_ns()
                        output = engine.call(f, threads)
                        total += time.perf_counter_ns() - start
                        total_cpu += time.process_time_ns() - cpu_start
                        del output
                    times.append(total / 1e6)
                    cpu.append(total_cpu / 1e6)
                respond({"ms": times, "cpu_ms": cpu})
            elif op == "pool":
                f = feeds(request["workload"])[0]
                engine.set_threads(threads)
                hidden, mask = engine.hidden(engine.call(f, threads), f)
                m = mask[:, :, None].astype(np.float32)
                pooled = (hidden * m).sum(1) / m.sum(1)
                respond({"pooled": pooled.tolist()})
            elif op == "quit":
                return
            else:
                respond({"error": f"unknown op {op}"})
        except Exception as e:  # noqa: BLE001 - reported to the harness
            respond({"error": repr(e)})


# ---------------------------------------------------------------------------------------------
# 5. Running the engines side by side


class Worker:
    def __init__(self, engine_id, command, env, log_path):
        self.id = engine_id
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        env=env, text=True, cwd=ROOT)
        self.dead = None

    def request(self, **request):
        if self.dead:
            return {"error": self.dead}
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            line = ""
            self.dead = repr(e)
        if not line:
            self.dead = self.dead or f"worker exited (code {self.process.poll()}); see {self.log_path}"
            return {"error": self.dead}
        return json.loads(line)

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.write('{"op":"quit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except Exception:  # noqa: BLE001
                self.process.kill()
        self.log.close()


def start_worker(engine_id, model, peer_folder, input_path, swift_binary, logs, log_name=None):
    label, family, precision = ENGINES[engine_id]
    env = dict(os.environ)
    if family == "swift":
        swift_precision, openblas_auto = SWIFT_PRECISION[engine_id]
        if openblas_auto:
            env.pop("OPENBLAS_CORETYPE", None)
            env.pop("OPENBLAS_L2_SIZE", None)
        env.update(SWIFT_ENVIRONMENT.get(engine_id, {}))
        command = [str(swift_binary), "peer", "--model", str(ROOT / "weights" / model), "--input", str(input_path),
                   "--precision", swift_precision, "--threads", "1,2", "--serve"]
    else:
        command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", f"{family}:{precision}",
                   "--folder", str(peer_folder), "--input", str(input_path)]
    return Worker(engine_id, command, env, logs / f"{model}.{log_name or engine_id}.log")


def busy_jiffies():
    """CPU time (clock ticks) spent by the whole machine, and by our workers and ourselves."""
    fields = pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return user + nice + system + irq + softirq + steal


def process_jiffies(pids):
    total = 0
    for pid in pids:
        try:
            stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
            parts = stat[stat.rindex(")") + 2:].split()
            total += int(parts[11]) + int(parts[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            pass
    return total


class ForeignLoad:
    """Cores used by other processes while the harness runs: machine-wide busy time minus ours."""

    def __init__(self, workers):
        self.pids = [os.getpid()] + [w.process.pid for w in workers]
        self.hz = os.sysconf("SC_CLK_TCK")
        self.reset()

    def reset(self):
        self.t0, self.busy0, self.ours0 = time.time(), busy_jiffies(), process_jiffies(self.pids)

    def cores(self):
        dt = max(time.time() - self.t0, 1e-3)
        foreign = (busy_jiffies() - self.busy0) - (process_jiffies(self.pids) - self.ours0)
        return max(0.0, foreign / self.hz / dt)


def wait_for_quiet(monitor, limit_seconds, threshold=0.3):
    """Waits (at most limit_seconds) until other processes use under `threshold` cores for 2 s."""
    deadline = time.time() + limit_seconds
    while True:
        monitor.reset()
        time.sleep(2)
        cores = monitor.cores()
        if cores < threshold or time.time() >= deadline:
            return cores


def loadavg():
    try:
        return float(pathlib.Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def median(values):
    return statistics.median(values) if values else float("nan")


def run_model(key, args, swift_binary, lines, results):
    spec = MODELS[key]
    model = spec["name"]
    engines = [e for e in spec["engines"] if e in args.engines]
    if "OPENBLAS_CORETYPE" not in os.environ and "OPENBLAS_L2_SIZE" not in os.environ:
        engines = [e for e in engines if not e.endswith("-auto")]  # would be the same configuration twice
    peer_folder = export_peer_models(model) if any(ENGINES[e][1] != "swift" for e in engines) else None
    if "ov-int8" in engines:
        quantize_for_openvino(peer_folder, model, lines)
    workloads = make_workloads(model, lines)
    input_path = WORK / f"{model}.workloads.json"
    input_path.write_text(json.dumps({"workloads": workloads}))
    logs = WORK / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    reference = torch_reference(peer_folder, workloads) if peer_folder else {}

    out = results["models"].setdefault(key, {"name": model, "title": spec["title"], "cells": [],
                                             "workloads": workload_stats(workloads), "engines": {},
                                             "agreement": {}})
    if peer_folder and (peer_folder / "export.json").exists():
        out["export"] = json.loads((peer_folder / "export.json").read_text())
    log(f"{model}: starting {len(engines)} workers")
    workers = {e: start_worker(e, model, peer_folder, input_path, swift_binary, logs) for e in engines}
    try:
        for e, w in list(workers.items()):
            info = w.request(op="info")
            if "error" in info:
                log(f"  {e}: {info['error']}")
                if ENGINES[e][1] == "swift":  # a precision this build does not have: leave it out
                    log(f"  {e}: left out of this run")
                    w.close()
                    del workers[e]
                    engines.remove(e)
                    continue
            out["engines"][e] = {"label": ENGINES[e][0], "info": info}
            # Touch every weight and allocate once per thread count before anything is timed.
            for t in sorted({t for _, t in spec["cells"]}):
                w.request(op="run", workload="b1x128", threads=t, calls=1, warmup=0)
            if reference:
                pooled = w.request(op="pool", workload="b1x128", threads=1)
                if "pooled" in pooled:
                    out["agreement"][e] = agreement(pooled["pooled"], reference["b1x128"])
        for e in engines:
            if e.startswith("ct2"):
                out["engines"][e]["info"]["log"] = ct2_backend_lines(workers[e].log_path)
        # OpenBLAS-threaded sgemm rows run in a process of their own: after its turn OpenBLAS's
        # idle threads go on spinning (sched_yield) for seconds, and in the engine's process they
        # took a core from the next timed SwiftBERT turn (two-thread turns 15 % slower, by turn).
        for e in [e for e in engines if e in ("swift-fp32", "swift-fp32-auto")]:
            workers[f"{e}/openblas"] = start_worker(e, model, peer_folder, input_path, swift_binary, logs,
                                                    log_name=f"{e}.openblas-sgemm")
            workers[f"{e}/openblas"].request(op="info")  # loaded before any cell is timed
        monitor = ForeignLoad(workers.values())
        for workload, threads in spec["cells"]:
            if args.cells and f"{workload}:{threads}" not in args.cells and workload not in args.cells:
                continue
            before = wait_for_quiet(monitor, args.wait_quiet) if args.wait_quiet else None
            monitor.reset()
            cell = run_cell(workers, engines, workload, threads, args, sgemm=workload in ("b1x16", "b1x128"))
            cell["foreign_cores"] = monitor.cores()
            cell["foreign_cores_before"] = before
            log(f"    other processes used {cell['foreign_cores']:.2f} cores during the cell")
            cell["stats"] = out["workloads"][workload]
            out["cells"].append(cell)
            save_results(results)
        # Where SwiftBERT's time goes, per stage, at b1x128 with 1 thread (outside the interleaving).
        if not args.cells or any(c.startswith("b1x128") for c in args.cells):
            for e in engines:
                if ENGINES[e][1] == "swift":
                    answer = workers[e].request(op="profile", workload="b1x128", threads=1, calls=5, warmup=1)
                    if "stage_ms" in answer:
                        out.setdefault("profiles", {})[e] = answer["stage_ms"]
            save_results(results)
    finally:
        for w in workers.values():
            w.close()


def torch_reference(peer_folder, workloads):
    """Mean-pooled last hidden states from PyTorch FP32 (eager attention), to check every engine."""
    import numpy as np
    import torch
    import transformers
    model = transformers.BertModel.from_pretrained(peer_folder / "hf-encoder", attn_implementation="eager").eval()
    out = {}
    with torch.inference_mode():
        ids, mask = padded(workloads["b1x128"][0])
        h = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
        m = mask[:, :, None].astype(np.float32)
        out["b1x128"] = ((h * m).sum(1) / m.sum(1)).tolist()
    return out


def agreement(pooled, reference):
    import numpy as np
    a, b = np.array(pooled, dtype=np.float64), np.array(reference, dtype=np.float64)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"cosine": float(cos.min()), "max_abs_diff": float(np.abs(a - b).max())}


def ct2_backend_lines(path):
    try:
        text = pathlib.Path(path).read_text(errors="replace")
    except OSError:
        return []
    lines = []
    for line in text.splitlines():
        m = re.search(r"\[info\]\s+(.*)", line)
        text = m.group(1).strip(" -") if m else ""
        if text and re.search(r"CPU:|ISA|MKL|backend|compute type", text) and text not in lines:
            lines.append(text)
    return lines


def run_cell(workers, engines, workload, threads, args, sgemm):
    """Interleaved turns: each round every engine runs k calls (after a warm-up call when calls are
    short); the order rotates every round; medians over all timed calls."""
    quick = args.quick
    rows = [(e, "run", None) for e in engines]
    if sgemm:
        for e in engines:
            if e in ("swift-fp32", "swift-fp32-auto"):
                rows.append((e, "sgemm", "engine"))
                if threads > 1:
                    rows.append((e, "sgemm", "openblas"))
    load_start = loadavg()
    log(f"  cell {workload} T{threads}: {len(rows)} rows, load {load_start:.2f}")
    samples = {r: [] for r in rows}
    cpu_samples = {r: [] for r in rows}
    errors = {}
    extra = {}
    gap = (0.1 if quick else 0.25) if threads > 1 else 0.0

    # CPU time the idle engines' processes spend during each turn (a thread pool that spins on
    # after its own turn takes a core from the engine being timed).
    idle_cpu = {r: 0.0 for r in rows}
    turn_wall = {r: 0.0 for r in rows}

    def turn(row, calls, warmup):
        engine, op, split = row
        request = {"op": op, "workload": workload, "threads": threads, "calls": calls, "warmup": warmup}
        if split:
            request["split"] = split
        worker = f"{engine}/openblas" if split == "openblas" else engine
        others = [w.process.pid for e, w in workers.items() if e != worker]
        idle0, t0 = process_jiffies(others), time.time()
        answer = workers[worker].request(**request)
        idle_cpu[row] += (process_jiffies(others) - idle0) / os.sysconf("SC_CLK_TCK")
        turn_wall[row] += time.time() - t0
        if gap:
            time.sleep(gap)
        if "error" in answer:
            errors[row] = answer["error"]
            return []
        if op == "sgemm":
            extra[row] = {"linear_flops": answer["linear_flops"], "attention_flops": answer["attention_flops"]}
        return list(zip(answer["ms"], answer.get("cpu_ms", [float("nan")] * len(answer["ms"]))))

    # Calibration: one call each (kept as a sample only when calls are long, > 1 s).
    estimate = {}
    def keep(row, pairs):
        samples[row].extend(w for w, _ in pairs)
        cpu_samples[row].extend(c for _, c in pairs)

    for row in rows:
        pairs = turn(row, 1, 0)
        if pairs:
            estimate[row] = pairs[0][0]
            if pairs[0][0] > 1000:
                keep(row, pairs)
    live = [r for r in rows if r in estimate]
    turn_target = 200 if quick else 500  # ms of timed calls per turn
    calls = {r: max(1, min(40, round(turn_target / max(estimate[r], 1e-3)))) for r in live}
    warmups = {r: 1 if estimate[r] < 300 else 0 for r in live}
    round_ms = sum((calls[r] + warmups[r]) * estimate[r] + gap * 1000 for r in live)
    # Two-thread cells get twice the time: their rows are spaced by the pause after each turn, so
    # the same budget gave 3 rounds, and two rows of the same SwiftBERT code differed by 11 %
    # (docs/history/benchmarks-notebook.md, "Issue 16 on a quiet machine").
    budget = (8 if quick else 30) * 1000 * (2 if threads > 1 else 1)
    min_rounds, max_rounds = (1, 3) if quick else (3, 12)
    rounds = max(min_rounds, min(max_rounds, int(budget // max(round_ms, 1))))
    if all(estimate[r] > 1000 for r in live):
        rounds = max(1, rounds - 1) if not quick else max(0, rounds - 1)
    # A cap on the cell's wall time: when other jobs slow every engine down (or a thread pool
    # thrashes on a shared core), stop after the round that crosses it (at least one round).
    cap = (45 if quick else 200) * 1000
    started = time.time()
    for n in range(rounds):
        if n > 0 and (time.time() - started) * 1000 + round_ms > cap:
            rounds = n
            break
        order = live[n % len(live):] + live[:n % len(live)]
        for row in order:
            keep(row, turn(row, calls[row], warmups[row]))
    cell = {"workload": workload, "threads": threads, "rounds": rounds, "load_start": load_start,
            "load_end": loadavg(), "rows": []}
    for row in rows:
        engine, op, split = row
        ms = samples[row]
        entry = {"engine": engine, "op": op, "split": split, "samples": len(ms), "median_ms": median(ms),
                 "p25_ms": percentile(ms, 25), "p75_ms": percentile(ms, 75), "ms": ms,
                 "median_cpu_ms": median(cpu_samples[row]), "cpu_ms": cpu_samples[row],
                 "idle_engines_cores": idle_cpu[row] / max(turn_wall[row], 1e-9)}
        if row in errors:
            entry["error"] = errors[row]
        entry.update(extra.get(row, {}))
        cell["rows"].append(entry)
    summary = ", ".join(f"{r['engine']}{'/' + r['split'] if r['split'] else ''} {r['median_ms']:.1f}"
                        for r in cell["rows"])
    log(f"    {summary}")
    busy = [f"{r['engine']}{'/' + r['split'] if r['split'] else ''} {r['idle_engines_cores']:.2f}"
            for r in cell["rows"] if r["idle_engines_cores"] >= 0.05]
    if busy:
        log(f"    cores the idle engines used during each engine's turns: {', '.join(busy)}")
    return cell


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def save_results(results):
    path = pathlib.Path(results["path"])
    path.write_text(json.dumps(results, indent=1))


# ---------------------------------------------------------------------------------------------
# Machine and versions


def machine_info():
    cpuinfo = pathlib.Path("/proc/cpuinfo").read_text()
    model = re.search(r"model name\s*:\s*(.*)", cpuinfo)
    flags = set(re.search(r"flags\s*:\s*(.*)", cpuinfo).group(1).split())
    meminfo = pathlib.Path("/proc/meminfo").read_text()
    mem = int(re.search(r"MemTotal:\s*(\d+)", meminfo).group(1)) / 1024 / 1024
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    versions = {}
    for package in ["torch", "transformers", "onnxruntime", "onnx", "openvino", "nncf", "ctranslate2", "numpy"]:
        try:
            from importlib.metadata import version
            versions[package] = version(package)
        except Exception:  # noqa: BLE001
            versions[package] = "?"
    return {"cpu": model.group(1) if model else platform.processor(), "cores": os.cpu_count(),
            "memory_gib": round(mem, 1), "kernel": platform.release(),
            "isa": [f for f in ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16"]
                    if f in flags],
            "swift": swift[0] if swift else "?", "python": platform.python_version(), "versions": versions,
            "commit": commit + ("+local changes" if dirty else ""),
            "env": {k: os.environ.get(k, "(unset)") for k in ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                               "OMP_NUM_THREADS"]}}


def probe_peer_kernels():
    """Which kernels the peers' BLAS libraries pick here, from their own verbose modes."""
    code = r"""
import numpy as np, torch, json, sys, pathlib
torch.set_num_threads(1)
a = torch.randn(128, 384); w = torch.nn.Linear(384, 384)
with torch.inference_mode():
    w(a)
print("TORCH_CAPABILITY", torch.backends.cpu.get_cpu_capability())
"""
    env = dict(os.environ, MKL_VERBOSE="1", ONEDNN_VERBOSE="1")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    text = result.stdout + result.stderr
    found = {}
    m = re.search(r"MKL_VERBOSE (oneMKL[^\n]*?)(?:, Lnx|\n)", text) or re.search(r"MKL_VERBOSE ([^\n]*)", text)
    if m:
        found["torch_mkl"] = m.group(1).strip()
    m = re.search(r"onednn_verbose[^\n]*cpu,isa:([^\n]*)", text)
    if m:
        found["torch_onednn_isa"] = m.group(1).strip()
    m = re.search(r"TORCH_CAPABILITY (\S+)", text)
    if m:
        found["torch_cpu_capability"] = m.group(1)
    ct2 = WORK / "all-MiniLM-L6-v2/ct2-float32"
    if ct2.exists():
        code = f"""
import ctranslate2, numpy as np
e = ctranslate2.Encoder({str(ct2)!r}, device="cpu", compute_type="int8", intra_threads=1)
ids = np.ones((1, 16), np.int32) * 1000
e.forward_batch(ctranslate2.StorageView.from_array(ids), ctranslate2.StorageView.from_array(np.array([16], np.int32)))
"""
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=dict(os.environ, ONEDNN_VERBOSE="1"))
        m = re.search(r"onednn_verbose[^\n]*cpu,isa:([^\n]*)", result.stdout + result.stderr)
        if m:
            found["ct2_onednn_isa"] = m.group(1).strip()
        m = re.search(r"onednn_verbose[^\n]*info,oneDNN (v[\d.]+)", result.stdout + result.stderr)
        if m:
            found["ct2_onednn_version"] = m.group(1)
    return found


# ---------------------------------------------------------------------------------------------
# 6. The report


def cell_key(cell):
    return f"{cell['workload']}:{cell['threads']}"


def cell_title(workload, threads):
    return f"{WORKLOAD_TITLES[workload]} T{threads}"


def is_throughput(workload):
    return workload in ("b32x128", "sentences")


def value(cell, engine, op="run", split=None, clock="wall"):
    """Median ms of a row; clock "cpu": the process CPU time (used for 1-thread cells only)."""
    for r in cell["rows"]:
        if r["engine"] == engine and r["op"] == op and r["split"] == split and r["samples"]:
            v = r["median_ms"] if clock == "wall" else r.get("median_cpu_ms")
            return v if v is not None and v == v else None
    return None


def shown(cell, ms):
    """ms for latency cells, sequences per second for throughput cells."""
    if ms is None:
        return None
    if is_throughput(cell["workload"]):
        return cell["stats"]["sequences"] / (ms / 1000)
    return ms


def fmt(x, digits=None):
    if x is None:
        return "–"
    if digits is None:
        digits = 0 if x >= 100 else 1 if x >= 10 else 2
    return f"{x:,.{digits}f}"


def speedup(cell, engine, peer, clock="wall"):
    """How many times faster `engine` is than `peer` (> 1: faster), from median times."""
    if peer is None:
        return None
    a, b = value(cell, engine, clock=clock), value(cell, peer, clock=clock)
    if a is None or b is None:
        return None
    return b / a


def fastest_peer(cell, engines, precision, clock="wall"):
    peers = [e for e in engines if ENGINES[e][1] != "swift" and ENGINES[e][2] == precision
             and value(cell, e, clock=clock)]
    return min(peers, key=lambda e: value(cell, e, clock=clock)) if peers else None


def sgemm_bound(cell, engine, clock="wall"):
    """(bound ms, sgemm GFLOP/s, split) for a SwiftBERT FP32 configuration, from the same cell."""
    key = "median_ms" if clock == "wall" else "median_cpu_ms"
    best = None
    for r in cell["rows"]:
        if r["engine"] == engine and r["op"] == "sgemm" and r["samples"] and r.get(key) == r.get(key):
            if best is None or r[key] < best[key]:
                best = r
    if not best or best.get(key) is None:
        return None
    total = best["linear_flops"] + best["attention_flops"]
    rate = best["linear_flops"] / (best[key] / 1000)
    return {"bound_ms": total / rate * 1000, "gflops": rate / 1e9, "split": best["split"],
            "total_gflop": total / 1e9, "linear_ms": best[key]}


def render(results):
    m = results["machine"]
    lines = [BEGIN, ""]
    started = results["started"]
    lines += [f"Run of {started} ({'quick' if results['quick'] else 'full'} mode, {results['duration_min']:.1f} min), "
              f"commit {m['commit']}. Regenerate with `python3 tools/bench/compare_engines.py` "
              f"(`--quick` for a shorter run); raw samples: `{results['path_rel']}`.", ""]
    lines += ["### Machine and versions", ""]
    lines += [f"- CPU: {m['cpu']}, {m['cores']} cores visible ({', '.join(m['isa'])}), {m['memory_gib']} GiB, "
              f"Linux {m['kernel']}; shared with other jobs: load average {results['load_range']} during the run.",
              f"- {m['swift']}; Python {m['python']}; "
              + ", ".join(f"{k} {v}" for k, v in m["versions"].items()) + "."]
    env = m["env"]
    info = {}
    for model in results["models"].values():
        for e, d in model["engines"].items():
            info.setdefault(e, d["info"])
    if "swift-fp32" in info:
        i = info["swift-fp32"]
        lines.append(f"- SwiftBERT FP32 as-is: environment OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']}, "
                     f"OPENBLAS_L2_SIZE={env['OPENBLAS_L2_SIZE']} → `{i.get('openblas_config', '?')}`, "
                     f"core **{i.get('openblas_core', '?')}** (AVX2 sgemm kernels).")
    if "swift-fp32-auto" in info:
        i = info["swift-fp32-auto"]
        lines.append(f"- SwiftBERT FP32, OpenBLAS auto: the same binary run with "
                     f"`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` → core **{i.get('openblas_core', '?')}** "
                     f"(AVX-512 sgemm kernels).")
    lines.append("- SwiftBERT INT8 and INT8 weight-only: the environment as-is (their Linear layers are SwiftBERT's own "
                 "kernels; only the attention products go through OpenBLAS).")
    probe = results.get("probe", {})
    peers = []
    if "torch-fp32" in info:
        i = info["torch-fp32"]
        peers.append(f"PyTorch {i.get('version')}: BLAS {i.get('blas')} (oneMKL {i.get('mkl')}), oneDNN "
                     f"{i.get('onednn')}, CPU capability {i.get('cpu_capability')}, attention `{i.get('attention')}`"
                     + (f"; MKL_VERBOSE reports `{probe['torch_mkl']}`: the generic label, where on an Intel "
                        f"CPU it names the AVX-512 path it takes; torch.nn.Linear runs oneMKL sgemm"
                        if "torch_mkl" in probe else ""))
    if "ort-fp32" in info:
        i = info["ort-fp32"]
        fusions = next((mm.get("export", {}).get("onnx_fusions") for mm in results["models"].values()
                        if mm.get("export")), None)
        peers.append(f"ONNX Runtime {i.get('version')}, CPUExecutionProvider (MLAS picks its kernels from the CPUID "
                     f"feature bits; AVX-512 and AVX512-VNNI are present), graph exported with torch.onnx (TorchScript exporter, opset 17), "
                     f"fused by onnxruntime.transformers.optimizer"
                     + (f" ({', '.join(f'{k} {v}' for k, v in fusions.items())})" if fusions else "")
                     + "; INT8: quantize_dynamic (QInt8 weights, per-tensor dynamic u8 activations) of the fused graph")
    openvino = [e for e in ("ov-fp32", "ov-bf16", "ov-int8") if e in info]
    if openvino:
        i = info[openvino[0]]
        quantized = next((mm["export"]["openvino_int8"] for mm in results["models"].values()
                          if mm.get("export", {}).get("openvino_int8")), None)
        nncf = (f"; INT8: NNCF {m['versions'].get('nncf', '?')} static post-training quantisation of that graph "
                f"(`nncf.quantize`, ModelType.TRANSFORMER, {quantized['calibration_sentences']} corpus sentences as "
                f"calibration set, {quantized['fake_quantize']} FakeQuantize nodes), run with the f32 hint so its INT8 "
                f"layers run INT8 and the rest FP32" if quantized else "")
        kernels = "; ".join(f"{ENGINES[e][0]}: {ov_kernels_text(info[e]['kernels'])}" for e in openvino
                            if info[e].get("kernels"))
        peers.append(f"OpenVINO {m['versions'].get('openvino') or i.get('version')}, CPU plugin (capabilities {', '.join(i.get('capabilities', []))}), "
                     f"reading ONNX Runtime's FP32 graph `{i.get('model')}` as it is (its ONNX frontend takes the "
                     f"com.microsoft fusions); batch and sequence dynamic, one compiled model per thread count with "
                     f"PERFORMANCE_HINT LATENCY, NUM_STREAMS 1, INFERENCE_NUM_THREADS T and INFERENCE_PRECISION_HINT "
                     f"f32 (FP32, INT8) or bf16 (BF16){nncf}. Kernels of its runtime model after a b1x128 call with 1 "
                     f"thread (layer type, primitiveType, runtimePrecision × count; Subgraph is OpenVINO's Snippets: "
                     f"the fused attention and element-wise chains): {kernels}")
    if "ct2-fp32" in info:
        i = info["ct2-fp32"]
        log_lines = "; ".join(i.get("log", [])) or "?"
        isa = f"; oneDNN {probe.get('ct2_onednn_version', '')} runs `{probe['ct2_onednn_isa']}`" \
            if "ct2_onednn_isa" in probe else ""
        peers.append(f"CTranslate2 {i.get('version')}, models from its transformers converter "
                     f"(quantization none / int8), compute_type float32 / int8. It reports: {log_lines}{isa}")
    lines += [f"- {p}." for p in peers]
    lines.append("- Peers ran with the environment as-is; OPENBLAS_* does not reach them (none calls OpenBLAS in the "
                 "timed path). Each engine had `T` threads for its intra-op work (SwiftBERT `threads`, "
                 "torch.set_num_threads, ORT intra_op_num_threads, OpenVINO INFERENCE_NUM_THREADS with 1 stream, "
                 "CT2 intra_threads) and 1 inter-op thread.")
    lines.append("")
    lines += ["### How it was measured", "",
              "- Engine call only: `BertModel.encode` (ids in, last hidden state out); `model(**inputs)` under "
              "`torch.inference_mode()`; `InferenceSession.run`; OpenVINO's `InferRequest.infer` (inputs and "
              "output shared, not copied); `Encoder.forward_batch` on a ready StorageView. "
              "Inputs are prepared before the clock starts; each worker times its own calls (wall clock), so "
              "process boundaries cost nothing.",
              "- Identical token ids for every engine: one JSON file per model. Synthetic cells (b1x16, b1x128, "
              "b32x128) are windows of the tokenised corpus framed by [CLS]/[SEP], no padding. The sentence cell "
              "is 1,000 real license and copyright lines from /usr/share (20–142 characters), longest first, "
              "batches of 32 padded to their longest member, as sentence-transformers does: PyTorch, ONNX "
              "Runtime and OpenVINO receive the padded tensors and the attention mask; CTranslate2 receives the padded ids and "
              "the lengths; SwiftBERT takes the same sequences unpadded (its API has no padding: it packs the "
              "batch).",
              "- Interleaved: in every cell each engine runs a turn of calls in a rotating order (A B C …, "
              "B C … A, …) so drift on this shared machine hits all alike; a warm-up call starts each turn when "
              "calls are short; with 2 threads the harness waits a moment after each turn so no spinning pool "
              "of the previous engine competes. Figures are medians over all timed calls of the cell.",
              ""]
    for key, model in results["models"].items():
        lines += render_model(model)
    lines += render_targets(results)
    lines += ["![SwiftBERT and the peers, speed relative to the fastest peer of the same precision]"
              "(benchmarks-chart.svg)", "", END]
    return "\n".join(lines)


def render_model(model):
    cells = model["cells"]
    engines = list(model["engines"])
    out = [f"### {model['title']}", ""]
    if not cells:
        return out + ["(not run)", ""]
    stats = model["workloads"]
    desc = []
    for name, s in stats.items():
        if name == "sentences":
            desc.append(f"sentences: {s['sequences']} lines in {s['batches']} batches, {s['tokens']:,} tokens "
                        f"({s['padded_tokens']:,} with padding), {s['min_len']}–{s['max_len']} tokens each")
    head = "| engine | " + " | ".join(cell_title(c["workload"], c["threads"]) for c in cells) + " |"
    out += ["Median ms (lower is better) for b1 cells, sequences per second (higher is better) otherwise."
            + (" " + "; ".join(desc) + "." if desc else ""), "", head,
            "|---|" + "--:|" * len(cells)]
    for e in engines:
        row = [fmt(shown(c, value(c, e))) for c in cells]
        out.append(f"| {model['engines'][e]['label']} | " + " | ".join(row) + " |")
    if any("foreign_cores" in c for c in cells):
        out.append("| *other processes on the machine, cores busy* | "
                   + " | ".join(f"*{c['foreign_cores']:.2f}*" if "foreign_cores" in c else "–" for c in cells) + " |")
    out.append("")
    single = [c for c in cells if c["threads"] == 1 and any(r.get("median_cpu_ms") for r in c["rows"])]
    if single:
        out += ["The 1-thread cells again, from each process's CPU time instead of the wall clock (the time an "
                "engine waited for a core while other jobs ran left out):", "",
                "| engine | " + " | ".join(cell_title(c["workload"], c["threads"]) + ", CPU" for c in single) + " |",
                "|---|" + "--:|" * len(single)]
        for e in engines:
            out.append(f"| {model['engines'][e]['label']} | "
                       + " | ".join(fmt(shown(c, value(c, e, clock="cpu"))) for c in single) + " |")
        out.append("")
    # Ratios: SwiftBERT configurations against every peer of the same precision.
    out += ["Speed ratio, SwiftBERT ÷ peer (> 1: SwiftBERT faster; from the medians above):", "",
            "| SwiftBERT | peer | " + " | ".join(cell_title(c["workload"], c["threads"]) for c in cells) + " |",
            "|---|---|" + "--:|" * len(cells)]
    for swift, precision in TARGETS:
        if swift not in model["engines"]:
            continue
        for peer in engines:
            if ENGINES[peer][1] == "swift" or ENGINES[peer][2] != precision:
                continue
            row = [fmt(speedup(c, swift, peer), 2) for c in cells]
            out.append(f"| {model['engines'][swift]['label']} | {model['engines'][peer]['label']} | "
                       + " | ".join(row) + " |")
    out.append("")
    # sgemm bound at b1x128.
    bound_rows = []
    for c in cells:
        for e in ("swift-fp32", "swift-fp32-auto"):
            b = sgemm_bound(c, e)
            if not b:
                continue
            ms = value(c, e)
            split = "engine's column split" if b["split"] == "engine" else "OpenBLAS threads"
            if c["threads"] == 1:
                split = "1 thread"
            bound_rows.append(f"| {model['engines'][e]['label']} | {c['workload']} T{c['threads']} | {b['total_gflop']:.2f} | "
                              f"{b['gflops']:.0f} ({split}) | {b['bound_ms']:.1f} | {fmt(ms)} | "
                              f"{ms / b['bound_ms']:.2f}x |")
    if bound_rows:
        out += ["sgemm bound: FLOPs of the forward pass (Linear layers + attention products) over the "
                "sgemm rate that SwiftBERTBenchmarks measured in the same cell, in the same process configuration, "
                "at the model's Linear shapes (M = the cell's tokens; every layer its own weights; the faster of the "
                "engine's column split and OpenBLAS's own threading). The target applies to b1x128; b1x16 is shown "
                "for reference:", "",
                "| configuration | cell | GFLOP | sgemm GFLOP/s | bound ms | SwiftBERT ms | SwiftBERT ÷ bound |",
                "|---|--:|--:|--:|--:|--:|--:|", *bound_rows, ""]
    profiles = model.get("profiles", {})
    if profiles:
        stages = ["embeddings", "qkv", "attention", "attention output", "feed-forward in + GELU", "feed-forward out",
                  "residual + LayerNorm"]
        cols = [e for e in engines if e in profiles]
        out += ["Where SwiftBERT's time goes at b1x128, 1 thread (`StageProfile`: wall ms per call, mean of 5 calls "
                "run after the cells, outside the interleaving, so on a loaded machine the totals run above the "
                "medians above; read the shares, in parentheses):", "",
                "| stage | " + " | ".join(model["engines"][e]["label"] for e in cols) + " |",
                "|---|" + "--:|" * len(cols)]
        for stage in stages:
            cells_text = []
            for e in cols:
                total = sum(profiles[e].values()) or 1
                v = profiles[e].get(stage, 0)
                cells_text.append(f"{v:.1f} ({100 * v / total:.0f} %)")
            out.append(f"| {stage} | " + " | ".join(cells_text) + " |")
        out.append("| total | " + " | ".join(f"{sum(profiles[e].values()):.1f}" for e in cols) + " |")
        out.append("")
    agree = model.get("agreement", {})
    if agree:
        out += ["Same computation check (b1x128, mean-pooled last hidden state against PyTorch FP32 eager): "
                + "; ".join(f"{model['engines'][e]['label']} cosine {a['cosine']:.5f}" for e, a in agree.items())
                + ".", ""]
    return out


def render_targets(results):
    out = ["### Targets", "",
           "| model | cell | target | SwiftBERT | fastest peer | time ratio | met | time ratio, CPU time |",
           "|---|---|---|---|---|--:|:-:|--:|"]
    for model in results["models"].values():
        engines = list(model["engines"])
        for c in model["cells"]:
            single = c["threads"] == 1
            for swift, precision in TARGETS:
                if swift not in engines:
                    continue
                peer = fastest_peer(c, engines, precision)
                if not peer or not value(c, swift):
                    continue
                r = 1 / speedup(c, swift, peer)
                cpu_speedup = speedup(c, swift, fastest_peer(c, engines, precision, "cpu"), "cpu") if single else None
                cpu = 1 / cpu_speedup if cpu_speedup else None
                out.append(f"| {model['name']} | {cell_title(c['workload'], c['threads'])} | "
                           f"{PRECISION_TITLES[precision]} ≤ {TARGET_TIME_RATIO:g} × fastest peer | "
                           f"{model['engines'][swift]['label']} {fmt(shown(c, value(c, swift)))} | "
                           f"{model['engines'][peer]['label']} {fmt(shown(c, value(c, peer)))} | "
                           f"{r:.2f} | {'yes' if r <= TARGET_TIME_RATIO else '**no**'} | {fmt(cpu, 2)} |")
            if c["workload"] == "b1x128":
                for e in ("swift-fp32", "swift-fp32-auto"):
                    b = sgemm_bound(c, e)
                    ms = value(c, e)
                    if b and ms:
                        bc = sgemm_bound(c, e, "cpu") if single else None
                        mc = value(c, e, clock="cpu") if single else None
                        cpu = mc / bc["bound_ms"] if bc and mc else None
                        out.append(f"| {model['name']} | {cell_title(c['workload'], c['threads'])} | "
                                   f"FP32 ≤ 1.1 × sgemm bound | {model['engines'][e]['label']} {fmt(ms)} | "
                                   f"bound {b['bound_ms']:.1f} | {ms / b['bound_ms']:.2f}x | "
                                   f"{'yes' if ms <= 1.1 * b['bound_ms'] else '**no**'} | "
                                   f"{fmt(cpu, 2) + 'x' if cpu else '–'} |")
    out += ["", f"Time ratio: SwiftBERT's time over the fastest peer's of the same precision in the same cell, from "
            f"wall-clock medians (for throughput cells, the peer's sequences per second over SwiftBERT's). The target "
            f"(issue 28) is a time ratio ≤ {TARGET_TIME_RATIO:.2f}, SwiftBERT at least {1 / TARGET_TIME_RATIO:.2f}× as "
            f"fast: FP32 against the fastest FP32 peer (ONNX Runtime, OpenVINO, CTranslate2, and PyTorch where it "
            f"ran), BF16 against OpenVINO BF16, INT8 against the fastest INT8 peer (ONNX Runtime, OpenVINO, "
            f"CTranslate2). For the sgemm bound, SwiftBERT's time over the bound (≤ 1.10x meets it). *Time ratio, "
            f"CPU time*: the same from the medians of each process's CPU time, for 1-thread cells only: it leaves "
            f"out the time an engine waited for a core while other jobs ran, so it is the steadier figure on a "
            f"loaded machine (the fastest peer may differ).", ""]
    return out


COLORS = {"swift-fp32": "#d62728", "swift-fp32-auto": "#ff9896", "swift-bf16": "#d62728", "swift-int8": "#d62728",
          "swift-int8w": "#ff9896", "swift-int8-auto": "#e377c2", "torch-fp32": "#7f7f7f", "ort-fp32": "#1f77b4",
          "ort-int8": "#1f77b4", "ov-fp32": "#9467bd", "ov-bf16": "#9467bd", "ov-int8": "#9467bd",
          "ct2-fp32": "#2ca02c", "ct2-int8": "#2ca02c"}


def ov_kernels_text(kernels):
    """{"FullyConnected": {"brgemm_avx512_I8 u8": 23, ...}, ...} -> "FullyConnected brgemm_avx512_I8 u8 ×23, ..."."""
    return ", ".join(f"{layer} {kernel} ×{n}" for layer in OV_KERNEL_LAYERS for kernel, n in
                     sorted(kernels.get(layer, {}).items(), key=lambda kv: -kv[1]))


def render_chart(results):
    """Hand-written SVG: per model and precision, each engine's speed relative to the fastest peer."""
    panels = []
    for model in results["models"].values():
        if not model["cells"]:
            continue
        for precision in PRECISION_TITLES:
            engines = [e for e in model["engines"] if ENGINES[e][2] == precision]
            if any(ENGINES[e][1] != "swift" for e in engines):  # no peer of that precision: nothing to compare
                panels.append((model, precision, engines))
    width, panel_h, left, top = 1000, 300, 60, 56
    height = top + len(panels) * (panel_h + 70) + 20
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">'
           f'Speed relative to the fastest peer of the same precision (higher is better; 1 = that peer)</text>',
           f'<text x="{width / 2}" y="38" text-anchor="middle" fill="#555">wall-clock medians, run of '
           f'{esc(results["started"])} on {esc(results["machine"]["cpu"])} ({results["machine"]["cores"]} cores), '
           f'tools/bench/compare_engines.py; numbers in docs/benchmarks.md</text>']
    for p, (model, precision, engines) in enumerate(panels):
        y0 = top + p * (panel_h + 70) + 20
        cells = model["cells"]
        ratios = {}
        for c in cells:
            best = fastest_peer(c, list(model["engines"]), precision)
            for e in engines:
                ratios[(cell_key(c), e)] = speedup(c, e, best) if best else None
        ymax = max([1.5] + [r for r in ratios.values() if r]) * 1.1
        plot_w = width - left - 20
        svg.append(f'<text x="{left}" y="{y0 - 6}" font-size="14" font-weight="bold">{esc(model["name"])}, '
                   f'{PRECISION_TITLES[precision]}</text>')
        for tick in [0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6]:
            if tick > ymax:
                break
            y = y0 + panel_h - tick / ymax * panel_h
            style = 'stroke="#000" stroke-width="1.5" stroke-dasharray="6 3"' if tick == 1 else 'stroke="#ddd"'
            svg.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" {style}/>')
            svg.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}×</text>')
        target = 1 / TARGET_TIME_RATIO  # the target as a speed: SwiftBERT's bars should reach it
        y = y0 + panel_h - target / ymax * panel_h
        svg.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d62728" '
                   f'stroke-width="1" stroke-dasharray="2 3"/>')
        svg.append(f'<text x="{left + plot_w}" y="{y - 3:.1f}" text-anchor="end" font-size="10" fill="#d62728">'
                   f'target {target:.2f}×</text>')
        group_w = plot_w / len(cells)
        bar_w = min(18, (group_w - 16) / max(1, len(engines)))
        for i, c in enumerate(cells):
            gx = left + i * group_w + (group_w - bar_w * len(engines)) / 2
            for j, e in enumerate(engines):
                r = ratios.get((cell_key(c), e))
                if not r:
                    continue
                h = r / ymax * panel_h
                x = gx + j * bar_w
                color = COLORS.get(e, "#999")
                hatch = ' fill-opacity="0.55"' if e in ("swift-fp32-auto", "swift-int8w") else ""
                svg.append(f'<rect x="{x:.1f}" y="{y0 + panel_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                           f'fill="{color}"{hatch}><title>{esc(model["engines"][e]["label"])}: {r:.2f}×</title></rect>')
                if ENGINES[e][1] == "swift":
                    svg.append(f'<text x="{x + bar_w / 2 - 1:.1f}" y="{y0 + panel_h - h - 3:.1f}" font-size="9" '
                               f'text-anchor="middle">{r:.2f}</text>')
            short = {"sentences": "1,000 sentences"}.get(c["workload"], c["workload"])
            svg.append(f'<text x="{left + i * group_w + group_w / 2:.1f}" y="{y0 + panel_h + 16:.1f}" '
                       f'text-anchor="middle">{esc(short)} T{c["threads"]}</text>')
        # Legend.
        lx = left
        for e in engines:
            label = model["engines"][e]["label"]
            hatch = ' fill-opacity="0.55"' if e in ("swift-fp32-auto", "swift-int8w") else ""
            svg.append(f'<rect x="{lx}" y="{y0 + panel_h + 28}" width="12" height="12" fill="{COLORS.get(e, "#999")}"'
                       f'{hatch}/>')
            svg.append(f'<text x="{lx + 16}" y="{y0 + panel_h + 38}">{esc(label)}</text>')
            lx += 30 + 7 * len(label)
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_docs(results):
    body = render(results)
    if DOC.exists() and BEGIN in DOC.read_text() and END in DOC.read_text():
        text = DOC.read_text()
        text = text[:text.index(BEGIN)] + body + text[text.index(END) + len(END):]
    else:
        text = ("# SwiftBERT against ONNX Runtime, OpenVINO, CTranslate2 and PyTorch\n\n"
                "Measured by `tools/bench/compare_engines.py`; everything between the GENERATED markers is its output.\n\n"
                + body + "\n")
    DOC.write_text(text)
    CHART.write_text(render_chart(results))
    log(f"wrote {DOC.relative_to(ROOT)} and {CHART.relative_to(ROOT)}")


# ---------------------------------------------------------------------------------------------


def quiet():
    """Keep the libraries' advice off the terminal (and out of the workers' logs)."""
    import warnings
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TQDM_DISABLE", "1")  # the weight-loading progress bars
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def main():
    quiet()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions: a few minutes, noisier")
    parser.add_argument("--models", default="minilm,bert-base", help="minilm,bert-base")
    has_amx = " amx_tile" in pathlib.Path("/proc/cpuinfo").read_text()
    parser.add_argument("--engines", default=",".join(e for e in ENGINES if e != "swift-int8-auto"
                                                      and (has_amx or not e.endswith("-vector"))),
                        help="comma-separated engine ids: " + ", ".join(ENGINES))
    parser.add_argument("--cells", default="", help="only these cells, e.g. b1x128:1,sentences")
    parser.add_argument("--venv", default=str(DEFAULT_VENV), help="virtual environment for the peers (made if missing)")
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                        help="before each cell, wait up to SECONDS for other processes to leave the CPUs idle")
    parser.add_argument("--no-build", action="store_true", help="use the existing release SwiftBERTBenchmarks")
    parser.add_argument("--swift-binary", metavar="PATH",
                        help="use this SwiftBERTBenchmarks and the `bert` beside it (to convert and quantize the "
                             "models); no Swift build")
    parser.add_argument("--no-docs", action="store_true", help="write the results JSON only")
    parser.add_argument("--render", metavar="RESULTS_JSON", help="only rewrite the docs from a saved run")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        return worker_main(args)
    if args.render:
        results = json.loads(pathlib.Path(args.render).read_text())
        write_docs(results)
        return
    venv = pathlib.Path(args.venv)
    if not in_venv(venv):
        python = ensure_venv(venv)
        os.execv(str(python), [str(python), str(pathlib.Path(__file__).resolve()), *sys.argv[1:]])

    args.engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown:
        sys.exit(f"unknown engine(s) {unknown}; choose from {list(ENGINES)}")
    args.cells = [c for c in args.cells.split(",") if c]
    keys = [k for k in args.models.split(",") if k]
    for k in keys:
        if k not in MODELS:
            sys.exit(f"unknown model {k}; choose from {list(MODELS)}")
    start = time.time()
    WORK.mkdir(parents=True, exist_ok=True)

    def build(product):
        if args.swift_binary:
            binary = pathlib.Path(args.swift_binary).resolve()
            path = binary if product == "SwiftBERTBenchmarks" else binary.parent / product
            if not path.exists():
                sys.exit(f"{path} is missing (--swift-binary takes the `{product}` beside SwiftBERTBenchmarks)")
            return path
        if args.no_build:
            path = ROOT / ".build/release" / product
            if not path.exists():
                sys.exit(f"{path} is missing; run without --no-build")
            return path
        return swift_build(product)

    lines = corpus_lines()
    swift_binary = ensure_swift_models([MODELS[k]["name"] for k in keys], build, ov_calibration(lines))
    (WORK / "sentences.txt").write_text("\n".join(lines) + "\n")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = WORK / f"results-{stamp}.json"
    results = {"started": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "quick": args.quick,
               "path": str(path), "path_rel": str(path.relative_to(ROOT)), "machine": machine_info(),
               "corpus_sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16], "models": {}}
    for k in keys:
        run_model(k, args, swift_binary, lines, results)
    results["probe"] = probe_peer_kernels()
    loads = [c[f] for m in results["models"].values() for c in m["cells"] for f in ("load_start", "load_end")]
    results["load_range"] = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?"
    results["duration_min"] = (time.time() - start) / 60
    save_results(results)
    log(f"results in {path} ({results['duration_min']:.1f} min)")
    if not args.no_docs:
        write_docs(results)


if __name__ == "__main__":
    main()
