#!/usr/bin/env python3
"""SwiftBERT against ONNX Runtime on MPNet, NomicBERT, GTE, ModernBERT and DeBERTa-v3 at real size, up to 8,192 tokens.

RANDOM weights (MPNet aside): honest for timing only. Speed depends on the shapes, not on the
values, so the figures are fair; the outputs are meaningless. Every table this prints says so.

    tools/.venv/bin/python tools/bench/bench_modern_encoders.py make [--models nomic,gte]
    tools/.venv/bin/python tools/bench/bench_modern_encoders.py bench [--rounds 3] [--threads 1,2] [--out FILE]
    tools/.venv/bin/python tools/bench/bench_modern_encoders.py bench --quick     # 128 and 512 tokens, one round

The models (`--models` takes the short names, comma-separated):
    mpnet       all-mpnet-base-v2 itself, REAL weights (weights/all-mpnet-base-v2, converted by the
                set-up; its HF folder weights/.cache/hf/all-mpnet-base-v2 is what ONNX exports).
                514 positions: 128 and 512 tokens only.
    nomic       nomic-embed-text-v1.5's shape: transformers.NomicBertModel, hidden 768, 12 layers,
                12 heads, intermediate 3072 (SwiGLU: silu), vocab 30,528, 8,192 positions, rope theta 1000.
    gte         gte-base-en-v1.5's shape: transformers.GteModel, the same sizes, gelu (gated, as the
                real one), one token type, rope theta 500,000. The real checkpoint's rope_scaling is
                LEFT OUT: SwiftBERT refuses rope_scaling (default RoPE only), and the timing is the same.
    modernbert  ModernBERT-base: transformers.ModernBertConfig() defaults (hidden 768, 22 layers,
                intermediate 1152 (GeGLU), local attention 128 with a global layer every 3rd, vocab
                50,368, 8,192 positions).
    gemma       EmbeddingGemma-300M itself, REAL weights (Gemma terms of use; 1.2 GB, not in the default
                set-up): `SWIFTBERT_HOME=$PWD bert pull embeddinggemma-300m --keep-source` writes
                weights/embeddinggemma-300m and the HF folder weights/.cache/hf/embeddinggemma-300m that
                ONNX exports (transformers.Gemma3TextModel, bidirectional, the encoder only: the
                sentence-transformers Dense modules after it are not in the graph, nor timed by `bert bench`).
    deberta     deberta-v3-base's shape: transformers.DebertaV2Model, hidden 768, 12 layers, 12 heads,
                intermediate 3072, vocab 128,100, disentangled attention (c2p and p2c, shared position
                keys, 256 log buckets, normalised relative embeddings), no absolute positions, no token
                types. SwiftBERT takes up to 4,096 tokens (the [n x n] score bias per head): 128 to 2,048.
    qwen3       Qwen3-Embedding-0.6B's shape: transformers.Qwen3Model, hidden 1024, 28 layers, 16 query and
                8 key/value heads of 128, intermediate 3072 (SwiGLU), vocab 151,669, causal; 128 to 2,048.

make: for the random models, transformers' own class with torch.manual_seed(0), save_pretrained in
float32 safetensors to weights/<name>-random-hf/ (gitignored, ~0.55-0.6 GB each) with the XLM-R
Unigram fixture as tokenizer.json (6,002 entries; the model's vocab stays full size, so the
embedding tables and files are the real ones'). Then `bert convert` -> weights/<name>-random/ and
`bert quantize` (INT8 is written but not timed here). ONNX: torch.onnx.export (TorchScript
exporter, dynamo=False, eager attention, opset 17, dynamic batch and sequence axes, inputs
input_ids and attention_mask; the token types the models have are left at their zero default,
as SwiftBERT runs them), traced on 300 tokens (more than two ModernBERT windows) ->
weights/<name>-random-onnx/model.onnx, then checked against torch on 2 x 77 and 1 x 700 tokens
(1 x 300 for MPNet). ORT's transformers optimizer (model_type bert) is tried as well; its graph is
kept as model.opt.onnx, and timed as a second ORT column, only if it passes the same check. A
model whose export fails is reported and the others go on. Needs onnx and onnxruntime in
tools/.venv (`tools/venv.sh reference` installs them); without them make still writes and converts
the checkpoints and says what it skipped.

bench: for each model, each thread count (--threads, default 1,2) and each length (128, 512,
2048, 8192 tokens at batch 1; --lengths to change), --rounds rounds (default 3) in which the
engines take turns, the first one alternating between rounds:
  - SwiftBERT FP32: `bert bench --precision fp32 --batch 1 --seq N --threads T --repetitions P
    --json` in a fresh process (it loads the model, warms up on 16 tokens, times P passes and
    reports their median), under /usr/bin/time -v for its peak RSS ("Maximum resident set size").
  - ONNX Runtime FP32: intra_op_num_threads T, inter_op_num_threads 1, ORT_SEQUENTIAL,
    ORT_ENABLE_ALL; P passes on the same token ids ([CLS], then (1000 + 7919 i) mod vocab as
    `bert bench` makes them, then [SEP]), median. Below 2,048 tokens one session per thread count,
    warmed up at the length; from 2,048 tokens a fresh session each round, warmed up on 16 tokens
    only, as `bert bench`'s fresh process is.
P is --passes (default 3) below 2,048 tokens and --long-passes (default 1) from 2,048 on: an
8,192-token pass can take a minute or more (the eager ONNX graph's attention alone holds
12 x 8192 x 8192 floats, 3.2 GB, per layer; ORT may want several such buffers, so leave ~10 GB free). Each cell reports the median over the rounds of
the per-round medians, SwiftBERT / ORT, and the 1-minute load average before and after the cell.
The memory table gives SwiftBERT's peak RSS at the longest length run (8,192 normally) beside the
FP32 weights file and an estimate of one layer's activations: T x (3H + 2F + F + 3H) floats for
the gated models (QKV, the gated up-projection, its product, attention output, residual, norm),
T x (3H + F + 2H) for MPNet.

The bert binary is copied to a temporary folder at the start (with a check that it runs), so a
rebuild of .build/release/bert during the run does not change the binary under test; if it is
missing or being written, the script waits and retries for up to ten minutes.

A full run on a 2-core machine takes an hour or more (8,192 tokens dominates); --quick about a minute.
"""
import argparse
import datetime
import hashlib
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
WEIGHTS = ROOT / "weights"
TOKENIZER = ROOT / "Tests/SwiftBERTTests/Fixtures/multilingual/xlmr-unigram/tokenizer.json"
BERT = ROOT / ".build/release/bert"
LENGTHS = (128, 512, 2048, 8192)
LONG = 2048            # from this length on: --long-passes, and a fresh ORT session per round
TRACE_TOKENS = 300     # the export's example input: more than two ModernBERT windows (2 x 128)
BANNER = "random weights: honest for timing only"
OPENBLAS = set()       # the kernels OpenBLAS chose in the `bert bench` runs, as their JSON reports them
SIZES = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)


