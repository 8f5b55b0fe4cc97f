#!/usr/bin/env bash
# The load test of docs/server.md, side by side in one run (not part of CI): the SwiftBERT server
# in FP32 and INT8, infinity-emb 0.0.78 (torch backend; its ONNX backend does not run offline
# here, see docs/server.md), and sentence-transformers behind FastAPI/uvicorn (tools/loadtest/st_server.py), all serving
# all-MiniLM-L6-v2 on 127.0.0.1 through OpenAI's embeddings route; wrk with 1, 8 and 64
# connections sending requests of 1 and of 32 texts (the 300 fixture sentences in turn); then
# `bert embed --input` offline over 3,000 of the same lines (the 300, ten times). Writes a TSV of
# texts/s, p50 and p99 per cell to $OUT (default docs/server-loadtest.tsv), then, for a full run,
# the table, the goals and the chart into docs/server.md (tools/loadtest/loadtest_report.py).
#
#   tools/loadtest/loadtest.sh [seconds-per-cell=10] [engines...]
#   engines: swiftbert-fp32 swiftbert-int8 infinity-torch st-fastapi offline (default: all)
#
# A full run (no engines named) starts a new TSV and takes about 9 minutes with 10 s per cell on
# the 2-core machine; naming engines appends their rows. First it runs tools/loadtest/loadtest_setup.sh
# (wrk, nginx, the Python venvs; idempotent). Needs a release build with the server:
# `make bert` (the native build line, docs/builds.md).
#
# Each cell: a 2-second warm-up at the same shape, then a wait until the server's process is idle
# (no backlog of the warm-up's abandoned requests left), then wrk for the measured seconds
# (3x as long for 64 clients x 32 texts: one round of 2,048 texts takes infinity-emb ~25 s).
# Only traffic to 127.0.0.1; every wrk run and wait is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-10}; shift || true
engines=("$@")
full=0; [ ${#engines[@]} -gt 0 ] || { full=1; engines=(swiftbert-fp32 swiftbert-int8 infinity-torch st-fastapi offline); }
out=${OUT:-docs/server-loadtest.tsv}
bert=${BERT:-$(swift build -c release --show-bin-path)/bert}
hf=${HF_FOLDER:-weights/.cache/hf/all-MiniLM-L6-v2}
venvs=${LOADTEST_VENVS:-/work/loadtest-venvs}
port=18090
started_at=$(date +%s)

[ -x "$bert" ] && "$bert" serve --help >/dev/null 2>&1 || { echo "build bert with the server first: make bert" >&2; exit 1; }
[ "${LOADTEST_SKIP_SETUP:-0}" = 1 ] || LOADTEST_VENVS="$venvs" HF_FOLDER="$hf" tools/loadtest/loadtest_setup.sh

work=$(mktemp -d /tmp/swiftbert-load.XXXXXX)
server=""
# SIGTERM, then SIGKILL after 5 s: uvicorn's graceful shutdown would first finish the abandoned
# backlog of the last cell (minutes of 32-text requests on a busy machine).
stop() {
    [ -n "$server" ] || return 0
    kill "$server" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
}
trap stop EXIT

for n in 1 32; do
    python3 tools/loadtest/make_request_body.py $n > "$work/openai-$n.jsonl"
done
for _ in $(seq 10); do cat Tests/SwiftBERTTests/Fixtures/sentences.txt; done > "$work/3000.txt"
header='engine\tclients\ttexts_per_request\ttexts_per_s\tp50_ms\tp99_ms\trequests\terrors\tload1\tutc\n'
if [ $full = 1 ] || [ ! -f "$out" ]; then printf "$header" > "$out"; fi

# Waits for GET $1 to answer 200 (up to 300 s) while the server process lives.
wait_healthy() {
    for _ in $(seq 3000); do curl -sf "$1" >/dev/null 2>&1 && return 0; kill -0 "$server" 2>/dev/null || return 1; sleep 0.1; done
    return 1
}

# Waits (up to 120 s) until the server process used under 10% of a core over half a second.
wait_idle() {
    local hz; hz=$(getconf CLK_TCK)
    ticks() { awk '{ print $14 + $15 }' "/proc/$server/stat" 2>/dev/null || echo 0; }
    for _ in $(seq 240); do
        local before; before=$(ticks); sleep 0.5
        [ $(( $(ticks) - before )) -le $(( hz / 20 )) ] && return 0
    done
}

# Runs the 6 cells against URL for ENGINE.
drive() {
    local engine=$1 url=$2
    for clients in 1 8 64; do
        local threads=$(( clients < 2 ? 1 : 2 ))  # wrk needs connections >= threads
        for n in 1 32; do
            local duration=$seconds
            [ "$clients" = 64 ] && [ "$n" = 32 ] && duration=$((seconds * 3))
            WRK_BODY="$work/openai-$n.jsonl" timeout 30 wrk -t"$threads" -c"$clients" -d2s --timeout 60s -s tools/loadtest/wrk_body.lua "$url" >/dev/null 2>&1 || true
            wait_idle
            WRK_BODY="$work/openai-$n.jsonl" timeout $((duration + 90)) wrk -t"$threads" -c"$clients" -d"${duration}s" --timeout 60s -s tools/loadtest/wrk_body.lua "$url" > "$work/wrk.txt" 2>&1 || true
            local result; result=$(grep '^RESULT' "$work/wrk.txt" || echo "RESULT requests=0 seconds=1 p50_ms=0 p99_ms=0 non2xx=0 connect=0 read=0 write=0 timeout=0")
            local r_requests r_seconds r_p50_ms r_p99_ms r_non2xx r_connect r_read r_write r_timeout
            eval "$(echo "$result" | sed 's/^RESULT //' | tr ' ' '\n' | sed 's/^/local r_/')"
            local errors=$((r_non2xx + r_connect + r_read + r_write + r_timeout))
            local ok=$((r_requests - r_non2xx))
            local rate; rate=$(awk -v r="$ok" -v s="$r_seconds" -v n="$n" 'BEGIN { printf "%.1f", r * n / s }')
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$clients" "$n" "$rate" "$r_p50_ms" "$r_p99_ms" "$r_requests" "$errors" \
                "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%FT%TZ)" | tee -a "$out"
        done
    done
}

for engine in "${engines[@]}"; do
    case $engine in
    swiftbert-fp32|swiftbert-int8)
        "$bert" serve --port $port --precision "${engine#swiftbert-}" --model all-MiniLM-L6-v2 2>"$work/$engine.log" &
        server=$!
        wait_healthy "http://127.0.0.1:$port/health" || { echo "$engine did not start" >&2; cat "$work/$engine.log" >&2; exit 1; }
        drive "$engine" "http://127.0.0.1:$port/v1/embeddings"
        stop ;;
    infinity-torch)
        HF_HUB_OFFLINE=1 INFINITY_ANONYMOUS_USAGE_STATS=0 DO_NOT_TRACK=1 \
            "$venvs/infinity/bin/infinity_emb" v2 --model-id "$hf" --served-model-name all-MiniLM-L6-v2 --engine torch \
            --batch-size 32 --device cpu --port $port --host 127.0.0.1 --log-level warning >"$work/$engine.log" 2>&1 &
        server=$!
        if ! wait_healthy "http://127.0.0.1:$port/health"; then
            echo "skipping $engine: it did not start (log: $work/$engine.log)" >&2; tail -5 "$work/$engine.log" >&2; stop; continue
        fi
        drive "$engine" "http://127.0.0.1:$port/embeddings"
        stop ;;
    st-fastapi)
        HF_HUB_OFFLINE=1 tools/.venv/bin/python tools/loadtest/st_server.py "$hf" $port >"$work/$engine.log" 2>&1 &
        server=$!
        wait_healthy "http://127.0.0.1:$port/health" || { echo "skipping $engine: did not start" >&2; tail -5 "$work/$engine.log" >&2; stop; continue; }
        drive "$engine" "http://127.0.0.1:$port/v1/embeddings"
        stop ;;
    offline)
        for precision in fp32 int8; do
            "$bert" embed --precision $precision --input "$work/3000.txt" --format npy --output "$work/out.npy" -q  # warm-up (page cache)
            start=$(date +%s.%N)
            "$bert" embed --precision $precision --input "$work/3000.txt" --format npy --output "$work/out.npy" -q
            end=$(date +%s.%N)
            rate=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", 3000 / (e - s) }')
            printf 'bert-embed-offline-%s\t-\t3000\t%s\t-\t-\t1\t0\t%s\t%s\n' "$precision" "$rate" "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%FT%TZ)" | tee -a "$out"
        done ;;
    *) echo "unknown engine $engine" >&2; exit 64 ;;
    esac
done
echo "loadtest: $(( $(date +%s) - started_at )) s in all" >&2
if [ $full = 1 ]; then python3 tools/loadtest/loadtest_report.py "$out" docs/server-loadtest.svg docs/server.md; fi
