"""Measures and checks the batch-embedding jobs (examples/spark, examples/ray) on real text. Not CI.

1. Builds a Parquet of --rows real English sentences taken from this machine's Debian changelogs,
   copyright files and man pages (/usr/share/doc, /usr/share/man; not deduplicated), with a unique
   int64 id each and a `source` column naming the file; 3 rows get a null text on purpose, to
   check that a failing row is written with an error rather than dropped.
2. Runs plain `bert embed` over the same texts: the baseline vectors and rows/s.
3. Runs the Spark job in local[1] and local[2], the Ray job with 1 and 2 actors, and one fault run
   of each: Spark with a bert subprocess SIGKILLed mid-partition, Ray with one actor's worker
   process SIGKILLed mid-run (pids found in this script's own process tree, never by name).
4. Checks each output against the baseline: every id exactly once, null-text rows with an error,
   every other vector within --tolerance; prints rows/s.

    tools/.venv/bin/python tools/scaleout/run.py --rows 1000          # smoke
    tools/.venv/bin/python tools/scaleout/run.py                      # 100,000 rows, timed

Timed runs wait (up to --max-wait, 10 min) for the 1-minute load average to fall below --max-load, and record
it. Outputs and logs go under tools/scaleout/.data/ (gitignored).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tools", "scaleout", ".data")
SPARK_JOB = os.path.join(REPO, "examples", "spark", "embed.py")
RAY_JOB = os.path.join(REPO, "examples", "ray", "embed.py")
NULL_TEXT_ROWS = 3


class CheckFailed(AssertionError):
    """An output is not what the baseline says it should be."""


# --- the corpus ----------------------------------------------------------------------------------

_TROFF_ESCAPES = re.compile(r"\\f(\[[A-Z]*\]|[BIRPC])|\\\(..|\\[&e|^]|\\s[-+]?\d")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_SPACES = re.compile(r"\s+")


def _read(path: str) -> str:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def _man_to_text(source: str) -> str:
    lines = []
    for line in source.splitlines():
        if line.startswith((".B ", ".I ", ".BR ", ".IR ", ".BI ", ".RB ", ".IB ", ".RI ")):
            line = line.split(" ", 1)[1].replace('"', "")
        elif line.startswith((".", "'")):
            lines.append("")  # a request ends a paragraph
            continue
        lines.append(_TROFF_ESCAPES.sub("", line).replace("\\-", "-").replace("\\", ""))
    return "\n".join(lines)


def _sentences(text: str):
    for paragraph in re.split(r"\n\s*\n", text):
        flat = _SPACES.sub(" ", paragraph).strip()
        for sentence in _SENTENCE_END.split(flat):
            sentence = sentence.strip(" *-+")
            words = sentence.split()
            letters = sum(c.isalpha() for c in sentence)
            if 30 <= len(sentence) <= 400 and len(words) >= 5 and letters >= 0.6 * len(sentence):
                yield sentence


def corpus_files():
    doc = "/usr/share/doc"
    for package in sorted(os.listdir(doc)):
        folder = os.path.join(doc, package)
        for name in ("changelog.Debian.gz", "changelog.gz", "copyright"):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                yield path, _read
    for section in sorted(d for d in os.listdir("/usr/share/man") if re.fullmatch(r"man\d", d)):
        folder = os.path.join("/usr/share/man", section)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path, lambda p: _man_to_text(_read(p))


def build_corpus(rows: int) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = os.path.join(DATA, f"corpus-{rows}.parquet")
    if os.path.exists(path):
        return path
    texts: list[str | None] = []
    sources: list[str] = []
    for file, read in corpus_files():
        try:
            for sentence in _sentences(read(file)):
                texts.append(sentence)
                sources.append(file)
                if len(texts) == rows:
                    break
        except (OSError, EOFError):
            continue  # an unreadable file: there are plenty of others
        if len(texts) == rows:
            break
    if len(texts) < rows:
        raise SystemExit(f"found only {len(texts)} sentences on this machine; ask for --rows {len(texts)} or fewer")
    for k in range(1, NULL_TEXT_ROWS + 1):
        position = k * rows // (NULL_TEXT_ROWS + 1)
        texts[position], sources[position] = None, "(null on purpose)"
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "text": pa.array(texts, pa.string()),
                      "source": pa.array(sources, pa.string())})
    os.makedirs(DATA, exist_ok=True)
    pq.write_table(table, path + ".tmp", row_group_size=10_000)
    os.replace(path + ".tmp", path)
    return path


# --- processes -----------------------------------------------------------------------------------

def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    tree, found, todo = _children_map(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2:].split()[19]
    except OSError:
        return None


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:100].strip()
    except OSError:
        return "?"


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


@dataclass
class Run:
    name: str
    command: list[str]
    rows: int
    fault: str | None = None          # None, "kill-bert" (Spark) or "kill-actor" (Ray)
    load: str = ""
    wall: float = 0.0
    job_seconds: float | None = None
    events: list[str] = field(default_factory=list)  # what was killed or removed
    check: dict = field(default_factory=dict)


def run_job(run: Run, bert: str, log: str, env: dict, fault_after: float) -> None:
    """Runs one job, killing one bert or actor process once if asked; keeps every descendant pid
    it sees, and kills any that outlive the job (by pid)."""
    bert_exe = os.path.realpath(bert)
    seen: dict[int, str | None] = {}
    with open(log, "w") as out:
        start = time.perf_counter()
        job = subprocess.Popen(run.command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        bert_born: dict[int, float] = {}
        while job.poll() is None:
            time.sleep(0.2)
            for pid in descendants(job.pid):
                if pid not in seen:
                    seen[pid] = _start_time(pid)
                if _exe(pid) == bert_exe:
                    bert_born.setdefault(pid, time.perf_counter())
            if run.fault and not any(e.startswith(("bert", "actor")) for e in run.events):
                ripe = [pid for pid, born in bert_born.items()
                        if time.perf_counter() - born >= fault_after and _exe(pid) == bert_exe]
                if ripe:
                    victim = ripe[0]
                    if run.fault == "kill-actor":
                        with open(f"/proc/{victim}/stat") as f:
                            stat = f.read()
                        victim_parent = int(stat[stat.rindex(")") + 2:].split()[1])
                        os.kill(victim_parent, signal.SIGKILL)
                        run.events.append(f"actor worker pid {victim_parent} (parent of bert pid {victim}) "
                                          f"at {time.perf_counter() - start:.1f} s")
                    else:
                        os.kill(victim, signal.SIGKILL)
                        run.events.append(f"bert pid {victim} at {time.perf_counter() - start:.1f} s")
        run.wall = time.perf_counter() - start
    time.sleep(3)  # Spark's python daemon and Ray's workers end on their own shortly after the job
    strays = [pid for pid, started in seen.items() if started is not None and _start_time(pid) == started]
    for pid in strays:
        print(f"  {run.name}: killing pid {pid} ({_comm(pid)}), left running by the job", file=sys.stderr)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if job.returncode != 0:
        raise SystemExit(f"{run.name} failed with exit status {job.returncode}; see {log}")
    with open(log) as f:
        summaries = [line for line in f if line.startswith('{"job"')]
    if not summaries:
        raise SystemExit(f"{run.name} printed no summary; see {log}")
    run.job_seconds = json.loads(summaries[-1])["seconds"]


# --- the baseline and the checks -----------------------------------------------------------------

def run_baseline(corpus: str, args, env: dict) -> tuple[dict[int, "object"], Run]:
    import numpy as np
    import pyarrow.parquet as pq
    table = pq.read_table(corpus, columns=["id", "text"])
    ids, texts = table["id"].to_pylist(), table["text"].to_pylist()
    kept = [(i, t) for i, t in zip(ids, texts) if t is not None]
    jsonl = os.path.join(DATA, f"baseline-{args.rows}.input.jsonl")
    with open(jsonl, "w", encoding="utf-8") as f:
        for _, text in kept:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
    output = os.path.join(DATA, f"baseline-{args.rows}.jsonl")
    command = [args.bert, "embed", "--input-format", "jsonl", "--format", "jsonl", "--model", args.model,
               "--precision", args.precision, "--batch-size", str(args.batch_size), "--quiet",
               "--input", jsonl, "--output", output]
    run = Run("bert embed (baseline)", command, len(kept))
    run.load = wait_for_idle(args)
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    run.wall = run.job_seconds = time.perf_counter() - start
    vectors: dict[int, object] = {}
    with open(output) as f:
        for line in f:
            record = json.loads(line)
            vectors[kept[record["index"]][0]] = np.asarray(record["embedding"], dtype=np.float32)
    if len(vectors) != len(kept):
        raise CheckFailed(f"baseline has {len(vectors)} vectors for {len(kept)} texts")
    return vectors, run


def check_output(path: str, baseline: dict, null_ids: set[int], all_ids: int, tolerance: float) -> dict:
    import numpy as np
    import pyarrow.dataset as ds
    table = ds.dataset(path, format="parquet").to_table()
    ids = table["id"].to_pylist()
    counts: dict[int, int] = {}
    for i in ids:
        counts[i] = counts.get(i, 0) + 1
    duplicates = sum(c - 1 for c in counts.values() if c > 1)
    missing = all_ids - len(counts)
    extra = sum(1 for i in counts if not 0 <= i < all_ids)
    max_diff, wrong_errors = 0.0, []
    for row_id, vector, error in zip(ids, table["embedding"].to_pylist(), table["error"].to_pylist()):
        if row_id in null_ids:
            if vector is not None or not error:
                wrong_errors.append(row_id)
            continue
        if vector is None or error is not None:
            wrong_errors.append(row_id)
            continue
        max_diff = max(max_diff, float(np.abs(np.asarray(vector, dtype=np.float32) - baseline[row_id]).max()))
    result = {"rows": len(ids), "distinct_ids": len(counts), "missing": missing, "duplicates": duplicates,
              "extra": extra, "wrong_errors": wrong_errors[:10], "max_abs_diff": max_diff}
    if missing or duplicates or extra or wrong_errors or max_diff > tolerance:
        raise CheckFailed(f"{path}: {result}")
    return result


def halve_output(source: str, output: str) -> str:
    """Copies a finished output to `output` without every other Parquet file (without the second
    half of its rows when it is one file)."""
    import shutil
    import pyarrow.parquet as pq
    if not os.path.isdir(source):
        raise SystemExit(f"{source} is missing: run spark2 / ray2 before spark-resume / ray-resume")
    shutil.rmtree(output, ignore_errors=True)
    shutil.copytree(source, output)
    parts = sorted(f for f in os.listdir(output) if f.endswith(".parquet"))
    if len(parts) == 1:
        path = os.path.join(output, parts[0])
        table = pq.read_table(path)
        pq.write_table(table.slice(0, table.num_rows // 2), path)
        return f"cut its one file to {table.num_rows // 2} of {table.num_rows} rows before a skip-existing re-run"
    for name in parts[::2]:
        os.remove(os.path.join(output, name))
    return f"removed {len(parts[::2])} of {len(parts)} files before a skip-existing re-run"


def wait_for_idle(args) -> str:
    deadline = time.time() + args.max_wait
    while True:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        if args.no_wait or float(load.split()[0]) <= args.max_load or time.time() > deadline:
            return load
        print(f"  waiting for the load to fall below {args.max_load}: {load}", file=sys.stderr)
        time.sleep(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--bert", default=os.environ.get("BERT", "bert"))
    parser.add_argument("--model", default=os.path.join(REPO, "weights", "all-MiniLM-L6-v2"))
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--max-load", type=float, default=0.7)
    parser.add_argument("--no-wait", action="store_true", help="do not wait for an idle machine (smoke runs)")
    parser.add_argument("--max-wait", type=float, default=600, help="seconds to wait for --max-load before a timed run")
    parser.add_argument("--fault-after", type=float, default=None,
                        help="seconds a bert process has run before the fault runs kill it (default: 10, 0.3 under 5,000 rows)")
    parser.add_argument("--only", default="baseline,spark1,spark2,ray1,ray2,spark-fault,ray-fault,spark-resume,ray-resume",
                        help="comma-separated runs (the baseline always runs)")
    args = parser.parse_args()
    args.bert = os.path.realpath(args.bert) if os.path.sep in args.bert else args.bert
    fault_after = args.fault_after if args.fault_after is not None else (0.3 if args.rows < 5000 else 10.0)
    cores = os.cpu_count() or 2

    corpus = build_corpus(args.rows)
    print(f"corpus: {corpus}", file=sys.stderr)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               RAY_USAGE_STATS_ENABLED="0")
    baseline, baseline_run = run_baseline(corpus, args, env)
    null_ids = {k * args.rows // (NULL_TEXT_ROWS + 1) for k in range(1, NULL_TEXT_ROWS + 1)}

    def job(script, name, extra, threads):
        output = os.path.join(DATA, f"out-{name}-{args.rows}")
        return [sys.executable, script, "--input", corpus, "--text-column", "text", "--id-column", "id",
                "--output", output, "--bert", args.bert, "--model", args.model, "--precision", args.precision,
                "--batch-size", str(args.batch_size), "--threads", str(threads), "--mode", "overwrite"] + extra, output

    plans = {
        "spark1": (SPARK_JOB, ["--master", "local[1]", "--partitions", "4"], cores, None),
        "spark2": (SPARK_JOB, ["--master", "local[2]", "--partitions", "8"], max(1, cores // 2), None),
        "ray1": (RAY_JOB, ["--concurrency", "1"], cores, None),
        "ray2": (RAY_JOB, ["--concurrency", "2"], max(1, cores // 2), None),
        # local[2,4]: a failed task is tried up to 4 times (local mode's default is once).
        "spark-fault": (SPARK_JOB, ["--master", "local[2,4]", "--partitions", "8"], max(1, cores // 2), "kill-bert"),
        "ray-fault": (RAY_JOB, ["--concurrency", "2"], max(1, cores // 2), "kill-actor"),
    }
    # A re-run with --mode skip-existing over an output that lost half its files (a job that died
    # half way): it must fill in exactly the missing rows.
    plans["spark-resume"] = (SPARK_JOB, ["--master", "local[2]", "--partitions", "8"], max(1, cores // 2), None)
    plans["ray-resume"] = (RAY_JOB, ["--concurrency", "2"], max(1, cores // 2), None)
    runs = [baseline_run]
    for name in [n for n in args.only.split(",") if n and n != "baseline"]:
        script, extra, threads, fault = plans[name]
        command, output = job(script, name, extra, threads)
        run = Run(name, command, args.rows, fault)
        if name.endswith("-resume"):
            run.events.append(halve_output(os.path.join(DATA, f"out-{name.split('-')[0]}2-{args.rows}"), output))
            command[command.index("--mode") + 1] = "skip-existing"
        run.load = wait_for_idle(args)
        print(f"{name}: {' '.join(command)}", file=sys.stderr)
        run_job(run, args.bert, os.path.join(DATA, f"{name}-{args.rows}.log"), env, fault_after)
        run.check = check_output(output, baseline, null_ids, args.rows, args.tolerance)
        if fault and not any(k.startswith(("bert", "actor")) for k in run.events):
            raise CheckFailed(f"{name}: the job ended before a bert process had run {fault_after} s; nothing was killed")
        runs.append(run)
        print(f"  {name}: {args.rows / run.job_seconds:.1f} rows/s, {run.check}, {run.events}", file=sys.stderr)

    print(f"\n{'run':24} {'rows/s (job)':>12} {'rows/s (wall)':>13} {'load 1/5/15':>16}  check")
    report = []
    for run in runs:
        # A resume run embeds only the rows its output lost: its rows/s says nothing.
        rates = ("—", "—") if run.name.endswith("-resume") else \
            (f"{run.rows / run.job_seconds:.1f}", f"{run.rows / run.wall:.1f}")
        print(f"{run.name:24} {rates[0]:>12} {rates[1]:>13} {run.load:>16}  "
              f"{run.check or 'the reference'} {'; ' + ', '.join(run.events) if run.events else ''}")
        report.append({"name": run.name, "rows": run.rows, "job_seconds": run.job_seconds, "wall_seconds": run.wall,
                       "load": run.load, "check": run.check, "events": run.events, "command": run.command})
    with open(os.path.join(DATA, f"results-{args.rows}.json"), "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