def nomic_config():
    import transformers
    return transformers.NomicBertConfig(**SIZES, vocab_size=30528, max_position_embeddings=8192, type_vocab_size=2,
                                        hidden_act="silu", rope_parameters={"rope_type": "default", "rope_theta": 1000.0})


def gte_config():
    import transformers
    # gte-base-en-v1.5 itself has type_vocab_size 0 (1 here: one all-zero-id row, which is what SwiftBERT's
    # converter makes of 0 too) and rope_scaling, which SwiftBERT refuses: left out (default RoPE).
    return transformers.GteConfig(**SIZES, vocab_size=30528, max_position_embeddings=8192, type_vocab_size=1,
                                  hidden_act="gelu", rope_parameters={"rope_type": "default", "rope_theta": 500000.0})


def modernbert_config():
    import transformers
    return transformers.ModernBertConfig()


def qwen3_config():
    import transformers
    return transformers.Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                                    num_key_value_heads=8, head_dim=128, max_position_embeddings=32768, rope_theta=1_000_000.0,
                                    rms_norm_eps=1e-6, vocab_size=151669, tie_word_embeddings=True)


def deberta_config():
    import transformers
    return transformers.DebertaV2Config(**SIZES, vocab_size=128100, max_position_embeddings=512, type_vocab_size=0,
                                        relative_attention=True, pos_att_type=["p2c", "c2p"], share_att_key=True,
                                        position_biased_input=False, norm_rel_ebd="layer_norm", position_buckets=256,
                                        max_relative_positions=-1, layer_norm_eps=1e-7, hidden_act="gelu")


