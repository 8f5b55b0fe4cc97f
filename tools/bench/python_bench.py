#!/usr/bin/env python3
"""SwiftBERT's Python API beside sentence-transformers and fastembed (issue 46), in one run.

On all-MiniLM-L6-v2 (fp32), texts/s at batch 1 and 32 of 128-token texts ([CLS] and [SEP]
included), 1 and 2 threads, for:

- swiftbert: `SentenceEncoder(threads=T).encode(batch, batch_size=len(batch))`;
- sentence-transformers: `SentenceTransformer(original checkpoint).encode(...)` after
  `torch.set_num_threads(T)` (PyTorch, eager);
- fastembed: `TextEmbedding(..., specific_model_path=FOLDER, threads=T).embed(...)` (ONNX Runtime)
  on the graph exported here from the same checkpoint (torch.onnx, TorchScript exporter, eager
  attention, opset 17, fused by onnxruntime.transformers.optimizer, as tools/bench/compare_engines.py
  exports it), registered with `TextEmbedding.add_custom_model` (mean pooling, normalised);

With --precisions fp32,int8,bf16, SwiftBERT also runs at those precisions (`SentenceEncoder(precision=P)`,
engines swiftbert-int8, swiftbert-bf16), each in every cell; their vectors are checked against
SwiftBERT FP32's (cosine >= 0.99 for INT8, >= 0.999 for BF16, the first text) and the table of
ratios gives each precision's time against each peer's FP32.

plus two figures of SwiftBERT alone: two Python threads, each with an encoder of threads=1, against
one at b1x128; and `bert bench --batch 32 --seq 128 --precision fp32` against the Python API at
b32x128 (the Python API's overhead: tokenising, the C ABI, numpy).

Every engine runs in a worker process of its own (fastembed in its own venv: fastembed 0.9.1 pins
huggingface-hub<2, which tools/.venv has at 2.4.0), models loaded once. The run goes in rounds: in
every round each cell runs on every engine, one after another (the order rotates from round to
round), for --seconds each; the figures are the medians over the rounds and the ratios are of
medians. Before each round the runner waits until no Swift build runs (pgrep swift-build,
swift-frontend) and the 1-minute load average is below --max-load; a round during which a build
started is discarded and run again. One worker sanity-checks the others: the first vector of each
engine must have cosine >= 0.9999 with SwiftBERT's.

    SWIFTBERT_LIBRARY=.build/release/libswiftbert.so SWIFTBERT_HOME=. PYTHONPATH=python \\
        tools/.venv/bin/python tools/bench/python_bench.py [--rounds 5] [--seconds 3] \\
        [--fastembed-python tools/.venv-fastembed/bin/python] [--bert .build/release/bert] [--json out.json]

Needs tools/.venv with the reference group (torch, sentence-transformers; `tools/venv.sh
reference`), the original checkpoint in weights/.cache/hf/all-MiniLM-L6-v2 (`make setup`), and a
venv with fastembed (tools/requirements.txt, the `fastembed` group, says how to make it).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("SWIFTBERT_HOME", ROOT))
FASTEMBED_NAME = "swiftbert-bench/all-MiniLM-L6-v2"
SEQ = 128
BATCHES = (1, 32)
THREADS = (1, 2)
ENGINES = ("swiftbert", "sentence-transformers", "fastembed")


# --------------------------------------------------------------------------------------------
# Workers: one process per (engine, threads), driven over stdin/stdout with JSON lines.

def timed(call, batch, seconds):
    """Texts/s of call(batch) repeated for `seconds` (at least 2 calls)."""
    calls, start = 0, time.perf_counter()
    while True:
        call(batch)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and calls >= 2:
            return calls * len(batch) / elapsed


def timed_in_threads(calls, batch, seconds):
    """Texts/s of len(calls) Python threads, each repeating its own call(batch) for `seconds`."""
    counts, stop = [0] * len(calls), time.perf_counter() + seconds

    def work(index):
        while True:
            calls[index](batch)
            counts[index] += len(batch)
            if time.perf_counter() >= stop and counts[index] >= 2 * len(batch):
                return

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - start)


def swiftbert_precision(engine):
    """The precision of a SwiftBERT engine id (swiftbert, swiftbert-int8, ...); None for a peer."""
    if engine == "swiftbert":
        return "fp32"
    return engine.split("-", 1)[1] if engine.startswith("swiftbert-") else None


# Cosine to SwiftBERT FP32 below which a precision's vector means a broken engine, not rounding.
MIN_COSINE = {"fp32": 0.9999, "int8": 0.99, "int8-attention": 0.99, "int8-static": 0.99, "bf16": 0.999}


def worker(engine, threads, model, folder):
    import numpy as np
    precision = swiftbert_precision(engine)
    if precision:
        import swiftbert
        encoders = [swiftbert.SentenceEncoder(model, precision=precision, threads=threads)
                    for _ in range(2 if threads == 1 and precision == "fp32" else 1)]
        calls = [lambda b, e=e: e.encode(b, batch_size=len(b)) for e in encoders]
        version = f"swiftbert {swiftbert.__version__} (engine {swiftbert.engine_version()})"
    elif engine == "sentence-transformers":
        import sentence_transformers
        import torch
        torch.set_num_threads(threads)
        st = sentence_transformers.SentenceTransformer(folder, device="cpu")
        calls = [lambda b: st.encode(b, batch_size=len(b), convert_to_numpy=True)]
        version = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads)"
    elif engine == "fastembed":
        import fastembed
        import onnxruntime
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
        TextEmbedding.add_custom_model(model=FASTEMBED_NAME, pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"), dim=384,
                                       model_file="model.fused.onnx")
        fe = TextEmbedding(model_name=FASTEMBED_NAME, specific_model_path=folder, threads=threads, local_files_only=True)
        calls = [lambda b: np.stack(list(fe.embed(b, batch_size=len(b))))]
        version = f"fastembed {fastembed.__version__}, onnxruntime {onnxruntime.__version__}"
    else:
        raise SystemExit(f"unknown engine {engine}")
    print(json.dumps({"ready": version}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        batch = [request["text"]] * request["batch"]
        if "probe" in request:
            vector = np.asarray(calls[0](batch))[0]
            tokens = len(encoders[0].tokenize(request["text"], max_length=512)["ids"]) if precision else None
            print(json.dumps({"vector": [float(x) for x in vector], "tokens": tokens}), flush=True)
            continue
        calls[0](batch)  # warm: the first call of a shape may allocate
        python_threads = request.get("python_threads", 1)
        if python_threads == 1:
            rate = timed(calls[0], batch, request["seconds"])
        else:
            rate = timed_in_threads(calls[:python_threads], batch, request["seconds"])
        print(json.dumps({"texts_per_s": rate}), flush=True)


class Worker:
    def __init__(self, engine, threads, python, model, folder):
        self.engine, self.threads = engine, threads
        env = dict(os.environ)
        if engine == "fastembed":
            env["HF_HUB_OFFLINE"] = "1"
        self.process = subprocess.Popen([python, __file__, "--worker", engine, "--threads", str(threads),
                                         "--model", model, "--folder", str(folder)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.version = self.read()["ready"]

    def read(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.engine}/{self.threads} died (exit {self.process.wait()})")
        return json.loads(line)

    def ask(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


# --------------------------------------------------------------------------------------------
# The driver.

def export_onnx(hf: Path, out: Path) -> Path:
    """hf's encoder as one fused ONNX graph with its tokenizer files, for fastembed (cached)."""
    import shutil
    if (out / "model.fused.onnx").exists():
        return out
    import torch
    import transformers
    from onnxruntime.transformers import optimizer
    out.mkdir(parents=True, exist_ok=True)
    eager = transformers.AutoModel.from_pretrained(hf, attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    ids = torch.randint(1000, 2000, (2, 16))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    raw = out / "model.raw.onnx"
    torch.onnx.export(LastHiddenState(eager), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(raw),
                      input_names=names, output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]})
    fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=eager.config.num_attention_heads,
                                     hidden_size=eager.config.hidden_size)
    fused.save_model_to_file(str(out / "model.fused.onnx"))
    raw.unlink()
    for name in ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]:
        shutil.copy(hf / name, out / name)
    (out / "fusions.json").write_text(json.dumps({k: v for k, v in fused.get_fused_operator_statistics().items() if v}))
    return out


