#!/usr/bin/env bash
# A one-text /embed request from one client sent 0.5 s after another client's 2,048-text one
# (300 words each, truncated to all-MiniLM-L6-v2's 256 tokens): how long the one text waits.
# docs/server.md ("Clients take turns in the batches") quotes it.
#   tools/loadtest/one_behind_many.sh [BERT] [PORT]     (default .build/release/bert, 18190)
# The clients are told apart by address: curl --interface 127.0.0.2 and 127.0.0.3.
set -euo pipefail
cd "$(dirname "$0")/../.."
bert=${1:-.build/release/bert}; port=${2:-18190}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tools/loadtest/long_texts_body.py 2048 "$work/many.json"
echo '{"inputs": "one short query about foxes"}' >"$work/one.json"
OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} "$bert" serve --model weights/all-MiniLM-L6-v2 --port "$port" --threads 2 \
    --body-limit 8388608 >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.3; done
curl -s --interface 127.0.0.2 -o /dev/null -w 'many: %{http_code} %{time_total} s\n' -H 'Content-Type: application/json' \
    --data-binary @"$work/many.json" "localhost:$port/embed" &
many=$!
sleep 0.5
curl -s --interface 127.0.0.3 -o /dev/null -w 'one:  %{http_code} %{time_total} s\n' -H 'Content-Type: application/json' \
    --data-binary @"$work/one.json" "localhost:$port/embed"
wait $many
kill $server; wait $server 2>/dev/null || true
