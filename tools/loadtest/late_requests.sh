#!/usr/bin/env bash
# Five clients each send a 256-text /embed request (300 words each, truncated to
# all-MiniLM-L6-v2's 256 tokens) at once, with --request-timeout 10: more work than the model
# can do in 10 s. Prints each client's status, time and message. docs/server.md ("A request
# that cannot finish in time is refused at once") quotes it.
#   tools/loadtest/late_requests.sh [BERT] [PORT]     (default .build/release/bert, 18191)
# The clients are told apart by address: curl --interface 127.0.0.3 … 127.0.0.7. A warm-up of
# 64 texts first, so the batcher has measured its passes.
set -euo pipefail
cd "$(dirname "$0")/../.."
bert=${1:-.build/release/bert}; port=${2:-18191}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tools/loadtest/long_texts_body.py 256 "$work/many.json" --seed 11
tools/loadtest/long_texts_body.py 64 "$work/warm.json" --seed 12
OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} "$bert" serve --model weights/all-MiniLM-L6-v2 --port "$port" --threads 2 \
    --body-limit 8388608 --request-timeout 10 >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.3; done
curl -s -o /dev/null -w 'warm-up: %{http_code} %{time_total} s\n' -H 'Content-Type: application/json' \
    --data-binary @"$work/warm.json" "localhost:$port/embed"
pids=()
for i in 3 4 5 6 7; do
    curl -s --interface 127.0.0.$i -o "$work/out$i" -D "$work/head$i" -w "client $i: %{http_code} %{time_total} s" \
        -H 'Content-Type: application/json' --data-binary @"$work/many.json" "localhost:$port/embed" >"$work/line$i" &
    pids+=($!)
    sleep 0.05
done
wait "${pids[@]}"
for i in 3 4 5 6 7; do
    retry=$(grep -i '^retry-after' "$work/head$i" | tr -d '\r' || true)
    message=$(python3 -c 'import json,sys
try: d = json.load(open(sys.argv[1]))
except Exception: sys.exit()
print("" if isinstance(d, list) else d.get("error", ""))' "$work/out$i")
    echo "$(cat "$work/line$i") ${retry:+($retry) }$message"
done
kill $server; wait $server 2>/dev/null || true
