"""What python_fuzz.py and cabi_fuzz.py share: calls run in child processes, a batch each, every
call announced on stdout before it runs, so that a child that dies names the call that killed it.

A child prints one JSON line per call before it (`{"call": i, "what": description}`), one after
it (`{"call": i, "result": value}`), and `{"done": n}` at the end.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def arguments(doc, batch):
    """The options both fuzzers take, and the hidden one that makes a process a child."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=batch, help="calls per child process")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    return parser


def announce(index, description):
    print(json.dumps({"call": index, "what": description}), flush=True)


def report(index, result):
    print(json.dumps({"call": index, "result": result}), flush=True)


def finish(count):
    print(json.dumps({"done": count}), flush=True)


def main(script, doc, batch, child, judge, env=None):
    """A fuzzer's whole command line: as a child, `child(seed, count)`; else `run`."""
    options = arguments(doc, batch).parse_args()
    if options.child:
        child(*options.child)
    else:
        run(script, options, judge, env)


def run(script, options, judge, env=None):
    """Runs `script --child SEED N` for options.calls calls, options.batch a child. `judge(result)`
    gives (a tally key, a finding's text or None) for each call's result. Prints each finding and
    a summary; exits 1 if any call was a finding or killed its child."""
    env = dict(env or os.environ)
    env.setdefault("SWIFTBERT_HOME", ROOT)
    env.setdefault("OPENBLAS_CORETYPE", "Haswell")
    tally, findings, started = {}, [], time.time()
    for batch in range(0, options.calls, options.batch):
        seed = options.seed * 1_000_003 + batch
        child = subprocess.run([sys.executable, script, "--child", str(seed), str(min(options.batch, options.calls - batch))],
                               capture_output=True, text=True, env=env, timeout=1800)
        last, done = None, False
        for line in child.stdout.splitlines():
            record = json.loads(line)
            if "what" in record:
                last = record["what"]
            elif "result" in record:
                key, finding = judge(record["result"])
                tally[key] = tally.get(key, 0) + 1
                if finding:
                    findings.append((last, finding))
                    print(f"FINDING: {last}\n   {finding}", flush=True)
            elif "done" in record:
                done = True
        if not done:
            findings.append((last, f"the child died (status {child.returncode})"))
            print(f"CRASH: {last}\n   status {child.returncode}: {child.stderr.strip()[-600:]}", flush=True)
        print(f"{min(batch + options.batch, options.calls)} calls, {len(findings)} findings, {time.time() - started:.0f} s", flush=True)
    print("results: " + ", ".join(f"{key} ×{count}" for key, count in sorted(tally.items(), key=str)))
    print(f"{options.calls} calls (seed {options.seed}): {len(findings)} findings")
    sys.exit(1 if findings else 0)
