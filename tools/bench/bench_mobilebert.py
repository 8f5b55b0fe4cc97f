#!/usr/bin/env python3
"""One keystroke of MobileBERT word suggestions: SwiftBERT (FP32, INT8, INT8 weights) beside
ONNX Runtime (FP32, INT8 dynamic quantization) on the same random-weight checkpoint, one
interleaved run.

A keystroke that reads a new context runs the encoder on `[CLS] context [MASK] [SEP]` and the
masked-LM head at the [MASK] (what `WordSuggester` does): that is what every engine times here,
at b1x16 (the suggester's usual input: up to 32 word pieces of context) and b1x128. One thread
each, as the suggester runs. Token ids are real text (Debian's license texts) tokenized once and
given to every engine; the times are the engine call alone, measured inside each worker: wall
time, and the process's CPU time (all threads; with one thread, the call without the time it
waited for a core on a shared machine).

Engines are interleaved: every round runs `--calls` calls of each engine in turn, the order
rotated each round, so the load of a shared machine falls on all alike; the table gives the
median of every call and the ratio to ONNX Runtime FP32.

Needs: weights/mobilebert-random (tools/fixtures/make_random_mobilebert.py, then `bert convert` and
`bert quantize`), the ONNX files it writes, and `swift build -c release --product SwiftBERTBenchmarks`.
    $(tools/venv.sh reference) tools/bench/bench_mobilebert.py [--rounds 30] [--calls 5]
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import time

import numpy as np
import onnxruntime
import transformers

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "weights/mobilebert-random"
ONNX = ROOT / "weights/mobilebert-random-onnx"
SHAPES = {"b1x16": 16, "b1x128": 128}


def workloads(tokenizer):
    """[CLS] + the last word pieces of real text + [MASK] + [SEP], exactly n tokens."""
    text = re.sub(r"\s+", " ", pathlib.Path("/usr/share/common-licenses/Apache-2.0").read_text())
    pieces = tokenizer(text, add_special_tokens=False)["input_ids"]
    out = {}
    for name, n in SHAPES.items():
        ids = [tokenizer.cls_token_id] + pieces[1000:1000 + n - 3] + [tokenizer.mask_token_id, tokenizer.sep_token_id]
        assert len(ids) == n
        out[name] = [[ids]]  # one batch of one sequence
    return out


class SwiftWorker:
    def __init__(self, precision, input_path):
        binary = ROOT / ".build/release/SwiftBERTBenchmarks"
        self.name = f"SwiftBERT {precision}"
        self.process = subprocess.Popen([str(binary), "peer", "--model", str(MODEL), "--input", str(input_path),
                                         "--precision", precision, "--threads", "1", "--serve"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = self.ask({"op": "info"})

    def ask(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"{self.name}: {answer['error']}")
        return answer

    def run(self, workload, calls, warmup=0):
        """Wall and process CPU times of each call, in ms."""
        answer = self.ask({"op": "keystroke", "workload": workload, "threads": 1, "calls": calls, "warmup": warmup})
        return answer["ms"], answer["cpu_ms"]

    def logits(self, workload):
        return np.array(self.ask({"op": "logits", "workload": workload, "threads": 1})["logits"], dtype=np.float32)

    def close(self):
        self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.process.stdin.close()
        self.process.wait()


class OnnxWorker:
    def __init__(self, name, path, batches):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.name = name
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = {w: [np.array(b, dtype=np.int64) for b in batches[w]] for w in batches}

    def run(self, workload, calls, warmup=0):
        """Wall and process CPU times of each call, in ms (ORT runs in this process, one thread)."""
        wall, cpu = [], []
        for call in range(warmup + calls):
            total, total_cpu = 0.0, 0.0
            for ids in self.inputs[workload]:
                cpu_start, start = time.process_time(), time.perf_counter()
                self.session.run(None, {"input_ids": ids})
                total += (time.perf_counter() - start) * 1e3
                total_cpu += (time.process_time() - cpu_start) * 1e3
            if call >= warmup:
                wall.append(total)
                cpu.append(total_cpu)
        return wall, cpu

    def logits(self, workload):
        return np.concatenate([self.session.run(None, {"input_ids": ids})[0] for ids in self.inputs[workload]])

    def close(self):
        pass


def agreement(engines):
    """Each engine's logits at the [MASK] against SwiftBERT fp32's and ONNX Runtime fp32's: that
    the engines compute the same thing, and what INT8 changes. Random weights give near-uniform
    logits (standard deviation about 0.45), so top-10 overlap is a harsh measure here."""
    print("| engine | input | max abs diff to SwiftBERT fp32 | to ORT fp32 | top-10 overlap with SwiftBERT fp32 |")
    print("|---|---|---:|---:|---:|")
    for w in SHAPES:
        logits = {e.name: e.logits(w) for e in engines}
        swift, ort = logits["SwiftBERT fp32"], logits["ONNX Runtime fp32"]
        top = set(np.argsort(-swift[0])[:10])
        for name, value in logits.items():
            overlap = len(top & set(np.argsort(-value[0])[:10])) / 10
            print(f"| {name} | {w} | {np.abs(value - swift).max():.2e} | {np.abs(value - ort).max():.2e} | {overlap:.0%} |")
        print(f"(logit standard deviation at the [MASK], {w}: {swift.std():.3f})")
    print()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--agreement-only", action="store_true", help="only the logits table, no timing")
    args = parser.parse_args()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(MODEL))
    batches = workloads(tokenizer)
    input_path = ONNX / "workloads.json"
    input_path.write_text(json.dumps({"workloads": batches}))
    load_before = os.getloadavg()
    engines = [SwiftWorker("fp32", input_path), SwiftWorker("int8", input_path), SwiftWorker("int8-weights", input_path),
               OnnxWorker("ONNX Runtime fp32", ONNX / "keystroke.onnx", batches),
               OnnxWorker("ONNX Runtime int8", ONNX / "keystroke.int8.onnx", batches)]
    agreement(engines)
    if args.agreement_only:
        for e in engines:
            e.close()
        return
    times = {(e.name, w): [] for e in engines for w in SHAPES}
    cpu = {(e.name, w): [] for e in engines for w in SHAPES}
    for w in SHAPES:
        for e in engines:
            e.run(w, calls=1, warmup=2)
    started = time.time()
    for r in range(args.rounds):
        order = engines[r % len(engines):] + engines[:r % len(engines)]
        for w in SHAPES:
            for e in order:
                wall, used = e.run(w, calls=args.calls)
                times[(e.name, w)] += wall
                cpu[(e.name, w)] += used
    seconds = time.time() - started
    load_after = os.getloadavg()
    for e in engines:
        e.close()

    medians = {k: statistics.median(v) for k, v in times.items()}
    cpu_medians = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"MobileBERT keystroke (encoder + masked-LM head at the [MASK]), mobilebert-random (24 layers, hidden 512, "
          f"intra 128, RANDOM weights), 1 thread, {args.rounds} interleaved rounds x {args.calls} calls, {seconds:.0f} s; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} cores; "
          f"onnxruntime {onnxruntime.__version__}")
    print()
    print("| engine | " + " | ".join(f"{w} wall median ms | vs ORT fp32 | CPU median ms | vs ORT fp32" for w in SHAPES) + " |")
    print("|---|" + "---:|---:|---:|---:|" * len(SHAPES))
    for e in engines:
        cells = []
        for w in SHAPES:
            m, c = medians[(e.name, w)], cpu_medians[(e.name, w)]
            cells.append(f"{m:.2f} | {medians[('ONNX Runtime fp32', w)] / m:.2f}x | "
                         f"{c:.2f} | {cpu_medians[('ONNX Runtime fp32', w)] / c:.2f}x")
        print(f"| {e.name} | " + " | ".join(cells) + " |")
    result = {"rounds": args.rounds, "calls": args.calls, "seconds": seconds, "load_before": load_before,
              "load_after": load_after, "times_ms": {f"{k[0]} {k[1]}": v for k, v in times.items()},
              "cpu_ms": {f"{k[0]} {k[1]}": v for k, v in cpu.items()},
              "swift_info": engines[0].info, "onnxruntime": onnxruntime.__version__}
    out = ONNX / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"\n(raw times: {out.relative_to(ROOT)}; 'vs ORT fp32' above 1 means faster than ONNX Runtime fp32)")


if __name__ == "__main__":
    main()
