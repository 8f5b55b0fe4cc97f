#!/usr/bin/env python3
"""The Spark and Ray jobs on a cluster's own processes (issue 46), on this one machine: a Spark
standalone Master and two Workers (separate JVMs, 1 core each) with the job sent by spark-submit,
and a Ray head started with `ray start --head` with the job sent by `ray job submit`. By hand, not
in CI (docs/scale-out.md, "On a standalone Spark cluster and a Ray cluster (one machine)").

Run by tools/python/scaleout_cluster_check.sh, which makes the venv (only the swiftbert wheel and
the scaleout pins, plus ray[default] for the job API); this file runs inside it. Everything it
starts runs under `env -i PATH=/usr/bin:/bin HOME=$HOME` (plus OPENBLAS_CORETYPE when set, and
SPARK_HOME / SPARK_LOCAL_IP for Spark): no bert on PATH, no --bert, so the executors and actors
start the wheel's bert from the venv's interpreter.

Runs, each checked like tools/python/scaleout_wheel_check.py (its corpus, reference and check):
- spark-local-home: spark-submit --master spark://127.0.0.1:PORT, spark.pyspark.python = the venv's
  python, --swiftbert-home the repository (a path every "node" has);
- spark-archives: the same with the model shipped by Spark, --archives swiftbert-home.tgz#swiftbert
  --swiftbert-home sparkfiles:swiftbert --model minilm-shipped (a name only the archive holds);
- spark-direct: VENV/bin/python examples/spark/embed.py --master spark://127.0.0.1:PORT with
  PYSPARK_PYTHON set to the venv's python (no spark-submit);
- ray-job: ray job submit --working-dir examples -- VENV/bin/python ray/embed.py --address auto,
  against a head with token authentication on and a token of its own (not ~/.ray/auth_token).
While a job runs, the process trees under the Workers and the Ray head are sampled, to show which
JVM or Ray worker each bert ran under and with which SWIFTBERT_HOME, and the TCP sockets that the
started processes listen on are recorded (Spark's all on 127.0.0.1; Ray's gcs_server, raylet and
workers on every interface, which `ray start` 2.60 has no option against).

Stops exactly what it started, by pid: each Worker and the Master by SIGTERM to the JVM's pid (the
spark-class script execs java), the Ray head by SIGTERM to its `ray start --head --block` process,
whose handler stops the processes of that node. Not `ray stop`, which stops every Ray of this user
on the machine, nor sbin/stop-*.sh, which go by pid files of daemons this script does not start.
Any descendant seen during the run that outlives its root is then ended by pid (checked against
its start time, so a reused pid is never hit). Prints one JSON line per run and a last line with
every pid started or seen and how it ended.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scaleout_wheel_check as wheel_check  # noqa: E402  (corpus, reference, check, clean_env)

scaleout = wheel_check.scaleout  # tools/scaleout/run.py: build_corpus and the /proc helpers
REPO = wheel_check.REPO
HOST = "127.0.0.1"
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt")


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((HOST, port)) != 0


def wait_for(what: str, probe, timeout: float, alive=lambda: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"{what}: the process exited")
        try:
            value = probe()
            if value:
                return value
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError(f"{what}: not ready after {timeout:.0f} s")


def http_json(url: str, headers: dict | None = None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5) as response:
        return json.loads(response.read())


def environ_of(pid: int) -> dict:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
        return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
    except OSError:
        return {}


def describe(pid: int) -> str:
    """`pid name`: a JVM by its main class, anything else by its first words."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"{pid} ?"
    if argv and argv[0].endswith("/java"):
        main = next((a for a in argv[1:] if a.startswith("org.apache.")), "java")
        return f"{pid} java {main.rsplit('.', 1)[-1]}"
    return f"{pid} {' '.join(os.path.basename(a) if k == 0 else a for k, a in enumerate(argv[:4]))[:70]}"


def listening(processes: "Processes") -> dict[str, list[str]]:
    """The TCP sockets that processes this script started listen on, by root: `address:port (name)`."""
    processes.sweep()
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    found: dict[str, set[str]] = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 6:
            continue
        for pid in re.findall(r"pid=(\d+)", fields[5]):
            seen = processes.seen.get(int(pid))
            if seen and processes.alive(int(pid)):
                name = re.search(r'\(\("([^"]*)"', fields[5])
                found.setdefault(seen[1], set()).add(f"{fields[3]} ({name.group(1) if name else pid})")
    return {root: sorted(addresses) for root, addresses in sorted(found.items())}


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[1])
    except OSError:
        return None


