#!/usr/bin/env python3
"""A one-text embedding's latency while attackers send each tokenizer kind's worst-case bodies
(issue 44: its p99 under attack stays under 10 times its idle p99).

    make bert
    python3 tools/loadtest/attack_p99.py [--seconds 60] [--attackers 4]

It converts the suite's random-weight RoBERTa (byte-level BPE) and XLM-R (Unigram, Metaspace)
fixtures into a temporary folder (random weights: only their tokenizers matter here), starts
`bert serve --model all-MiniLM-L6-v2,<roberta>,<xlmr>` with default flags on a free port, then:
  idle    one client posts /embed with one sentence, one request after another, --idle-requests times;
  attack  the same client for --seconds, while --attackers clients post, back to back, bodies just
          under --body-limit (2 MiB) that are each tokenizer's worst case (docs/robustness.md):
          combining-mark runs for WordPiece (MiniLM), one long word of combining marks for
          byte-level BPE (RoBERTa), one long word for Unigram and a whitespace run for Metaspace
          (XLM-R), cycling through them.
Prints both phases' p50/p99 and the attackers' answers; exits 1 when the p99 under attack is 10
times the idle p99 or more. Standard library only; ends only the server it started.
"""
import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures/encoders")
BODY_LIMIT = 2 << 20


def post(port, path, body, timeout=120):
    """(status, seconds) of one POST on a fresh connection."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        reply.read()
        return reply.status, time.perf_counter() - started
    except OSError as error:
        return type(error).__name__, time.perf_counter() - started
    finally:
        connection.close()


def worst_bodies():
    """(name, model, body) for each tokenizer kind's worst case, each just under --body-limit."""
    def body(model, text):
        return json.dumps({"inputs": text, "truncate": True, "model": model}).encode()
    room = BODY_LIMIT - 256
    marks = "\u0301\u0316"  # 2 code points, 4 UTF-8 bytes, 12 bytes as JSON escapes (ensure_ascii)
    return [
        ("wordpiece-combining-marks", "all-MiniLM-L6-v2", body("all-MiniLM-L6-v2", "a" + marks * (room // 12))),
        ("bpe-long-combining-word", "roberta", body("roberta", "a" + marks * (room // 12))),
        ("unigram-long-word", "xlmr", body("xlmr", "ab" * (room // 2))),
        ("metaspace-whitespace-run", "xlmr", body("xlmr", "a" + " " * (room - 2) + "b")),
    ]


def percentiles(latencies):
    ordered = sorted(latencies)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000
    return p(0.5), p(0.99)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bert", default=os.path.join(ROOT, ".build/release/bert"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--attackers", type=int, default=4)
    parser.add_argument("--idle-requests", type=int, default=300)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="swiftbert-attack-")
    models = {}
    for name, fixture in (("roberta", "roberta-mlm"), ("xlmr", "xlmr-st")):
        models[name] = os.path.join(work, name)
        subprocess.run([args.bert, "convert", os.path.join(FIXTURES, fixture), models[name]], check=True,
                       stdout=subprocess.DEVNULL)
    environment = dict(os.environ, SWIFTBERT_HOME=ROOT)
    server = subprocess.Popen([args.bert, "serve", "--port", "0", "--model",
                               ",".join(["all-MiniLM-L6-v2", models["roberta"], models["xlmr"]])],
                              env=environment, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in server.stderr:
            if "listening on http://" in line:
                port = int(line.rsplit(":", 1)[1])
                break
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        while post(port, "/embed", b'{"inputs": "warm up"}')[0] != 200:
            time.sleep(0.2)

        victim = json.dumps({"inputs": "A man is eating a piece of bread."}).encode()
        idle = [post(port, "/embed", victim)[1] for _ in range(args.idle_requests)]

        bodies = worst_bodies()
        # The converted folders' names (roberta, xlmr) are the names the server answers to.
        stop = threading.Event()
        answers = {}
        attacker_times = []
        lock = threading.Lock()

        def attack(index):
            turn = index
            while not stop.is_set():
                name, _, body = bodies[turn % len(bodies)]
                status, seconds = post(port, "/embed", body)
                with lock:
                    answers[(name, status)] = answers.get((name, status), 0) + 1
                    attacker_times.append(seconds)
                turn += 1

        attackers = [threading.Thread(target=attack, args=(i,)) for i in range(args.attackers)]
        for thread in attackers:
            thread.start()
        time.sleep(1)  # every attacker has a body in flight
        under_attack = []
        ends = time.time() + args.seconds
        while time.time() < ends:
            status, seconds = post(port, "/embed", victim)
            if status != 200:
                print(f"the victim got {status}", file=sys.stderr)
            under_attack.append(seconds)
        stop.set()
        for thread in attackers:
            thread.join()

        idle_p50, idle_p99 = percentiles(idle)
        attack_p50, attack_p99 = percentiles(under_attack)
        print(f"machine: {os.uname().nodename}, {os.cpu_count()} cores; bert serve with default flags; "
              f"{args.attackers} attackers, {args.seconds:.0f} s")
        print("| phase | requests | p50 ms | p99 ms |")
        print("|---|---:|---:|---:|")
        print(f"| idle | {len(idle)} | {idle_p50:.2f} | {idle_p99:.2f} |")
        print(f"| under attack | {len(under_attack)} | {attack_p50:.2f} | {attack_p99:.2f} |")
        print(f"p99 under attack / idle p99: {attack_p99 / idle_p99:.2f} (goal < 10)")
        print("attackers' answers: " + ", ".join(f"{name} {status}: {count}" for (name, status), count in sorted(answers.items(), key=str)))
        print(f"attackers' median request: {statistics.median(attacker_times) * 1000:.0f} ms")
        return 0 if attack_p99 < 10 * idle_p99 else 1
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
