#!/usr/bin/env bash
# Whether two `bert` binaries' servers answer byte for byte the same, for refactors that must not
# change a response. Each binary serves the default models and the BERT cross-encoder fixture
# (`bert serve --model all-MiniLM-L6-v2,splade-tiny,<reranker>`) on a free port; the same
# requests go to both, one at a time (so each runs in a batch of its own), and each answer's md5
# is compared: OpenAI and TEI embeddings (float and base64), sparse, token vectors, similarity,
# rerank (TEI's and Cohere's), predict, tokenize, decode and fill.
#
#   tools/bench/compare_server.sh BERT_BEFORE BERT_AFTER
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: tools/bench/compare_server.sh BERT_BEFORE BERT_AFTER" >&2; exit 64; }
scratch=$(mktemp -d)
pids=()
cleanup() { for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done; rm -rf "$scratch"; }
trap cleanup EXIT
"$1" convert Tests/SwiftBERTTests/Fixtures/heads/bert-cross-encoder "$scratch/reranker" >/dev/null 2>&1
models="all-MiniLM-L6-v2,splade-tiny,$scratch/reranker"

# Starts a server (in this shell, so the exit trap can stop it); `port` waits for its /health.
serve() {
    "$1" serve --model "$models" --port 0 >"$scratch/$2.log" 2>&1 &
    pids+=($!)
}
port() {
    local log=$scratch/$1.log
    for _ in $(seq 600); do
        local port
        port=$(grep -oE '127\.0\.0\.1:[0-9]+' "$log" | grep -oE '[0-9]+$' | head -1 || true)
        if [ -n "$port" ] && curl -sf "127.0.0.1:$port/health" >/dev/null 2>&1; then echo "$port"; return; fi
        sleep 0.1
    done
    echo "the server did not start: $(cat "$log")" >&2; exit 1
}
serve "$1" before
serve "$2" after
before=$(port before)
after=$(port after)

requests=(
    '/v1/embeddings {"input": ["The cat sat on the mat.", "A second, longer sentence about something else entirely."], "model": "all-MiniLM-L6-v2"}'
    '/v1/embeddings {"input": "Base64, please.", "model": "all-MiniLM-L6-v2", "encoding_format": "base64"}'
    '/embed {"inputs": ["The cat sat on the mat.", "Dogs bark."], "model": "all-MiniLM-L6-v2"}'
    '/embed {"inputs": "Truncated from the left? No: normalised off.", "normalize": false, "model": "all-MiniLM-L6-v2"}'
    '/embed_sparse {"inputs": ["The cat sat on the mat."], "model": "splade-tiny"}'
    '/embed_all {"inputs": "Every token.", "model": "all-MiniLM-L6-v2"}'
    '/similarity {"inputs": {"source_sentence": "A man is eating food.", "sentences": ["A man eats bread.", "A girl carries a baby."]}, "model": "all-MiniLM-L6-v2"}'
    '/rerank {"query": "What is the capital of France?", "texts": ["Paris is the capital of France.", "Berlin is in Germany."], "return_text": true, "model": "reranker"}'
    '/v1/rerank {"query": "What is the capital of France?", "documents": ["Paris is the capital of France.", "Berlin is in Germany."], "model": "reranker"}'
    '/predict {"inputs": [["What is the capital of France?", "Paris is the capital of France."]], "model": "reranker"}'
    '/tokenize {"inputs": ["naïve café, un-tokenizable?"], "model": "all-MiniLM-L6-v2"}'
    '/decode {"ids": [101, 7592, 2088, 102], "model": "all-MiniLM-L6-v2"}'
    '/fill {"inputs": "The capital of France is [MASK].", "top_k": 5, "model": "splade-tiny"}'
    '/fill {"inputs": "A [MASK] sat on the mat, [MASK] it?", "top_k": 3, "words_only": true, "model": "splade-tiny"}'
)
differ=0
for request in "${requests[@]}"; do
    path=${request%% *} body=${request#* }
    curl -s -o "$scratch/a" -w '%{http_code}' "127.0.0.1:$before$path" -H 'Content-Type: application/json' -d "$body" >"$scratch/a.status"
    curl -s -o "$scratch/b" -w '%{http_code}' "127.0.0.1:$after$path" -H 'Content-Type: application/json' -d "$body" >"$scratch/b.status"
    a="$(cat "$scratch/a.status") $(md5sum <"$scratch/a" | cut -c1-32)" b="$(cat "$scratch/b.status") $(md5sum <"$scratch/b" | cut -c1-32)"
    # The status, the md5 and the start of the answer, so a refused request is not taken for an answer.
    if [ "$a" = "$b" ]; then echo "$path identical ($a): $(head -c 70 "$scratch/a")"; else echo "$path DIFFERS ($a vs $b): $body"; differ=1; fi
done
[ $differ = 0 ] && echo "identical answers (${#requests[@]} requests)" || { echo "answers differ" >&2; exit 1; }
