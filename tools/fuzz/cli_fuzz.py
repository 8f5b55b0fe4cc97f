#!/usr/bin/env python3
"""Random `bert` command lines with hostile values: none may end in a trap.

Every subcommand but pull (the network), with 0–5 of its own options
(read from `bert --experimental-dump-help`), each given a value from a pool picked by the
option's value name: numbers out of range, non-numbers, missing and special files, a directory,
/dev/full for an output, models that do not exist or are not models, invalid UTF-8 in arguments
and files, texts with many masks, controls and long runs. Stdin is empty, hostile bytes or text.

A run fails when the process ends by a signal, prints a Swift runtime trap ("Fatal error",
"Stack dump"), or exits with a status outside bert's sysexits set (docs/cli.md). A run that
takes longer than --timeout is killed and counted apart (a long but legal job, such as a
large bench, is not a defect by itself; the line says which). A `serve` that is still running
after 20 s got a legal command line: it is sent SIGTERM and must exit 0 within its grace.

    OPENBLAS_CORETYPE=Haswell tools/.venv/bin/python tools/fuzz/cli_fuzz.py --runs 1500 --seed 1
"""
import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# docs/cli.md: 0 success, 64 usage, 65 bad data, 66 missing input or model, 69 unavailable
# (a network or pull failure), 70 internal, 73 cannot create output, 74 write error.
EXPECTED = {0, 64, 65, 66, 69, 73, 74}
BERT = None
SKIPPED = {"pull", "help"}
# The model whose head a subcommand needs, drawn most often for it.
MODEL_FOR = {"classify": "bert-classifier", "rerank": "bert-cross-encoder", "ner": "bert-ner", "fill": "distilbert-mlm",
             "suggest": "splade-tiny", "train-classifier": "all-MiniLM-L6-v2"}
# How many of the first values of an option's pool are legal (2 when not listed).
LEGAL = {"model": 7, "precision": 6, "i": 6, "input-format": 2, "format": 3, "pooling": 3, "aggregation": 5, "labels": 1,
         "hypothesis-template": 1, "prefix": 2, "prompt-name": 2, "batch": 2, "seq": 2, "threads": 2, "seconds": 1,
         "train": 2, "output": 1, "top-k": 5, "batch-size": 5, "max-length": 5, "chunk": 5, "overlap": 3}
TRAP_WORDS = ("Fatal error", "Stack dump", "Segmentation fault", "Illegal instruction", "Aborted", "SIGSEGV", "SIGILL")


def make_files(folder):
    """The file pool: name → path."""
    files = {"missing": os.path.join(folder, "no-such-file.txt"), "dev-null": "/dev/null", "directory": folder}

    def write(name, data):
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        files[name] = path

    rng = random.Random(7)
    write("empty.txt", b"")
    write("lines.txt", "The cat sat on the mat.\nParis is the capital of France.\nI would like a glass of water.\n".encode())
    write("masks.txt", b"The [MASK] sat on the mat.\n[MASK]\n[MASK] [MASK] [MASK]\n")
    write("binary.bin", bytes(rng.randrange(256) for _ in range(4096)))
    write("invalid-utf8.txt", b"good line\nbad \xff\xfe line\n\xc3\x28\n")
    write("nul.txt", b"a\x00b\nc\x00\n")
    write("long-line.txt", b"word " * 200_000 + b"\n")
    write("many-lines.txt", b"".join(f"line number {i} with [MASK]\n".encode() for i in range(3000)))
    write("crlf.txt", b"one\r\ntwo\r\n\r\n")
    write("jsonl.jsonl", b'{"text": "a"}\n{"text": "b", "label": "x"}\n{"text": 5}\n[1,2]\nnot json\n{"text": "\\ud800"}\n')
    write("labelled.jsonl", b'{"text": "good", "label": "pos"}\n{"text": "bad", "label": "neg"}\n' * 20)
    write("one-label.jsonl", b'{"text": "good", "label": "pos"}\n' * 5)
    write("words.txt", b"cat\ndog\n\n\xff\nwater\n")
    write("embeddings.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 384), }" + b" " * 40 + b"\n" + b"\x00" * 100)
    # Small converted models with the heads the subcommands need (the suite's fixtures).
    heads = os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures/heads")
    for name in ("bert-classifier", "bert-cross-encoder", "bert-ner", "distilbert-mlm"):
        path = os.path.join(folder, name)
        subprocess.run([BERT, "convert", os.path.join(heads, name), path], check=True, capture_output=True)
        files[name] = path
    files["hf-checkpoint"] = os.path.join(heads, "bert-ner")
    # A folder that looks like a converted model and is not one.
    fake = os.path.join(folder, "fake-model")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "config.json"), "w") as f:
        f.write('{"model_type": "bert", "hidden_size": -1}')
    files["fake-model"] = fake
    return files