class Model:
    def __init__(self, key, name, class_name, lengths=LENGTHS, gated=True, make_config=None, real=False,
                 hf=None, converted=None, onnx=None, export_masks=None):
        self.key, self.name, self.class_name, self.lengths, self.gated = key, name, class_name, lengths, gated
        # (config, attention_mask) -> the masks the model takes, where its own cannot be traced.
        self.export_masks = export_masks
        self.make_config, self.real = make_config, real
        self.hf = hf or WEIGHTS / f"{name}-random-hf"
        self.converted = converted or WEIGHTS / f"{name}-random"
        self.onnx = onnx or WEIGHTS / f"{name}-random-onnx"

    @property
    def label(self):
        return f"{self.name} (REAL weights)" if self.real else f"{self.name}-random"


MODELS = {m.key: m for m in [
    Model("mpnet", "all-mpnet-base-v2", "MPNetModel", lengths=(128, 512), gated=False, real=True,
          hf=WEIGHTS / ".cache/hf/all-mpnet-base-v2", converted=WEIGHTS / "all-mpnet-base-v2",
          onnx=WEIGHTS / "all-mpnet-base-v2-onnx"),
    Model("nomic", "nomic-embed-text-v1.5", "NomicBertModel", make_config=nomic_config),
    Model("gte", "gte-base-en-v1.5", "GteModel", make_config=gte_config),
    Model("modernbert", "modernbert-base", "ModernBertModel", make_config=modernbert_config),
    Model("deberta", "deberta-v3-base", "DebertaV2Model", lengths=(128, 512, 2048), gated=False, make_config=deberta_config),
    Model("qwen3", "qwen3-embedding-0.6b", "Qwen3Model", lengths=(128, 512, 2048), make_config=qwen3_config),
    Model("gemma", "embeddinggemma-300m", "Gemma3TextModel", lengths=(128, 512, 2048), real=True,
          hf=WEIGHTS / ".cache/hf/embeddinggemma-300m", converted=WEIGHTS / "embeddinggemma-300m",
          onnx=WEIGHTS / "embeddinggemma-300m-onnx", export_masks=lambda config, mask: gemma_masks(config, mask)),
]}


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The bert binary: a private copy, so that a rebuild during the run changes nothing.

def snapshot_bert(source, folder, wait_seconds=600):
    """Copies `source` into `folder` once it exists and runs (`--help`); retries while it is being rebuilt."""
    deadline = time.time() + wait_seconds
    target = pathlib.Path(folder) / "bert"
    while True:
        try:
            shutil.copy2(source, target)
            check = subprocess.run([str(target), "--help"], capture_output=True, text=True, timeout=60)
            if check.returncode == 0:
                digest = hashlib.sha256(target.read_bytes()).hexdigest()[:12]
                built = datetime.datetime.fromtimestamp(pathlib.Path(source).stat().st_mtime).strftime("%Y-%m-%d %H:%M")
                return target, f"{source} built {built}, sha256 {digest}"
            reason = f"exit {check.returncode}: {check.stderr.strip()[:200]}"
        except (OSError, subprocess.SubprocessError) as error:  # missing, "Text file busy", half written
            reason = str(error)
        if time.time() > deadline:
            sys.exit(f"{source} did not become usable within {wait_seconds} s ({reason}); build it: make bert")
        log(f"waiting for {source} ({reason}); retrying in 15 s")
        time.sleep(15)