def text_of(tokenizer_json: Path, tokens: int) -> str:
    """A real-word text of exactly `tokens` tokens, [CLS] and [SEP] included."""
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    words = (ROOT / "Tests/SwiftBERTTests/Fixtures/sentences.txt").read_text().split()
    for n in range(1, len(words)):
        count = len(tokenizer.encode(" ".join(words[:n])).ids)
        if count == tokens:
            return " ".join(words[:n])
        if count > tokens:
            break
    raise RuntimeError(f"no prefix of the fixture has exactly {tokens} tokens")


def building() -> bool:
    return any(subprocess.run(["pgrep", "-f", name], capture_output=True).returncode == 0
               for name in ("swift-build", "swift-frontend"))


def load1() -> float:
    return float(open("/proc/loadavg").read().split()[0])


def wait_quiet(max_load, max_wait):
    """Waits until no build runs and the 1-minute load is below max_load; returns the load."""
    start = time.time()
    while building() or load1() >= max_load:
        if time.time() - start > max_wait:
            raise SystemExit(f"not quiet after {max_wait:.0f} s (build running: {building()}, load {load1():.2f})")
        time.sleep(5)
    return load1()


def bert_bench(bert, model_folder, threads, seconds):
    out = subprocess.run([bert, "bench", "--model", str(model_folder), "--precision", "fp32", "--batch", "32",
                          "--seq", str(SEQ), "--threads", str(threads), "--seconds", str(seconds), "--json"],
                         capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)[0]
    return 32 * 1000 / row["median_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="per cell per engine per round")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--precisions", default="fp32",
                        help="SwiftBERT's precisions, each an engine (fp32 is `swiftbert`), e.g. fp32,int8,bf16")
    parser.add_argument("--fastembed-python", default=str(ROOT / "tools/.venv-fastembed/bin/python"))
    parser.add_argument("--bert", default=str(ROOT / ".build/release/bert"), help="for `bert bench` (none: skip)")
    parser.add_argument("--max-load", type=float, default=0.7)
    parser.add_argument("--max-wait", type=float, default=1800, help="seconds to wait for a quiet machine")
    parser.add_argument("--no-wait", action="store_true", help="a smoke run: do not wait for a quiet machine")
    parser.add_argument("--json", default=None, help="write every round's figures here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.threads, args.model, args.folder)

    engines = [e for e in args.engines.split(",") if e]
    if "swiftbert" in engines:
        at = engines.index("swiftbert") + 1
        engines[at:at] = [f"swiftbert-{p}" for p in args.precisions.split(",") if p and p != "fp32"]
    hf = HOME / "weights/.cache/hf" / args.model
    folders = {"swiftbert": args.model, "sentence-transformers": hf}
    if "fastembed" in engines:
        folders["fastembed"] = export_onnx(hf, HOME / "weights/.cache/python-bench" / args.model)
    text = text_of(HOME / "weights" / args.model / "tokenizer.json", SEQ)
    pythons = {"swiftbert": sys.executable, "sentence-transformers": sys.executable, "fastembed": args.fastembed_python}
    runs_as = {e: "swiftbert" if swiftbert_precision(e) else e for e in engines}  # every precision in SwiftBERT's venv
    workers = {(e, t): Worker(e, t, pythons[runs_as[e]], args.model, folders[runs_as[e]]) for e in engines for t in THREADS}
    try:
        # The same model in every engine: each engine's vector of the text against SwiftBERT's.
        import numpy as np
        answers = {e: workers[(e, 1)].ask(text=text, batch=1, probe=True) for e in engines}
        if "swiftbert" in engines:
            assert answers["swiftbert"]["tokens"] == SEQ, f"the text has {answers['swiftbert']['tokens']} tokens in SwiftBERT"
        probes = {e: np.asarray(a["vector"]) for e, a in answers.items()}
        reference = probes.get("swiftbert", next(iter(probes.values())))
        for e, v in probes.items():
            cosine = float(v @ reference / (np.linalg.norm(v) * np.linalg.norm(reference)))
            print(f"# {e}: {workers[(e, 1)].version}; cosine with swiftbert's vector {cosine:.7f}", flush=True)
            assert cosine >= MIN_COSINE.get(swiftbert_precision(e) or "fp32", 0.9999), f"{e} embeds differently (cosine {cosine})"

        cells = [(b, t, 1) for b in BATCHES for t in THREADS]
        jobs = [(e, b, t, p) for (b, t, p) in cells for e in engines]
        if "swiftbert" in engines:
            jobs.append(("swiftbert", 1, 1, 2))  # two Python threads, each with an encoder of threads=1
        if args.bert and args.bert != "none":
            jobs += [("bert bench", 32, t, 1) for t in THREADS]
        rounds, loads = [], []
        while len(rounds) < args.rounds:
            load = load1() if args.no_wait else wait_quiet(args.max_load, args.max_wait)
            shift = len(rounds) % len(jobs)
            figures, disturbed = {}, False
            for e, b, t, p in jobs[shift:] + jobs[:shift]:
                if e == "bert bench":
                    rate = bert_bench(args.bert, HOME / "weights" / args.model, t, args.seconds)
                else:
                    rate = workers[(e, t)].ask(text=text, batch=b, seconds=args.seconds, python_threads=p)["texts_per_s"]
                figures[f"{e}|{b}|{t}|{p}"] = rate
                disturbed |= not args.no_wait and building()
            if disturbed:
                print("# a build started during the round: discarded", flush=True)
                continue
            rounds.append(figures)
            loads.append(load)
            print(f"# round {len(rounds)}/{args.rounds} (1-min load before {load:.2f}): "
                  + ", ".join(f"{k}={v:.1f}" for k, v in figures.items()), flush=True)
    finally:
        for w in workers.values():
            w.close()

    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    spread = {k: (min(r[k] for r in rounds), max(r[k] for r in rounds)) for k in rounds[0]}
    print(f"\n{args.model}, SwiftBERT {args.precisions}, the peers fp32; {SEQ}-token texts; {args.rounds} interleaved rounds of {args.seconds:g} s per cell; "
          f"medians (min-max) in texts/s; 1-min load before the rounds: {', '.join(f'{x:.2f}' for x in loads)}\n")
    print("| batch | threads | " + " | ".join(engines) + " | SwiftBERT time / sentence-transformers' | SwiftBERT time / fastembed's |")
    print("|---|---|" + "---|" * (len(engines) + 2))
    for b in BATCHES:
        for t in THREADS:
            row = [f"{median[f'{e}|{b}|{t}|1']:.1f} ({spread[f'{e}|{b}|{t}|1'][0]:.1f}-{spread[f'{e}|{b}|{t}|1'][1]:.1f})" for e in engines]
            ratios = []
            for peer in ("sentence-transformers", "fastembed"):
                if "swiftbert" in engines and peer in engines:
                    ratios.append(f"{median[f'{peer}|{b}|{t}|1'] / median[f'swiftbert|{b}|{t}|1']:.2f}x")
                else:
                    ratios.append("-")
            print(f"| {b} | {t} | " + " | ".join(row) + " | " + " | ".join(ratios) + " |")
    variants = [e for e in engines if swiftbert_precision(e) and e != "swiftbert"]
    peers = [p for p in ("sentence-transformers", "fastembed") if p in engines]
    if variants and peers:
        names = ["swiftbert"] + variants
        print("\nEach SwiftBERT precision's time against each peer's (FP32), ratios of medians:\n")
        print("| batch | threads | " + " | ".join(f"{n} / {p}" for n in names for p in peers) + " |")
        print("|---|---|" + "---|" * (len(names) * len(peers)))
        for b in BATCHES:
            for t in THREADS:
                print(f"| {b} | {t} | " + " | ".join(f"{median[f'{p}|{b}|{t}|1'] / median[f'{n}|{b}|{t}|1']:.2f}x"
                                                     for n in names for p in peers) + " |")
    if "swiftbert" in engines:
        one, two = median["swiftbert|1|1|1"], median["swiftbert|1|1|2"]
        print(f"\nb1x128, two Python threads (each an encoder of threads=1): {two:.1f} texts/s, "
              f"{two / one:.2f}x one thread ({one:.1f})")
        for t in THREADS:
            key = f"bert bench|32|{t}|1"
            if key in median:
                api = median[f"swiftbert|32|{t}|1"]
                print(f"b32x128, {t} thread(s): Python API {api:.1f} texts/s, `bert bench` {median[key]:.1f} "
                      f"(32 / median pass); the API is {100 * (api / median[key] - 1):+.1f} %")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": rounds, "loads": loads, "median": median,
                                               "versions": {f"{e}": workers[(e, 1)].version for e in engines},
                                               "text": text}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