class Processes:
    """The roots this script starts, and every descendant seen, as (pid, start time)."""

    def __init__(self, logs: str):
        self.logs = logs
        self.roots: dict[str, subprocess.Popen] = {}
        self.seen: dict[int, tuple[str | None, str, str]] = {}  # pid -> (start time, root name, command)
        self.ended: dict[int, str] = {}
        self.lock = threading.Lock()

    def start(self, name: str, command: list[str], env: dict, cwd: str | None = None) -> subprocess.Popen:
        log = open(os.path.join(self.logs, f"{name}.log"), "w")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd or self.logs,
                                   start_new_session=True)
        log.close()
        self.roots[name] = process
        self.seen[process.pid] = (scaleout._start_time(process.pid), name, " ".join(command)[:100])
        return process

    def sweep(self) -> dict[str, list[int]]:
        """Records every live descendant of every live root; returns them by root."""
        found = {}
        with self.lock:
            for name, root in self.roots.items():
                if root.poll() is not None:
                    continue
                found[name] = scaleout.descendants(root.pid)
                for pid in found[name]:
                    if pid not in self.seen:
                        self.seen[pid] = (scaleout._start_time(pid), name, scaleout._comm(pid))
        return found

    def alive(self, pid: int) -> bool:
        start = self.seen[pid][0]
        return start is not None and scaleout._start_time(pid) == start

    def stop(self, name: str, timeout: float = 60) -> None:
        """SIGTERM to the root, SIGKILL after timeout; then ends its surviving descendants by pid."""
        root = self.roots[name]
        self.sweep()
        if root.poll() is None:
            root.send_signal(signal.SIGTERM)
            try:
                root.wait(timeout)
                self.ended[root.pid] = f"SIGTERM, exit {root.returncode}"
            except subprocess.TimeoutExpired:
                root.kill()
                root.wait()
                self.ended[root.pid] = "SIGKILL after SIGTERM timed out"
        else:
            self.ended.setdefault(root.pid, f"exited by itself, {root.returncode}")
        self.end_leftovers(name)

    def end_leftovers(self, name: str) -> None:
        leftovers = [pid for pid, (_, root, _) in self.seen.items() if root == name and pid != self.roots[name].pid]
        deadline = time.monotonic() + 15
        while any(self.alive(p) for p in leftovers) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in leftovers:
            if not self.alive(pid):
                self.ended.setdefault(pid, "gone after its root stopped")
                continue
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(20):
                    time.sleep(0.5)
                    if not self.alive(pid):
                        break
                if self.alive(pid):
                    os.kill(pid, signal.SIGKILL)
                    self.ended[pid] = "SIGKILL (outlived its root)"
                else:
                    self.ended[pid] = "SIGTERM (outlived its root)"
            except ProcessLookupError:
                self.ended[pid] = "gone after its root stopped"

    def report(self) -> dict:
        return {"roots": {name: p.pid for name, p in self.roots.items()},
                "still_alive": [pid for pid in self.seen if self.alive(pid)],
                "pids": [{"pid": pid, "root": root, "command": command, "ended": self.ended.get(pid, "?")}
                         for pid, (_, root, command) in sorted(self.seen.items())]}


class Sampler(threading.Thread):
    """While a job runs: the bert processes under the given roots, with their chain of parents up
    to the root, their SWIFTBERT_HOME and OPENBLAS_CORETYPE, and the root each ran under."""

    def __init__(self, processes: Processes, roots: list[str]):
        super().__init__(daemon=True)
        self.processes, self.roots = processes, roots
        self.berts: dict[int, dict] = {}
        self.sockets: dict[str, set[str]] = {}
        self.done = threading.Event()

    def run(self):
        ticks = 0
        while not self.done.wait(0.5):
            ticks += 1
            found = self.processes.sweep()
            if ticks % 10 == 1:
                for root, addresses in listening(self.processes).items():
                    self.sockets.setdefault(root, set()).update(addresses)
            for name, pids in found.items():
                if name not in self.roots:
                    continue
                root = self.processes.roots[name].pid
                for pid in pids:
                    if pid in self.berts or os.path.basename(scaleout._exe(pid) or "") != "bert":
                        continue
                    env = environ_of(pid)
                    chain, up = [], parent_of(pid)
                    while up and up != root:
                        chain.append(describe(up))
                        up = parent_of(up)
                    self.berts[pid] = {"under": name, "exe": scaleout._exe(pid), "parents": chain,
                                       "SWIFTBERT_HOME": env.get("SWIFTBERT_HOME"),
                                       "OPENBLAS_CORETYPE": env.get("OPENBLAS_CORETYPE")}

    def summary(self) -> dict:
        self.done.set()
        self.join()
        by_root: dict[str, int] = {}
        for bert in self.berts.values():
            by_root[bert["under"]] = by_root.get(bert["under"], 0) + 1
        return {"bert_processes_by_root": by_root, "berts": list(self.berts.values()),
                "listening_during_job": {root: sorted(a) for root, a in sorted(self.sockets.items())}}


