#!/usr/bin/env python3
"""The Spark and Ray jobs (examples/spark/embed.py, examples/ray/embed.py) from a plain venv that
has only the swiftbert wheel plus PySpark, Ray Data, pyarrow and pandas: no --bert, no `bert` on
PATH, no Swift toolchain on PATH, an environment emptied with `env -i PATH=/usr/bin:/bin HOME=$HOME`
(OPENBLAS_CORETYPE is kept when set).
By hand, not in CI (JVM and Ray start-ups; docs/scale-out.md, "Not in CI").

Run by tools/python/scaleout_wheel_check.sh, which makes the venv; this file runs inside it:

    VENV/bin/python tools/python/scaleout_wheel_check.py --rows 3000 --swiftbert-home .

Builds the corpus of tools/scaleout/run.py (real Debian changelog sentences, 3 null texts on
purpose), embeds it with the wheel's own `bert embed` (python -m swiftbert) as the reference, runs
the Spark job (local[2], --threads 1) and the Ray job (2 actors, --threads 1) under `env -i`, and
checks each output: every id exactly once, the null-text rows with a null vector and an error, every
other row a vector bit-identical to `bert embed`'s. Prints one JSON line per run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "scaleout"))

import numpy as np  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import run as scaleout  # noqa: E402  (tools/scaleout/run.py: the corpus)


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def clean_env() -> dict:
    """What `env -i PATH=/usr/bin:/bin HOME=$HOME` leaves, plus OPENBLAS_CORETYPE when it is set (a
    machine that needs it to pick OpenBLAS's kernels needs it in every run)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]}
    if "OPENBLAS_CORETYPE" in os.environ:
        env["OPENBLAS_CORETYPE"] = os.environ["OPENBLAS_CORETYPE"]
    return env


def reference(corpus: str, home: str, work: str) -> dict:
    """id -> the wheel's `bert embed` vector, for every non-null text."""
    table = pq.read_table(corpus, columns=["id", "text"])
    kept = [(i, t) for i, t in zip(table["id"].to_pylist(), table["text"].to_pylist()) if t is not None]
    source, output = os.path.join(work, "reference.jsonl"), os.path.join(work, "reference.npy")
    with open(source, "w", encoding="utf-8") as f:
        for _, text in kept:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
    subprocess.run([sys.executable, "-m", "swiftbert", "embed", "--input-format", "jsonl", "--format", "npy",
                    "--model", "all-MiniLM-L6-v2", "--input", source, "--output", output, "--quiet"],
                   check=True, env=clean_env() | {"SWIFTBERT_HOME": home})
    vectors = np.load(output)
    assert vectors.shape[0] == len(kept), (vectors.shape, len(kept))
    return {row_id: vectors[k] for k, (row_id, _) in enumerate(kept)}


def check(path: str, expected: dict, all_ids: int) -> dict:
    table = ds.dataset(path, format="parquet").to_table()
    ids = table["id"].to_pylist()
    distinct = set(ids)
    wrong, differing, max_diff, null_with_error, identical = [], 0, 0.0, 0, 0
    for row_id, vector, error in zip(ids, table["embedding"].to_pylist(), table["error"].to_pylist()):
        if row_id not in expected:  # a null text
            if vector is not None or not error:
                wrong.append(row_id)
            else:
                null_with_error += 1
            continue
        if vector is None or error is not None:
            wrong.append(row_id)
            continue
        got = np.asarray(vector, dtype=np.float32)
        if not np.array_equal(got.view(np.uint32), expected[row_id].view(np.uint32)):
            differing += 1
            max_diff = max(max_diff, float(np.abs(got - expected[row_id]).max()))
        else:
            identical += 1
    result = {"rows": len(ids), "distinct_ids": len(distinct), "missing": all_ids - len(distinct & set(range(all_ids))),
              "duplicates": len(ids) - len(distinct), "null_text_rows": all_ids - len(expected),
              "null_text_rows_with_error": null_with_error,
              "vectors_bit_identical": identical,
              "wrong_rows": wrong[:10], "vectors_not_bit_identical": differing, "max_abs_diff": max_diff}
    result["ok"] = (result["missing"] == 0 and result["duplicates"] == 0 and not wrong and differing == 0
                    and len(ids) == all_ids)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--swiftbert-home", default=REPO, help="holds weights/all-MiniLM-L6-v2")
    parser.add_argument("--only", default="spark,ray")
    args = parser.parse_args()
    home = os.path.abspath(args.swiftbert_home)
    assert shutil.which("bert", path="/usr/bin:/bin") is None, "a bert on /usr/bin:/bin would hide the wheel's"
    corpus = scaleout.build_corpus(args.rows)
    work = tempfile.mkdtemp(prefix="swiftbert-scaleout-")
    start = time.perf_counter()
    expected = reference(corpus, home, work)
    print(json.dumps({"run": "bert embed (the wheel's, reference)", "rows": len(expected),
                      "seconds": round(time.perf_counter() - start, 1)}), flush=True)
    jobs = {
        "spark": [os.path.join(REPO, "examples/spark/embed.py"), "--master", "local[2]"],
        "ray": [os.path.join(REPO, "examples/ray/embed.py"), "--concurrency", "2"],
    }
    failed = False
    for name in args.only.split(","):
        output = os.path.join(work, f"{name}.parquet")
        command = ["env", "-i", *(f"{k}={v}" for k, v in clean_env().items()), sys.executable, *jobs[name],
                   "--input", corpus, "--text-column", "text", "--id-column", "id", "--output", output,
                   "--swiftbert-home", home, "--threads", "1"]
        before = load()
        start = time.perf_counter()
        job = subprocess.run(command, capture_output=True, text=True, cwd=work)
        wall = time.perf_counter() - start
        summary = next((json.loads(line) for line in job.stdout.splitlines() if line.startswith('{"job"')), None)
        if job.returncode != 0 or summary is None:
            print(json.dumps({"run": name, "returncode": job.returncode, "stderr_tail": job.stderr[-3000:]}), flush=True)
            failed = True
            continue
        result = check(output, expected, args.rows)
        failed |= not result["ok"]
        print(json.dumps({"run": name, "command": " ".join(command), "load_before": before, "wall_seconds": round(wall, 1),
                          "job": summary, "check": result}), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
