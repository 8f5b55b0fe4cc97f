#!/usr/bin/env bash
# Scale-out check of deploy/nginx/nginx.conf, on loopback: two `bert serve` replicas
# (127.0.0.1:18081, :18082) behind nginx (127.0.0.1:18080), wrk driving POST /v1/embeddings
# through nginx, and one replica killed (SIGKILL: no drain, the worst case) in the middle.
# Reports throughput and how many requests were lost (non-200 answers and socket errors).
#
#   tools/loadtest/deploy_test.sh [seconds=30] [clients=16] [texts-per-request=8]
#
# WITHOUT_NON_IDEMPOTENT=1 runs the same with `non_idempotent` removed from proxy_next_upstream,
# to show what it is for: without it nginx answers 502 for the POSTs in flight on the killed replica.
#
# Needs nginx and wrk (Debian: apt-get install -y nginx wrk) and a release build of bert.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}; clients=${2:-16}; texts=${3:-8}
bert=${BERT:-$(swift build -c release --show-bin-path)/bert}
for tool in nginx wrk; do command -v $tool >/dev/null || { echo "$tool is missing: apt-get install -y nginx wrk" >&2; exit 1; }; done
[ -x "$bert" ] || { echo "build bert first: make bert" >&2; exit 1; }

work=$(mktemp -d /tmp/swiftbert-deploy.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT

for port in 18081 18082; do
    "$bert" serve --port $port --threads 1 --model all-MiniLM-L6-v2 --trusted-proxies 127.0.0.1 2>"$work/replica-$port.log" &
    pids+=($!)
done
for port in 18081 18082; do
    for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "replica $port did not start" >&2; cat "$work/replica-$port.log" >&2; exit 1; }
done
conf="$work/nginx.conf"
cp deploy/nginx/nginx.conf "$conf"
[ "${WITHOUT_NON_IDEMPOTENT:-0}" = 1 ] && sed -i 's/ non_idempotent;/;/' "$conf" && echo "== proxy_next_upstream WITHOUT non_idempotent" >&2
nginx -p "$work" -c "$conf" -g 'daemon on;'
for _ in $(seq 50); do curl -sf http://127.0.0.1:18080/health >/dev/null && break; sleep 0.1; done

python3 tools/loadtest/make_request_body.py "$texts" > "$work/body.jsonl"
echo "== $clients clients, $texts texts per request, ${seconds}s through nginx; replica :18081 killed (SIGKILL) at $((seconds / 2))s" >&2
( sleep $((seconds / 2)); kill -9 "${pids[0]}"; echo "== killed replica :18081 (pid ${pids[0]})" >&2 ) &
killer=$!
WRK_BODY="$work/body.jsonl" wrk -t2 -c"$clients" -d"${seconds}s" --timeout 30s -s tools/loadtest/wrk_body.lua http://127.0.0.1:18080/v1/embeddings | tee "$work/wrk.txt"
wait $killer || true
result=$(grep '^RESULT' "$work/wrk.txt")
eval "$(echo "$result" | sed 's/^RESULT //' | tr ' ' '\n' | sed 's/^/r_/')"
lost=$((r_non2xx + r_connect + r_read + r_write + r_timeout))
echo
echo "requests answered 200: $((r_requests - r_non2xx - r_read - r_write - r_timeout)) of $r_requests sent; lost: $lost (non-200 $r_non2xx, socket errors connect $r_connect read $r_read write $r_write timeout $r_timeout)"
awk -v r="$r_requests" -v s="$r_seconds" -v t="$texts" -v p50="$r_p50_ms" -v p99="$r_p99_ms" \
    'BEGIN { printf "throughput: %.1f requests/s, %.0f texts/s; latency p50 %.1f ms, p99 %.1f ms\n", r / s, r * t / s, p50, p99 }'
retried=$(grep -c "prematurely closed\|Connection refused\|Connection reset" "$work/error.log" 2>/dev/null || true)
echo "nginx error log: $retried upstream failures (requests in flight on, or sent to, the killed replica; each retried on the other one unless counted as lost above)"
