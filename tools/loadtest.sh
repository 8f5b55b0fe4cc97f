#!/usr/bin/env bash
# Load test, side by side in one run (not part of CI): the SwiftBERT server in FP32 and INT8,
# infinity-emb (torch backend; ONNX/optimum if it works offline), and sentence-transformers
# behind FastAPI/uvicorn, all serving all-MiniLM-L6-v2 on 127.0.0.1; wrk with 1, 8 and 64
# connections sending requests of 1 and of 32 texts (the 300 sentences of the fixture in turn);
# then `bert embed --input` offline over 3,000 of the same lines. Writes a TSV of texts/s, p50
# and p99 per cell to $OUT (default docs/server-loadtest.tsv); tools/loadtest_report.py turns it
# into the table and chart of docs/server.md.
#
#   tools/loadtest.sh [seconds-per-cell=15] [engines...]
#   engines: swiftbert-fp32 swiftbert-int8 infinity-torch infinity-onnx st-fastapi offline (default: all)
#
# Python engines are skipped, with a note, when their venv is missing:
#   infinity-emb:   python3 -m venv /work/infenv && /work/infenv/bin/pip install 'infinity-emb[server]'
#   st-fastapi:     a venv with sentence-transformers, fastapi, uvicorn at $ST_PYTHON
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}; shift || true
engines=("$@"); [ ${#engines[@]} -gt 0 ] || engines=(swiftbert-fp32 swiftbert-int8 infinity-torch infinity-onnx st-fastapi offline)
out=${OUT:-docs/server-loadtest.tsv}
bert=${BERT:-$(swift build -c release --show-bin-path)/bert}
hf=${HF_FOLDER:-/work/main/weights/.cache/hf/all-MiniLM-L6-v2}
infinity=${INFINITY:-/work/infenv/bin/infinity_emb}
st_python=${ST_PYTHON:-/work/stenv/bin/python}
port=18090
work=$(mktemp -d /tmp/swiftbert-load.XXXXXX)
server=""
stop() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null; server=""; }
trap stop EXIT

for n in 1 32; do
    python3 tools/make_request_body.py $n > "$work/openai-$n.jsonl"
done
[ -f "$out" ] || printf 'engine\tclients\ttexts_per_request\ttexts_per_s\tp50_ms\tp99_ms\trequests\terrors\tload1\n' > "$out"

# Waits for GET $1 to answer 200 (up to 300 s).
wait_healthy() {
    for _ in $(seq 3000); do curl -sf "$1" >/dev/null 2>&1 && return 0; kill -0 "$server" 2>/dev/null || return 1; sleep 0.1; done
    return 1
}

# Runs the 6 cells against URL for ENGINE.
drive() {
    local engine=$1 url=$2
    for clients in 1 8 64; do
        local threads=$(( clients < 2 ? 1 : 2 ))  # wrk needs connections >= threads
        for n in 1 32; do
            # A short warm-up at the same shape, then the measured run.
            WRK_BODY="$work/openai-$n.jsonl" wrk -t"$threads" -c"$clients" -d3s --timeout 60s -s tools/wrk_body.lua "$url" >/dev/null 2>&1 || true
            WRK_BODY="$work/openai-$n.jsonl" wrk -t"$threads" -c"$clients" -d"${seconds}s" --timeout 60s -s tools/wrk_body.lua "$url" > "$work/wrk.txt" 2>&1 || true
            local result; result=$(grep '^RESULT' "$work/wrk.txt" || echo "RESULT requests=0 seconds=1 p50_ms=0 p99_ms=0 non2xx=0 connect=0 read=0 write=0 timeout=0")
            local r_requests r_seconds r_p50_ms r_p99_ms r_non2xx r_connect r_read r_write r_timeout
            eval "$(echo "$result" | sed 's/^RESULT //' | tr ' ' '\n' | sed 's/^/local r_/')"
            local errors=$((r_non2xx + r_connect + r_read + r_write + r_timeout))
            local ok=$((r_requests - r_non2xx))
            local rate; rate=$(awk -v r="$ok" -v s="$r_seconds" -v n="$n" 'BEGIN { printf "%.1f", r * n / s }')
            local load; load=$(cut -d' ' -f1 /proc/loadavg)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$clients" "$n" "$rate" "$r_p50_ms" "$r_p99_ms" "$r_requests" "$errors" "$load" | tee -a "$out"
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
    infinity-torch|infinity-onnx)
        if [ ! -x "$infinity" ]; then echo "skipping $engine: $infinity is missing" >&2; continue; fi
        backend=torch; [ "$engine" = infinity-onnx ] && backend=optimum
        HF_HUB_OFFLINE=1 "$infinity" v2 --model-id "$hf" --served-model-name all-MiniLM-L6-v2 --engine $backend \
            --batch-size 32 --device cpu --port $port --host 127.0.0.1 --no-model-warmup >"$work/$engine.log" 2>&1 &
        server=$!
        if ! wait_healthy "http://127.0.0.1:$port/health"; then
            echo "skipping $engine: it did not start (log: $work/$engine.log)" >&2; tail -5 "$work/$engine.log" >&2; stop; continue
        fi
        drive "$engine" "http://127.0.0.1:$port/embeddings"
        stop ;;
    st-fastapi)
        if [ ! -x "$st_python" ]; then echo "skipping $engine: $st_python is missing" >&2; continue; fi
        HF_HUB_OFFLINE=1 "$st_python" tools/st_server.py "$hf" $port >"$work/$engine.log" 2>&1 &
        server=$!
        wait_healthy "http://127.0.0.1:$port/health" || { echo "skipping $engine: did not start" >&2; tail -5 "$work/$engine.log" >&2; stop; continue; }
        drive "$engine" "http://127.0.0.1:$port/v1/embeddings"
        stop ;;
    offline)
        for _ in $(seq 10); do cat Tests/SwiftBERTTests/Fixtures/sentences.txt; done > "$work/3000.txt"
        for precision in fp32 int8; do
            "$bert" embed --precision $precision --input "$work/3000.txt" --format npy --output "$work/out.npy" -q  # warm-up (page cache)
            start=$(date +%s.%N)
            "$bert" embed --precision $precision --input "$work/3000.txt" --format npy --output "$work/out.npy" -q
            end=$(date +%s.%N)
            rate=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", 3000 / (e - s) }')
            printf 'bert-embed-offline-%s\t-\t3000\t%s\t-\t-\t1\t0\t%s\n' "$precision" "$rate" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out"
        done ;;
    *) echo "unknown engine $engine" >&2; exit 64 ;;
    esac
done