def value_pool(name, value_name, files, out_dir):
    key = (value_name or name or "").lower()
    numbers = ["1", "2", "3", "16", "512", "0", "-1", "100000", "99999999999999999999", "1e3", "nan", "inf", "-0", "abc", "", "0x10", " 4"]
    if key in ("model", "names") or name == "model":
        return ["all-MiniLM-L6-v2", "splade-tiny", files["bert-classifier"], files["bert-cross-encoder"], files["bert-ner"],
                files["distilbert-mlm"], "all-mpnet-base-v2", "no-such-model", "", "/", files["dev-null"], files["hf-checkpoint"],
                files["fake-model"], files["directory"], os.path.join(ROOT, "weights/all-MiniLM-L6-v2/config.json"),
                "all-MiniLM-L6-v2,splade-tiny", "../../etc", "\u00e9\u0301"]
    if name == "precision" or key == "precision":
        return ["fp32", "bf16", "int8", "int8-attention", "int8-weights", "int8-static", "fp16", "", "FP32", "fp32,bf16", "fp32,,int8"]
    if name == "train":
        return [files["labelled.jsonl"], files["one-label.jsonl"]] + list(files.values())
    if name in ("o", "output", "save-features") or key == "dir" and name != "features":
        return [os.path.join(out_dir, "out"), "/dev/full", files["directory"], "/proc/nope/out", files["dev-null"], ""]
    if name == "i":
        return [files[f] for f in ("lines.txt", "masks.txt", "jsonl.jsonl", "many-lines.txt", "crlf.txt", "long-line.txt")] + list(files.values())
    if key in ("file", "calibrate", "sentences") or name in ("i", "corpus", "embeddings", "documents", "train", "valid", "test", "words", "features"):
        return list(files.values()) + [""]
    if name in ("input-format",):
        return ["text", "jsonl", "lines", "json", "", "csv"]
    if name == "format":
        return ["json", "jsonl", "npy", "tsv", "csv", "binary", ""]
    if key in ("right|left",):
        return ["right", "left", "Left", "up", ""]
    if key in ("none|mean",) or name == "chunk-pooling":
        return ["none", "mean", "max", ""]
    if name in ("pooling",):
        return ["mean", "cls", "max", "lasttoken", "last", "weird", ""]
    if name in ("aggregation",):
        return ["none", "simple", "first", "average", "max", "bogus", ""]
    if name in ("optimizer",):
        return ["lbfgs", "adam", "sgd", "", "x"]
    if name in ("labels",):
        return ["positive,negative", "", ",", ",,a", "x" * 5000, "a," * 300, "ñ,ü"]
    if name in ("hypothesis-template",):
        return ["This is {}.", "no placeholder", "{}{}", "{", "", "{} " * 1000]
    if name in ("prefix", "letters"):
        return ["dr", "", "ZZZZ", "é", "##", "[MASK]", "a" * 1000]
    if name in ("prompt", "prompt-name", "text", "name"):
        return ["query", "document", "", "query: ", "x" * 10000, "[MASK]", "nope"]
    if name in ("batch", "seq", "threads") and key == "list":
        return ["1", "1,2", "0", "-1", "16,", ",", "100000", "abc", "2,2,2"]
    if name in ("seconds",):
        return ["0", "-1", "0.01", "nan", "inf", "abc", "0.2"]
    if name in ("smoothing", "C", "tolerance", "learning-rate", "weight-decay"):
        return ["0", "-1", "0.5", "1", "nan", "inf", "1e309", "abc", ""]
    if name == "port":
        return ["0", "-1", "70000", "abc"]
    if name in ("host",):
        return ["127.0.0.1", "::1", "localhost", "999.1.1.1", "", "example.invalid"]
    if name in ("cors-origin", "api-key", "served-model-name"):
        return ["x", "*", "", "a b", "\u00e9"]
    if name in ("trusted-proxies",):
        return ["127.0.0.1,10.0.0.0/8", "", "::1/129", "proxy", ",,"]
    if name in ("request-timeout", "read-timeout", "write-timeout", "shutdown-grace"):
        return ["1", "30", "0", "-1", "inf", "nan", "1e300", "abc"]
    if name in ("memory-probe",):
        return ["", "x", "1"]
    return numbers


