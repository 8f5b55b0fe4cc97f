#!/usr/bin/env bash
# Whether two `bert` binaries give byte-identical outputs, for refactors that must not change a
# number. Each binary runs, from this checkout's weights/ and test fixtures:
# - `bert embed --format npy` on 60 lines of the sentence fixture and one 600-token text: MiniLM
#   and MPNet in fp32, int8, int8-attention, bf16 and int8-static (when the weights folder has
#   model.int8-static.safetensors), and the random-weight GTE, NomicBERT and ModernBERT fixtures
#   in fp32, int8, int8-attention and bf16;
# - `bert fill` and `embed --sparse` (splade-tiny), BGE-M3's `--sparse --multi-vector` (fixture);
# - `rerank`, `classify` and `ner` on the head fixtures (BERT and DistilBERT), `similarity`,
#   `tokenize` (MPNet), and `info --json` less its timings.
# The fixtures are converted (and quantised) once, with BERT_BEFORE, into a scratch folder.
#
#   tools/bench/compare_outputs.sh BERT_BEFORE BERT_AFTER
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: tools/bench/compare_outputs.sh BERT_BEFORE BERT_AFTER" >&2; exit 64; }
before=$(realpath "$1"); after=$(realpath "$2")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fixtures=Tests/SwiftBERTTests/Fixtures heads=Tests/SwiftBERTTests/Fixtures/heads
texts=$scratch/texts.txt
head -60 $fixtures/sentences.txt > "$texts"
python3 -c "print(' '.join('The quick brown fox jumps over the lazy dog number %d.' % i for i in range(60)))" >> "$texts"
for name in gte nomic modernbert; do
    "$before" convert $fixtures/rotary/$name "$scratch/$name" >/dev/null 2>&1
    "$before" quantize "$scratch/$name" >/dev/null 2>&1
done
"$before" convert $fixtures/bgem3 "$scratch/bgem3" >/dev/null 2>&1

outputs() {
    local bert=$1 out=$2
    mkdir -p "$out"
    for model in all-MiniLM-L6-v2 all-mpnet-base-v2 "$scratch/gte" "$scratch/nomic" "$scratch/modernbert"; do
        for precision in fp32 int8 int8-attention bf16 int8-static; do
            [ $precision = int8-static ] && [ ! -f "weights/$model/model.int8-static.safetensors" ] && continue
            "$bert" embed --quiet --model "$model" --precision $precision --threads 2 --input "$texts" --format npy \
                --output "$out/embed-$(basename "$model")-$precision.npy"
        done
    done
    for text in "The capital of France is [MASK]." "A [MASK] sat on the mat, [MASK] it?"; do
        "$bert" fill --json --model splade-tiny --top-k 10 "$text"
    done > "$out/fill.txt"
    "$bert" embed --quiet --model splade-tiny --sparse --input "$texts" > "$out/sparse.txt"
    "$bert" embed --quiet --model "$scratch/bgem3" --sparse --multi-vector --input "$texts" > "$out/bgem3.txt"
    "$bert" rerank --json --model $heads/bert-cross-encoder "who may copy" "Permission is hereby granted." \
        "Each contributor grants you a patent license." "It is blue." > "$out/rerank.txt"
    for fixture in bert-classifier distilbert-classifier; do
        "$bert" classify --json --model $heads/$fixture --input "$texts" > "$out/classify-$fixture.txt"
    done
    for fixture in bert-ner distilbert-ner; do
        "$bert" ner --json --model $heads/$fixture --input "$texts" > "$out/ner-$fixture.txt"
    done
    "$bert" similarity "A man is eating food." "A man is eating a piece of bread." "The girl is carrying a baby." > "$out/similarity.txt"
    "$bert" tokenize --model all-mpnet-base-v2 --input "$texts" > "$out/tokenize.txt"
    "$bert" info --model all-MiniLM-L6-v2 --json | python3 -c 'import json, sys
info = json.load(sys.stdin)
print(json.dumps({k: v for k, v in info.items() if "second" not in k and "resident" not in k and "memory" not in k}, sort_keys=True))' > "$out/info.txt"
    (cd "$out" && md5sum * | sort -k2)
}
outputs "$before" "$scratch/before" > "$scratch/before.md5"
outputs "$after" "$scratch/after" > "$scratch/after.md5"
join -1 2 -2 2 "$scratch/before.md5" "$scratch/after.md5" | awk '{ print $1, ($2 == $3 ? "identical" : "DIFFERENT") }'
cmp -s "$scratch/before.md5" "$scratch/after.md5" && echo "identical outputs ($(wc -l < "$scratch/before.md5") files)" \
    || { echo "outputs differ"; exit 1; }
