#!/usr/bin/env bash
# Schema-driven fuzzing of `bert serve` with schemathesis (PyPI), from the server's own
# GET /openapi.json: every route and method, valid and invalid bodies, missing and wrong keys.
# Outside CI (it needs schemathesis and a few minutes); results in docs/server.md.
#
#   tools/clients/schemathesis_check.sh [BERT] [--max-examples N]
#
# Three servers, one after another, each on a loopback port of its own:
#   1. all-MiniLM-L6-v2, no API key;
#   2. all-MiniLM-L6-v2 + splade-tiny + the BERT cross-encoder fixture, with an API key
#      (schemathesis sends the key, and also tries requests without it and with a wrong one);
#   3. the same models, no key;
#   4. the BGE-M3 fixture (dense, sparse and ColBERT heads) with --accept-token-ids.
# Each run's report goes to $OUT (default /tmp/swiftbert-schemathesis). The script exits non-zero
# when a run finds a 5xx, a response that does not match the document, or a route that accepts
# a request without the key it requires; it lists the other findings (422s for semantic checks
# that a schema cannot state, such as a prompt name the model lacks) for a person to read.
set -euo pipefail
cd "$(dirname "$0")/../.."
bert=$(realpath "${1:-.build/release/bert}")
[ $# -ge 1 ] && shift
examples=60
[ "${1:-}" = "--max-examples" ] && examples=$2
out=${OUT:-/tmp/swiftbert-schemathesis}
mkdir -p "$out"
venv=${SCHEMATHESIS_VENV:-/tmp/swiftbert-schemathesis-venv}
if [ ! -x "$venv/bin/schemathesis" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "schemathesis==4.32.5"
fi
fixtures=Tests/SwiftBERTTests/Fixtures/heads
cross=$out/bert-cross-encoder
[ -f "$cross/config.json" ] && [ -f "$cross/model.safetensors" ] || "$bert" convert "$fixtures/bert-cross-encoder" "$cross" >/dev/null
bgem3=$out/bgem3
[ -f "$bgem3/config.json" ] && [ -f "$bgem3/model.safetensors" ] || "$bert" convert Tests/SwiftBERTTests/Fixtures/bgem3 "$bgem3" >/dev/null

status=0
run() {  # NAME PORT KEY MODELS [SERVE OPTIONS...]
    local name=$1 port=$2 key=$3 models=$4 pid
    shift 4
    # SWIFTBERT_API_KEY only for a run with a key.
    env ${key:+SWIFTBERT_API_KEY="$key"} OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}" \
        "$bert" serve --model "$models" --port "$port" "$@" >"$out/$name.server.log" 2>&1 &
    pid=$!
    for _ in $(seq 120); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        sleep 0.5
    done
    local auth=()
    [ -n "$key" ] && auth=(-H "Authorization: Bearer $key")
    set +e
    # From $out: schemathesis keeps its cache (.schemathesis/) in the working folder.
    (cd "$out" && "$venv/bin/schemathesis" run "http://127.0.0.1:$port/openapi.json" --checks all --max-examples "$examples" \
        --workers 1 --request-timeout 60 --seed 1 "${auth[@]}" >"$out/$name.txt" 2>&1)
    set -e
    kill "$pid"; wait "$pid" 2>/dev/null || true
    # Findings that are defects: a server error, a response outside the document, a route
    # answering without its key. The rest are listed.
    local defects
    defects=$(grep -E '^  ❌ (ST5|ST1|ST401|ST203|ST3)' "$out/$name.txt" || true)
    echo "== $name: $(grep -E 'generated, ' "$out/$name.txt" | sed 's/^ *//')"
    grep -E '^  (❌|✅)' "$out/$name.txt" | sed 's/^/   /' || true
    if [ -n "$defects" ]; then status=1; echo "   DEFECTS above (report: $out/$name.txt)"; fi
}
run minilm 18191 "" all-MiniLM-L6-v2
run three-models-key 18192 schemathesis-key "all-MiniLM-L6-v2,splade-tiny,$cross"
run three-models 18193 "" "all-MiniLM-L6-v2,splade-tiny,$cross"
run bgem3-token-ids 18194 "" "$bgem3" --accept-token-ids
exit $status