def run(*command):
    log("+ " + " ".join(map(str, command)))
    subprocess.run(list(map(str, command)), check=True, stdout=sys.stderr)


# ---------------------------------------------------------------------------------------------
# make

def make(models, bert):
    failures = {}
    for model in models:
        log(f"\n== {model.label}")
        try:
            make_checkpoint(model, bert)
        except Exception as error:  # noqa: BLE001 - report and go on with the other models
            failures[model.key] = f"checkpoint: {type(error).__name__}: {error}"
            log(f"FAILED {model.label}: {failures[model.key]}")
            continue
        try:
            export_onnx(model)
        except Exception as error:  # noqa: BLE001
            failures[model.key] = f"ONNX export: {type(error).__name__}: {str(error)[:500]}"
            log(f"FAILED ONNX export of {model.label}: {failures[model.key]}")
    print("\nmake: " + ("all done" if not failures else "failures:"))
    for key, reason in failures.items():
        print(f"  {key}: {reason}")
    return 1 if failures else 0


def make_checkpoint(model, bert):
    if model.real:
        pull = f"SWIFTBERT_HOME={ROOT} {bert} pull {model.name} --keep-source"
        if not (model.converted / "model.safetensors").exists():
            raise FileNotFoundError(f"{model.converted} is missing: `{pull}` pulls it")
        if not (model.hf / "model.safetensors").exists():
            raise FileNotFoundError(f"{model.hf} (the HF checkpoint ONNX exports) is missing: `{pull}`")
        return
    if not (model.hf / "config.json").exists() or not list(model.hf.glob("*.safetensors")):
        import torch
        import transformers
        config = model.make_config()
        config.architectures = [model.class_name]
        torch.manual_seed(0)
        hf_model = getattr(transformers, model.class_name)(config).eval()
        model.hf.mkdir(parents=True, exist_ok=True)
        hf_model.save_pretrained(str(model.hf), safe_serialization=True)
        shutil.copy(TOKENIZER, model.hf / "tokenizer.json")
        written = json.loads((model.hf / "config.json").read_text())
        if written.get("rope_scaling"):
            raise ValueError(f"{model.hf}/config.json has rope_scaling {written['rope_scaling']}, which SwiftBERT refuses")
        params = sum(p.numel() for p in hf_model.parameters())
        log(f"wrote {model.hf}: {params / 1e6:.1f} M parameters, float32, RANDOM weights (torch.manual_seed(0))")
        del hf_model
    if not (model.converted / "model.safetensors").exists():
        run(bert, "convert", model.hf, model.converted)
    if not (model.converted / "model.int8.safetensors").exists():
        run(bert, "quantize", model.converted)


def load_torch_model(model):
    import torch
    import transformers
    config = transformers.AutoConfig.from_pretrained(str(model.hf))
    config._attn_implementation = "eager"
    if hasattr(config, "reference_compile"):
        config.reference_compile = False  # ModernBERT in transformers 4.x: no torch.compile in the trace
    cls = getattr(transformers, model.class_name)
    extra = {"add_pooling_layer": False} if model.class_name == "MPNetModel" else {}
    return cls.from_pretrained(str(model.hf), config=config, attn_implementation="eager", dtype=torch.float32,
                               **extra).eval()


def check_inputs(model):
    import torch
    long = 300 if model.key == "mpnet" else 700
    generator = torch.Generator().manual_seed(1)
    return [torch.randint(5, 6000, (2, 77), generator=generator), torch.randint(5, 6000, (1, long), generator=generator)]


def check_against_torch(path, model, torch_model, threads=2):
    """max |ORT - torch| / max |torch| over the check inputs (full attention masks)."""
    import torch
    session = ort_session(path, threads)
    worst = 0.0
    for ids in check_inputs(model):
        with torch.no_grad():
            ref = torch_model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state.numpy()
        out = session.run(None, {"input_ids": ids.numpy(), "attention_mask": np.ones_like(ids.numpy())})[0]
        worst = max(worst, float(np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-12)))
    return worst