def hostile_texts(rng):
    pool = ["", " ", "[MASK]", "The [MASK] sat on the mat.", "[MASK] " * 300, "a" * 100_000, "word " * 5000,
            "\t\n\r\x0b\x0c", "\u200b\u200d\ufeff", "e\u0301" * 500, "\U0001F600" * 1000, "\u202e\u05d0\u05d1 abc",
            "<mask>", "[CLS] [SEP] [PAD] [UNK]", "Paris is the capital of France.", "\x01\x02\x1b[31m", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
            "--model", "-", "--", "query: hello", "a" * 3000 + " [MASK]"]
    return rng.choice(pool)


def invalid_utf8_argument(rng):
    return rng.choice([b"\xff", b"caf\xe9", b"\xc3\x28 [MASK]", b"\xed\xa0\x80"])


def build_command(rng, bert, spec, files, out_dir):
    name = spec["commandName"]
    args = [bert, name]
    options = [a for a in spec.get("arguments", []) if a["kind"] in ("option", "flag")
               and a["names"][0]["name"] not in ("h", "help", "version")]
    positionals = [a for a in spec.get("arguments", []) if a["kind"] == "positional"]
    for argument in positionals:
        if rng.random() < 0.15:
            continue  # a missing argument
        count = 1 if not argument.get("isRepeating") else rng.choice([1, 1, 2, 3])
        for _ in range(count):
            if name == "convert":
                args.append(rng.choice([files["directory"], files["missing"], files["fake-model"], files["binary.bin"], os.path.join(out_dir, "converted")]))
            elif name == "quantize":
                args.append(rng.choice([files["fake-model"], files["missing"], "no-such-model", files["dev-null"]]))
            elif rng.random() < 0.08:
                args.append(invalid_utf8_argument(rng))
            else:
                args.append(hostile_texts(rng))
    required = [o for o in options if not o.get("isOptional", True)]
    optional = [o for o in options if o.get("isOptional", True)]
    chosen = [o for o in required if rng.random() < 0.9] + rng.sample(optional, k=min(len(optional), rng.choice([0, 1, 2, 3, 4])))
    for option in chosen:
        flag = option["names"][0]
        spelled = ("-" if flag["kind"] == "short" else "--") + flag["name"]
        if option["kind"] == "flag":
            args.append(spelled)
            continue
        pool = value_pool(flag["name"], option.get("valueName"), files, out_dir)
        if flag["name"] == "model" and name in MODEL_FOR:
            pool = [files.get(MODEL_FOR[name], MODEL_FOR[name])] * 4 + pool
        # Mostly legal values, so that runs get past the parser into the pipelines.
        legal = pool[:LEGAL.get(flag["name"], 2)]
        args += [spelled, rng.choice(legal if rng.random() < 0.6 else pool)]
    if name == "serve" and "--port" not in args:
        args += ["--port", "0"]
    if name == "bench":
        # Keep a bench short unless the draw set its time: a timeout is not a finding.
        if "--seconds" not in args:
            args += ["--seconds", "0.05"]
        if "--accuracy-sentences" not in args:
            args += ["--accuracy-sentences", "0"]
    return args


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bert", default=os.path.join(ROOT, ".build/release/bert"))
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--only", help="comma-separated subcommands to fuzz")
    parser.add_argument("--verbose", action="store_true", help="print every run's command, status and last stderr line")
    parser.add_argument("--keep", help="folder to copy each failing run's command and output into")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    global BERT
    BERT = options.bert
    tree = json.loads(subprocess.run([options.bert, "--experimental-dump-help"], capture_output=True, check=True).stdout)
    specs = [c for c in tree["command"]["subcommands"] if c["commandName"] not in SKIPPED]
    if options.only:
        wanted = set(options.only.split(","))
        specs = [c for c in specs if c["commandName"] in wanted]
    env = dict(os.environ, SWIFTBERT_HOME=ROOT, OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", "Haswell"))
    env.pop("SWIFTBERT_API_KEY", None)
    stdin_pool = [b"", b"The cat sat on the mat.\n", b"\xff\xfe\x00bad\n", b"[MASK]\n" * 50, b"x" * 3_000_000, None]
    statuses = collections.Counter()
    failures, timeouts = [], []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="cli-fuzz-") as folder:
        files = make_files(folder)
        for run in range(options.runs):
            spec = rng.choice(specs)
            if spec["commandName"] == "serve" and len(specs) > 1 and rng.random() < 0.75:
                spec = rng.choice(specs)  # a server takes 20 s a run: a quarter of the others' share
            out_dir = tempfile.mkdtemp(dir=folder)
            command = build_command(rng, options.bert, spec, files, out_dir)
            stdin = rng.choice(stdin_pool)
            if spec["commandName"] == "serve":
                status, stderr = run_server(command, env, out_dir)
            else:
                try:
                    result = subprocess.run(command, input=stdin if stdin is not None else b"", capture_output=True,
                                            timeout=options.timeout, env=env, cwd=out_dir)
                except subprocess.TimeoutExpired:
                    timeouts.append(command)
                    print(f"timeout ({options.timeout:.0f} s): {printable(command)}", flush=True)
                    continue
                stderr = result.stderr.decode("utf-8", "replace")
                status = result.returncode
            statuses[(spec["commandName"], status)] += 1
            if options.verbose:
                last = stderr.strip().splitlines()[-1:] or [""]
                print(f"{status}: {printable(command)[:300]}\n    {last[0][:300]}", flush=True)
            trap = status < 0 or status >= 128 or any(word in stderr for word in TRAP_WORDS)
            if trap or status not in EXPECTED:
                kind = "TRAP" if trap else f"status {status}"
                failures.append((kind, command, stdin, stderr[-2000:]))
                print(f"{kind}: {printable(command)}\n  stdin: {repr(stdin)[:80]}\n  stderr: {stderr[-600:]}", flush=True)
                if options.keep:
                    os.makedirs(options.keep, exist_ok=True)
                    with open(os.path.join(options.keep, f"run-{run}.txt"), "w") as f:
                        f.write(f"{kind}\n{printable(command)}\nstdin {repr(stdin)[:200]}\n{stderr}")
            shutil.rmtree(out_dir, ignore_errors=True)
            if (run + 1) % 100 == 0:
                print(f"{run + 1} runs, {len(failures)} failures, {len(timeouts)} timeouts, {time.time() - started:.0f} s", flush=True)
    by_command = collections.defaultdict(dict)
    for (command, status), count in sorted(statuses.items()):
        by_command[command][status] = count
    print("exit statuses by subcommand:")
    for command, counts in sorted(by_command.items()):
        print(f"  {command}: " + ", ".join(f"{status}×{count}" for status, count in sorted(counts.items())))
    print(f"{options.runs} runs (seed {options.seed}) in {time.time() - started:.0f} s: {len(failures)} failures, {len(timeouts)} timeouts")
    sys.exit(1 if failures else 0)


def run_server(command, env, folder):
    """A serve command line: its status, or when it is still serving after 20 s, its status after SIGTERM."""
    with open(os.path.join(folder, "serve.err"), "wb") as err:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=folder)
        try:
            status = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGTERM)
            try:
                status = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                status = process.wait()
                with open(os.path.join(folder, "serve.err"), "ab") as note:
                    note.write(b"\nFuzzer: no exit within 60 s of SIGTERM\n")
                status = 255
    with open(os.path.join(folder, "serve.err"), "rb") as err:
        return status, err.read().decode("utf-8", "replace")


def printable(command):
    return " ".join(repr(a) if isinstance(a, bytes) else (a if a and " " not in a and len(a) < 80 else repr(a[:80] + ("…" if len(a) > 80 else ""))) for a in command)


if __name__ == "__main__":
    main()
