#!/usr/bin/env bash
# Whether two `bert` binaries give byte-identical outputs: the md5 of `bert embed` (fp32, int8,
# bf16; jsonl and tsv) on the 24 sentences of Tests/SwiftBERTTests/Fixtures/reference/all-MiniLM-L6-v2.json,
# and of `bert fill --json` (fp32, int8, bf16) on two masked texts, each binary run from this
# checkout's weights/. For refactors that must not change a number.
#
#   tools/bench/compare_outputs.sh BERT_BEFORE BERT_AFTER
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: tools/bench/compare_outputs.sh BERT_BEFORE BERT_AFTER" >&2; exit 64; }
texts=$(mktemp)
trap 'rm -f "$texts"' EXIT
python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["sentences"]))' \
    Tests/SwiftBERTTests/Fixtures/reference/all-MiniLM-L6-v2.json > "$texts"
digests() {
    local bert=$1
    for p in fp32 int8 bf16; do echo "embed $p $("$bert" embed --quiet --precision $p --input "$texts" | md5sum | cut -c1-32)"; done
    echo "embed tsv $("$bert" embed --quiet --format tsv --input "$texts" | md5sum | cut -c1-32)"
    for p in fp32 int8 bf16; do
        echo "fill $p $({ "$bert" fill --json --precision $p 'The capital of France is [MASK].'
                         "$bert" fill --json --precision $p 'I would like a [MASK] of coffee, [MASK] you.'; } | md5sum | cut -c1-32)"
    done
}
before=$(digests "$1"); after=$(digests "$2")
paste <(echo "$before") <(echo "$after" | awk '{print $3}') | awk '{ print $0, ($3 == $4 ? "identical" : "DIFFERENT") }'
[ "$before" = "$after" ] && echo "identical outputs" || { echo "outputs differ"; exit 1; }
