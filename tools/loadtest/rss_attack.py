#!/usr/bin/env python3
"""Peak RSS of a running `bert serve` under the memory attacks of issue 44.

    bert serve --model all-MiniLM-L6-v2 --port 8080 & pid=$!
    python3 tools/loadtest/rss_attack.py --port 8080 --pid $pid

Scenarios, one after another (each until its clients are done or cut):
  idle          the server's RSS before any attack
  tokenize-2mb  8 clients at once post /tokenize with a ~2 MB body (the answer would be ~70 MB)
  embed-all-256 one client posts /embed_all with 256 texts (the answer would be ~300 MB)
  unread        16 clients post /embed_all with an answer just under --max-response-bytes
                and never read it (they hold their sockets open for --hold seconds)
It prints, per scenario, the statuses the clients got and the peak RSS (VmHWM is not reset
between scenarios, so it samples VmRSS every 20 ms instead). Standard library only.
"""
import argparse
import json
import socket
import threading
import time


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def post(port, path, body, read=True, hold=0.0):
    """Sends one request; returns the status (or an error name). read=False never reads the answer."""
    s = socket.create_connection(("127.0.0.1", port))
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    try:
        s.sendall(head.encode() + body)
        if not read:
            # Read only the status line, then let the answer sit in the server's buffers.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            first = s.recv(32)
            time.sleep(hold)
            return first.split(b" ")[1].decode() if first.startswith(b"HTTP/") else "no-status"
        reply = b""
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            reply += chunk
            if len(reply) > 64 and b"\r\n" in reply and not reply.startswith(b"HTTP/1.1 200"):
                break
        return reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/") else "no-status"
    except OSError as error:
        return type(error).__name__
    finally:
        s.close()


def scenario(name, pid, clients):
    peak, done = rss_mib(pid), threading.Event()
    statuses = [None] * len(clients)

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mib(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.time()
    threads = [threading.Thread(target=lambda i=i, c=c: statuses.__setitem__(i, c())) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    sampler.join()
    counts = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    print(f"{name:14s} clients {len(clients):3d}  statuses {counts}  peak RSS {peak:7.1f} MiB  ({time.time() - started:.1f} s)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--max-response-bytes", type=int, default=32 << 20, help="the server's --max-response-bytes")
    parser.add_argument("--hidden", type=int, default=384, help="the model's hidden size (all-MiniLM-L6-v2: 384)")
    parser.add_argument("--hold", type=float, default=20.0, help="seconds the unread clients keep their sockets")
    parser.add_argument("--only", choices=["tokenize-2mb", "embed-all-256", "unread"],
                        help="one scenario (RSS does not shrink after one: measure each on a fresh server)")
    args = parser.parse_args()
    run = lambda name: args.only in (None, name)

    print(f"idle           peak RSS {rss_mib(args.pid):7.1f} MiB", flush=True)
    words = " ".join(f"word{i % 97}" for i in range(270_000))  # ~1.9 MB, under the 2 MiB --body-limit
    tokenize = json.dumps({"inputs": words}).encode()
    if run("tokenize-2mb"):
        scenario("tokenize-2mb", args.pid, [lambda: post(args.port, "/tokenize", tokenize)] * 8)
    texts = [" ".join(f"w{i}x{j}" for j in range(120)) for i in range(256)]
    if run("embed-all-256"):
        scenario("embed-all-256", args.pid, [lambda: post(args.port, "/embed_all", json.dumps({"inputs": texts, "truncate": True}).encode())])
    # An answer just under the limit: 16 bytes a number bound it, so tokens = limit / (hidden × 16).
    tokens = args.max_response_bytes // (args.hidden * 16 + 3) - 8
    per_text = 250
    count = max(1, tokens // per_text)
    under = json.dumps({"inputs": [" ".join(["a"] * (per_text - 2))] * count, "truncate": True}).encode()
    if run("unread"):
        scenario("unread", args.pid, [lambda: post(args.port, "/embed_all", under, read=False, hold=args.hold)] * 16)


if __name__ == "__main__":
    main()