def export_onnx(model):
    if (model.onnx / "model.onnx").exists():
        log(f"{model.onnx}/model.onnx exists; delete the folder to export again")
        return
    import torch
    missing = [name for name in ("onnx", "onnxruntime") if not module_available(name)]
    if missing:  # onnx: torch's TorchScript exporter writes the file with it; onnxruntime: the check against torch
        raise RuntimeError(f"{' and '.join(missing)} missing from tools/.venv (tools/venv.sh reference installs them)")
    torch_model = load_torch_model(model)

    class LastHiddenState(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            if model.export_masks:
                return self.m(input_ids=input_ids, attention_mask=model.export_masks(self.m.config, attention_mask),
                              use_cache=False).last_hidden_state
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    model.onnx.mkdir(parents=True, exist_ok=True)
    ids = torch.randint(5, 6000, (1, TRACE_TOKENS), generator=torch.Generator().manual_seed(0))
    names = ["input_ids", "attention_mask"]
    partial = model.onnx / "model.partial.onnx"
    started = time.time()
    with torch.no_grad():
        torch.onnx.export(LastHiddenState(torch_model), (ids, torch.ones_like(ids)), str(partial), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
    log(f"exported {model.label} in {time.time() - started:.0f} s")
    report = {"model": model.label, "trace_tokens": TRACE_TOKENS, "versions": versions()}
    # A fresh model for the check: after tracing, the traced one gave wrong outputs itself
    # (MPNet and GTE: relative error 0.7 against a graph that matches a fresh model to 5e-6).
    torch_model = load_torch_model(model)
    error = check_against_torch(partial, model, torch_model)
    report["max_rel_error_vs_torch"] = error
    log(f"ORT FP32 against torch (2x77, 1x{check_inputs(model)[1].shape[1]} tokens): max |diff| / max |ref| = {error:.2e}")
    if error > 1e-3:
        (model.onnx / "export.json").write_text(json.dumps(report, indent=1) + "\n")
        raise RuntimeError(f"the exported graph disagrees with torch (relative error {error:.2e}); left as {partial}")
    partial.rename(model.onnx / "model.onnx")
    report["optimizer"] = optimize_onnx(model, torch_model)
    (model.onnx / "export.json").write_text(json.dumps(report, indent=1) + "\n")


def gemma_masks(config, attention_mask):
    """Gemma3TextModel's two additive masks, bidirectional as EmbeddingGemma's config says, made with
    plain tensor operations: transformers builds them with vmap, which the TorchScript exporter cannot
    trace. Full layers see every real key; sliding layers those with |q - k| < config.sliding_window
    (transformers' _bidirectional_window_overlay; the config stores 512 // 2 + 1 = 257)."""
    import torch
    n = attention_mask.shape[1]
    position = torch.arange(n, device=attention_mask.device)
    real = attention_mask[:, None, None, :].bool().expand(-1, 1, n, n)
    near = ((position[:, None] - position[None, :]).abs() < config.sliding_window)[None, None]
    blocked = torch.finfo(torch.float32).min

    def additive(keep):
        return torch.where(keep, torch.zeros((), dtype=torch.float32), torch.full((), blocked, dtype=torch.float32))
    return {"full_attention": additive(real), "sliding_attention": additive(real & near)}


def optimize_onnx(model, torch_model):
    """ORT's transformers optimizer (model_type bert); kept as model.opt.onnx only if it still matches torch."""
    opt = model.onnx / "model.opt.onnx"
    try:
        from onnxruntime.transformers import optimizer
        config = torch_model.config
        fused = optimizer.optimize_model(str(model.onnx / "model.onnx"), model_type="bert",
                                         num_heads=config.num_attention_heads, hidden_size=config.hidden_size)
        fusions = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
        fused.save_model_to_file(str(opt))
        error = check_against_torch(opt, model, torch_model)
    except Exception as failure:  # noqa: BLE001 - optional
        opt.unlink(missing_ok=True)
        log(f"ORT transformers optimizer: failed ({type(failure).__name__}: {str(failure)[:200]}); raw graph only")
        return {"status": f"failed: {type(failure).__name__}: {str(failure)[:300]}"}
    if error > 1e-3 or not fusions:
        opt.unlink()
        why = "no fusions" if not fusions else f"relative error {error:.2e}"
        log(f"ORT transformers optimizer: dropped ({why}); raw graph only")
        return {"status": f"dropped: {why}", "fusions": fusions}
    log(f"ORT transformers optimizer: kept model.opt.onnx, fusions {fusions}, relative error {error:.2e}")
    return {"status": "kept", "fusions": fusions, "max_rel_error_vs_torch": error}


# ---------------------------------------------------------------------------------------------
# bench

def module_available(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


def versions():
    found = {"python": platform.python_version()}
    for module in ("torch", "transformers", "onnxruntime", "onnx"):
        try:
            found[module] = __import__(module).__version__
        except ImportError:
            found[module] = "not installed"
    return found


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def git_state():
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "Sources", "Package.swift"],
                               capture_output=True, text=True).stdout.strip()
        return f"{head}{' + uncommitted changes in Sources/' if dirty else ''}"
    except OSError:
        return "unknown"


def special_ids(bert, folder):
    """[CLS] and [SEP] as `bert bench` adds them: the ids of an empty text."""
    out = subprocess.run([str(bert), "tokenize", "--model", str(folder), "--json", "--quiet", ""],
                         check=True, capture_output=True, text=True).stdout
    ids = json.loads(out.splitlines()[0])["ids"]
    return ids[0], ids[-1]


def token_ids(length, vocabulary, cls, sep):
    """`bert bench`'s ids without sentences (syntheticIDs): [CLS], (1000 + 7919 i) mod vocab, [SEP]."""
    body = (1000 + np.arange(length - 2, dtype=np.int64) * 7919) % vocabulary
    return np.concatenate([[cls], body, [sep]]).astype(np.int64)[None, :]


def swift_cell(bert, model, length, threads, passes, sentences):
    """Median ms of `bert bench` (fresh process) and its peak RSS in bytes (None without /usr/bin/time)."""
    command = [str(bert), "bench", "--model", str(model.converted), "--precision", "fp32", "--batch", "1",
               "--seq", str(length), "--threads", str(threads), "--repetitions", str(passes), "--no-memory",
               "--accuracy-sentences", "0", "--sentences", str(sentences), "--json", "--quiet"]
    timer = pathlib.Path("/usr/bin/time")
    if timer.exists():
        command = [str(timer), "-v"] + command
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"bert bench exited {done.returncode}: {done.stderr.strip()[-600:]}")
    rows = [r for r in json.loads(done.stdout) if r["precision"] == "fp32"]
    OPENBLAS.add(f"{rows[0].get('openblas_core')} (OPENBLAS_CORETYPE {rows[0].get('openblas_coretype') or 'unset'})")
    rss = None
    for line in done.stderr.splitlines():
        if "Maximum resident set size" in line:
            rss = int(line.split(":")[1]) * 1024
    return rows[0]["median_ms"], rss