def run_job(name: str, command: list[str], env: dict, cwd: str, processes: Processes, roots: list[str],
            output: str, expected: dict, rows: int) -> bool:
    """Runs one job client (spark-submit, the job's own python, ray job submit) as a root of its own,
    so that its processes are tracked and ended like the cluster's; then checks its output."""
    sampler = Sampler(processes, roots)
    before = wheel_check.load()
    sampler.start()
    start = time.perf_counter()
    job = processes.start(name, command, env, cwd)
    job.wait()
    wall = time.perf_counter() - start
    seen = sampler.summary()
    processes.stop(name)  # its leftovers, if any
    log = os.path.join(processes.logs, f"{name}.log")
    with open(log, errors="replace") as f:
        text = f.read()
    summary = next((json.loads(line[line.index('{"job"'):]) for line in text.splitlines() if '{"job"' in line), None)
    record = {"run": name, "command": " ".join(command), "load_before": before, "wall_seconds": round(wall, 1),
              "returncode": job.returncode, "job": summary, "processes": seen}
    ok = job.returncode == 0 and summary is not None
    if ok:
        record["check"] = wheel_check.check(output, expected, rows)
        ok = record["check"]["ok"]
    else:
        record["log"] = log
    print(json.dumps(record), flush=True)
    return ok


def model_archive(home: str, path: str) -> None:
    """swiftbert-home.tgz holding weights/minilm-shipped: all-MiniLM-L6-v2's FP32 files under a name
    that exists nowhere else, so a run that finds it got it through Spark."""
    source = os.path.join(home, "weights", "all-MiniLM-L6-v2")
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for file in MODEL_FILES:
            tar.add(os.path.join(source, file), arcname=f"weights/minilm-shipped/{file}")