def ort_session(path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_median(session, feed, passes, warm_feed):
    session.run(None, warm_feed)
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def feed_of(ids):
    return {"input_ids": ids, "attention_mask": np.ones_like(ids)}


def ort_graphs(model):
    """The ONNX graphs to time, by column: raw (ORT_ENABLE_ALL) and, if make kept it, the optimizer's."""
    graphs = {}
    if (model.onnx / "model.onnx").exists():
        graphs["ort"] = model.onnx / "model.onnx"
    if (model.onnx / "model.opt.onnx").exists():
        graphs["ort-opt"] = model.onnx / "model.opt.onnx"
    return graphs


def mib(n):
    return "n/a" if n is None else f"{n / 2**20:,.0f} MiB"


def ms(v):
    return "n/a" if v is None else f"{v:,.1f} ms"


def bench(models, bert, bert_note, args):
    have_ort = versions()["onnxruntime"] != "not installed"
    notes = [] if have_ort else ["onnxruntime is not installed in tools/.venv: ORT columns are n/a (tools/venv.sh reference)"]
    sentences = bert.parent / "no-sentences.txt"  # beside the binary's copy, removed with it
    sentences.write_text("")  # no sentences: `bert bench` uses its synthetic ids, which ORT gets too
    rows, memory = [], []
    started = time.time()
    for model in models:
        if not (model.converted / "model.safetensors").exists():
            notes.append(f"{model.label}: {model.converted} missing, skipped (run make)")
            continue
        graphs = ort_graphs(model) if have_ort else {}
        if have_ort and not graphs:
            notes.append(f"{model.label}: no ONNX graph in {model.onnx} (export failed or make not run): ORT n/a")
        config = json.loads((model.converted / "config.json").read_text())
        cls, sep = special_ids(bert, model.converted)
        lengths = [n for n in (args.lengths or model.lengths) if n <= max(model.lengths)]
        if not lengths:
            notes.append(f"{model.label}: none of the lengths asked for fits (at most {max(model.lengths)} tokens)")
            continue
        for threads in args.threads:
            sessions = {}
            for length in lengths:
                ids = token_ids(length, config["vocab_size"], cls, sep)
                long = length >= LONG
                passes = args.long_passes if long else args.passes
                load_before = os.getloadavg()[0]
                figures = {"swift": [], **{g: [] for g in graphs}}
                peak = None
                for r in range(args.rounds):
                    engines = ["swift", *graphs]
                    if r % 2:
                        engines.reverse()
                    for engine in engines:
                        if engine == "swift":
                            value, rss = swift_cell(bert, model, length, threads, passes, sentences)
                            peak = max(peak or 0, rss or 0) or None
                        else:
                            if long or engine not in sessions:
                                sessions[engine] = ort_session(graphs[engine], threads)
                            warm = feed_of(token_ids(16, config["vocab_size"], cls, sep)) if long else feed_of(ids)
                            value = ort_median(sessions[engine], feed_of(ids), passes, warm)
                            if long:
                                del sessions[engine]
                        figures[engine].append(value)
                    log(f"{model.label} {length} tokens, {threads} thread(s), round {r + 1}/{args.rounds}: "
                        + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in figures.items()))
                load_after = os.getloadavg()[0]
                med = {k: statistics.median(v) for k, v in figures.items()}
                rows.append({"model": model.label, "tokens": length, "threads": threads, "passes": passes,
                             "swift_ms": med["swift"], "ort_ms": med.get("ort"), "ort_opt_ms": med.get("ort-opt"),
                             "swift_peak_rss": peak, "load_before": load_before, "load_after": load_after,
                             "rounds_ms": figures})
            sessions.clear()
        longest = max(lengths)
        peaks = [r["swift_peak_rss"] for r in rows if r["model"] == model.label and r["tokens"] == longest and r["swift_peak_rss"]]
        h, f = config["hidden_size"], config["intermediate_size"]
        per_token = (3 * h + 2 * f + f + 3 * h) if model.gated else (3 * h + f + 2 * h)
        memory.append({"model": model.label, "tokens": longest, "swift_peak_rss": max(peaks) if peaks else None,
                       "fp32_file": (model.converted / "model.safetensors").stat().st_size,
                       "layer_activations": longest * per_token * 4,
                       "formula": "T x (3H + 2F + F + 3H)" if model.gated else "T x (3H + F + 2H)",
                       "eager_scores": config["num_attention_heads"] * longest * longest * 4})
    report(rows, memory, notes, bert_note, args, time.time() - started)


def report(rows, memory, notes, bert_note, args, seconds):
    v = versions()
    lines = [
        f"## SwiftBERT against ONNX Runtime on MPNet, NomicBERT, GTE, ModernBERT ({BANNER})",
        "",
        f"- machine: {cpu_name()}, {os.cpu_count()} logical CPUs; {platform.platform()}",
        f"- bert: {bert_note}; repository {git_state()}; OpenBLAS kernels {', '.join(sorted(OPENBLAS)) or 'n/a'}",
        f"- torch {v['torch']}, transformers {v['transformers']}, onnxruntime {v['onnxruntime']}, onnx {v['onnx']}, python {v['python']}",
        f"- {args.rounds} round(s), engines alternating; per round the median of {args.passes} pass(es) below {LONG} tokens,"
        f" {args.long_passes} from {LONG}; cells are medians over the rounds. Batch 1, FP32 for both engines."
        f" {'--quick. ' if args.quick else ''}Took {seconds / 60:.1f} min.",
        "- weights: RANDOM for nomic-embed-text-v1.5, gte-base-en-v1.5 (no rope_scaling) and modernbert-base shapes;"
        " all-mpnet-base-v2 has its real weights. Speed depends on the shapes only.",
        *[f"- note: {n}" for n in notes],
        "",
        f"### Latency, batch 1 ({BANNER})",
        "",
        "| model | tokens | threads | SwiftBERT FP32 | ORT FP32 | SwiftBERT / ORT | ORT FP32, optimizer graph | SwiftBERT peak RSS | load avg before → after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = f"{r['swift_ms'] / r['ort_ms']:.2f}" if r["ort_ms"] else "n/a"
        lines.append(f"| {r['model']} | {r['tokens']} | {r['threads']} | {ms(r['swift_ms'])} | {ms(r['ort_ms'])} | {ratio} |"
                     f" {ms(r['ort_opt_ms'])} | {mib(r['swift_peak_rss'])} |"
                     f" {r['load_before']:.2f} → {r['load_after']:.2f} |")
    lines += [
        "",
        f"### SwiftBERT memory at the longest length ({BANNER})",
        "",
        "Peak RSS: /usr/bin/time -v's \"Maximum resident set size\" of the `bert bench` process (FP32 weights loaded,"
        " one warm-up on 16 tokens, the timed passes), the largest over threads and rounds. One layer's activations:"
        " an estimate, in float32. The eager ONNX graph's attention scores, for comparison: heads x T x T floats per layer.",
        "",
        "| model | tokens | SwiftBERT peak RSS | FP32 weights file | one layer's activations (est.) | formula | eager attention scores (ORT graph) |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in memory:
        lines.append(f"| {m['model']} | {m['tokens']} | {mib(m['swift_peak_rss'])} | {mib(m['fp32_file'])} | {mib(m['layer_activations'])} |"
                     f" {m['formula']} | {mib(m['eager_scores'])} |")
    text = "\n".join(lines) + "\n"
    print(text)
    print(json.dumps({"versions": v, "cpu": cpu_name(), "bert": bert_note, "rows": rows, "memory": memory}, default=str))
    if args.out:
        pathlib.Path(args.out).write_text(text)
        log(f"wrote {args.out}")


def int_list(text):
    return [int(x) for x in text.split(",") if x.strip()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["make", "bench"])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)} (default: all)")
    parser.add_argument("--lengths", type=int_list, help="tokens per sequence (default 128,512,2048,8192; MPNet stops at 512)")
    parser.add_argument("--threads", type=int_list, default=[1, 2], help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help=f"timed passes per engine per round below {LONG} tokens")
    parser.add_argument("--long-passes", type=int, default=1, help=f"timed passes per engine per round from {LONG} tokens")
    parser.add_argument("--quick", action="store_true", help="128 and 512 tokens, one round: a fast check")
    parser.add_argument("--out", help="also write the markdown tables to this file")
    parser.add_argument("--bert", default=str(BERT), help="the bert binary (default: .build/release/bert)")
    args = parser.parse_args()
    if args.quick:
        args.lengths, args.rounds = [128, 512], 1
    unknown = [k for k in args.models.split(",") if k not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)} (known: {', '.join(MODELS)})")
    models = [MODELS[k] for k in args.models.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-modern-bert-") as folder:
        bert, note = snapshot_bert(pathlib.Path(args.bert), folder)
        log(f"using a copy of {note}")
        if args.step == "make":
            sys.exit(make(models, bert))
        bench(models, bert, note, args)


if __name__ == "__main__":
    main()