def spark(args, venv: str, processes: Processes, work: str, corpus: str, expected: dict) -> bool:
    import pyspark
    spark_home = os.path.dirname(os.path.abspath(pyspark.__file__))
    conf = os.path.join(work, "spark-conf")
    os.makedirs(conf, exist_ok=True)  # empty: no spark-defaults.conf or spark-env.sh from elsewhere
    env = wheel_check.clean_env() | {"SPARK_HOME": spark_home, "SPARK_CONF_DIR": conf, "SPARK_LOCAL_IP": HOST,
                                     "SPARK_LOG_DIR": os.path.join(work, "logs"),
                                     "SPARK_LOCAL_DIRS": os.path.join(work, "spark-local")}
    spark_class = os.path.join(spark_home, "bin", "spark-class")
    master_url = f"spark://{HOST}:{args.spark_port}"
    ui = f"http://{HOST}:{args.spark_ui_port}/json/"
    start = time.perf_counter()
    master = processes.start("spark-master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                                              "--port", str(args.spark_port), "--webui-port", str(args.spark_ui_port)], env)
    wait_for("Spark master", lambda: http_json(ui).get("status") == "ALIVE", 90, lambda: master.poll() is None)
    workers = []
    for k in range(args.spark_workers):
        work_dir = os.path.join(work, f"spark-worker-{k + 1}")
        os.makedirs(work_dir)
        workers.append(processes.start(f"spark-worker-{k + 1}", [
            spark_class, "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--port", "0",
            "--webui-port", str(args.spark_ui_port + 1 + k), "--cores", "1", "--memory", "2g",
            "--work-dir", work_dir, master_url], env))
    wait_for("Spark workers", lambda: sum(w["state"] == "ALIVE" for w in http_json(ui)["workers"]) == args.spark_workers,
             90, lambda: all(w.poll() is None for w in workers))
    state = http_json(ui)
    print(json.dumps({"run": "spark cluster up", "seconds": round(time.perf_counter() - start, 1),
                      "master": {"pid": master.pid, "url": master_url},
                      "workers": [{"pid": w.pid, "id": s["id"], "cores": s["cores"], "memory_mb": s["memory"]}
                                  for w, s in zip(workers, state["workers"])],
                      "listening": listening(processes)}), flush=True)

    archive = os.path.join(work, "swiftbert-home.tgz")
    model_archive(args.swiftbert_home, archive)
    submit = [os.path.join(venv, "bin", "spark-submit"), "--master", master_url,
              "--conf", f"spark.pyspark.python={os.path.join(venv, 'bin', 'python')}",
              "--conf", f"spark.driver.host={HOST}", "--conf", f"spark.driver.bindAddress={HOST}",
              "--conf", "spark.ui.enabled=false", "--conf", "spark.task.maxFailures=4",
              "--conf", "spark.executor.memory=1g"]
    job = [os.path.join(REPO, "examples", "spark", "embed.py"), "--input", corpus, "--text-column", "text",
           "--id-column", "id", "--threads", "1", "--partitions", str(2 * args.spark_workers)]
    python = os.path.join(venv, "bin", "python")
    runs = {
        "spark-local-home": submit + job + ["--swiftbert-home", args.swiftbert_home],
        "spark-archives": submit + ["--archives", f"{archive}#swiftbert"] + job
        + ["--swiftbert-home", "sparkfiles:swiftbert", "--model", "minilm-shipped"],
        # The job's own --master, no spark-submit: the executors' python comes from PYSPARK_PYTHON.
        "spark-direct": [python] + job + ["--master", master_url, "--swiftbert-home", args.swiftbert_home],
    }
    extra_env = {"spark-direct": {"PYSPARK_PYTHON": python}}
    ok = True
    roots = [f"spark-worker-{k + 1}" for k in range(args.spark_workers)]
    for name, command in runs.items():
        if args.only and name not in args.only:
            continue
        output = os.path.join(work, f"{name}.parquet")
        ok &= run_job(name, command + ["--output", output], env | extra_env.get(name, {}), work, processes, roots,
                      output, expected, args.rows)
    apps = http_json(ui).get("completedapps", [])
    print(json.dumps({"run": "spark applications", "apps": [
        {"id": a["id"], "name": a["name"], "state": a["state"], "cores": a["cores"], "duration_ms": a["duration"]}
        for a in apps],
        "executor_dirs": {os.path.basename(w): sorted(os.path.join(d, e) for d in os.listdir(os.path.join(work, w))
                                                      for e in os.listdir(os.path.join(work, w, d)))
                          for w in sorted(os.listdir(work)) if w.startswith("spark-worker-")}}), flush=True)
    for name in roots[::-1] + ["spark-master"]:
        processes.stop(name)
    return ok


def ray(args, venv: str, processes: Processes, work: str, corpus: str, expected: dict) -> bool:
    temp = tempfile.mkdtemp(prefix="sbray-")  # short: Ray's socket paths must fit in 107 bytes
    # Ray 2.60 turns token authentication on for a new cluster and keeps the token in ~/.ray/auth_token,
    # shared with every other Ray of this user. This cluster gets a token of its own instead, in the
    # work folder, given to the head and to `ray job submit` (and through them to the job).
    token = os.path.join(work, "ray-auth-token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(secrets.token_hex(32))
    env = wheel_check.clean_env() | {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                                     "RAY_AUTH_TOKEN_PATH": token}
    with open(token) as f:
        headers = {"Authorization": f"Bearer {f.read()}"}
    ray_bin = os.path.join(venv, "bin", "ray")
    dashboard = f"http://{HOST}:{args.ray_dashboard_port}"
    start = time.perf_counter()
    ok = False
    head = processes.start("ray-head", [
        # No --node-ip-address: `ray start` replaces 127.0.0.1 with the machine's own address
        # (services.resolve_ip_for_localhost), so the node IP is that address either way.
        ray_bin, "start", "--head", "--block", f"--port={args.ray_port}",
        f"--dashboard-host={HOST}", f"--dashboard-port={args.ray_dashboard_port}", "--include-dashboard=true",
        f"--ray-client-server-port={args.ray_client_port}", f"--num-cpus={args.ray_cpus}", f"--temp-dir={temp}",
        "--disable-usage-stats"], env)
    try:
        wait_for("Ray job API", lambda: isinstance(http_json(f"{dashboard}/api/jobs/", headers), list), 120,
                 lambda: head.poll() is None)
        print(json.dumps({"run": "ray head up", "seconds": round(time.perf_counter() - start, 1), "pid": head.pid,
                          "dashboard": dashboard, "num_cpus": args.ray_cpus, "temp_dir": temp,
                          "listening": listening(processes)}), flush=True)
        output = os.path.join(work, "ray-job.parquet")
        command = [ray_bin, "job", "submit", "--address", dashboard, "--working-dir", os.path.join(REPO, "examples"),
                   "--", os.path.join(venv, "bin", "python"), "ray/embed.py", "--address", "auto",
                   "--concurrency", "2", "--threads", "1", "--input", corpus, "--text-column", "text",
                   "--id-column", "id", "--output", output, "--swiftbert-home", args.swiftbert_home]
        ok = run_job("ray-job", command, env, work, processes, ["ray-head"], output, expected, args.rows)
        return ok
    finally:
        processes.stop("ray-head", timeout=90)
        if ok and not args.keep:  # else its logs stay, under temp/session_*/logs
            shutil.rmtree(temp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--swiftbert-home", default=REPO, help="holds weights/all-MiniLM-L6-v2")
    parser.add_argument("--only", default="",
                        help="comma-separated: spark-local-home,spark-archives,spark-direct,ray-job (default: all)")
    parser.add_argument("--spark-workers", type=int, default=2, help="Worker JVMs, 1 core each")
    parser.add_argument("--spark-port", type=int, default=7077)
    parser.add_argument("--spark-ui-port", type=int, default=8080, help="the master's; workers take the next ones")
    parser.add_argument("--ray-port", type=int, default=6380)
    parser.add_argument("--ray-dashboard-port", type=int, default=8265)
    parser.add_argument("--ray-client-port", type=int, default=10001)
    parser.add_argument("--ray-cpus", type=int, default=3, help="the head's logical CPUs: 2 actors + 1 for reads and writes")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, outputs)")
    args = parser.parse_args()
    args.swiftbert_home = os.path.abspath(args.swiftbert_home)
    args.only = [name for name in args.only.split(",") if name]
    unknown = set(args.only) - {"spark-local-home", "spark-archives", "spark-direct", "ray-job"}
    if unknown:
        parser.error(f"--only: no run named {', '.join(sorted(unknown))}")
    assert shutil.which("bert", path="/usr/bin:/bin") is None, "a bert on /usr/bin:/bin would hide the wheel's"
    want_spark = not args.only or any(n.startswith("spark") for n in args.only)
    want_ray = not args.only or "ray-job" in args.only
    ports = ([args.spark_port, *range(args.spark_ui_port, args.spark_ui_port + 1 + args.spark_workers)] if want_spark else []) \
        + ([args.ray_port, args.ray_dashboard_port, args.ray_client_port] if want_ray else [])
    busy = [p for p in ports if not port_free(p)]
    if busy:  # another cluster may be listening there: never submit to it
        raise SystemExit(f"ports in use on {HOST}: {busy}; pick others (--spark-port, --ray-port, ...)")

    venv = os.path.dirname(os.path.dirname(sys.executable))
    work = tempfile.mkdtemp(prefix="swiftbert-cluster-")
    os.makedirs(os.path.join(work, "logs"))
    processes = Processes(os.path.join(work, "logs"))

    def terminate(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, terminate)

    ok = False
    try:
        corpus = scaleout.build_corpus(args.rows)
        start = time.perf_counter()
        expected = wheel_check.reference(corpus, args.swiftbert_home, work)
        print(json.dumps({"run": "bert embed (the wheel's, reference)", "rows": len(expected),
                          "seconds": round(time.perf_counter() - start, 1), "load_after": wheel_check.load()}), flush=True)
        ok = True
        if want_spark:
            ok &= spark(args, venv, processes, work, corpus, expected)
        if want_ray:
            ok &= ray(args, venv, processes, work, corpus, expected)
    finally:
        for name, root in processes.roots.items():
            if root.pid not in processes.ended or any(processes.alive(p) for p, s in processes.seen.items() if s[1] == name):
                processes.stop(name)
        report = processes.report()
        print(json.dumps({"run": "processes", "work": work if (args.keep or not ok) else None, **report}), flush=True)
        if report["still_alive"]:
            ok = False
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
