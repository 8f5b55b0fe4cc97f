#!/usr/bin/env bash
# bert embed on 2,000 and 10,000 real lines: lines/s and peak RSS, to show memory is flat.
# The full check (sample equal to the library, RSS split into anonymous and mapped) is
# SWIFTBERT_BIG_TESTS=1 swift test --filter CLIBigFileTests.
set -euo pipefail
cd "$(dirname "$0")/../.."
read -r -a native < tools/native-flags
read -r -a repo < tools/build-flags
native+=("${repo[@]}")  # as the Makefile's build, so that the two share .build/release
swift build -c release "${native[@]}" --product bert >&2
bert=$(swift build -c release "${native[@]}" --show-bin-path)/bert
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cat /usr/share/common-licenses/* /usr/share/doc/*/copyright 2>/dev/null | grep -av '^[[:space:]]*$' | head -10000 > "$work/10k.txt"
head -2000 "$work/10k.txt" > "$work/2k.txt"
for n in 2k 10k; do
    /usr/bin/time -f "%M" -o "$work/rss" "$bert" embed --skip-invalid --input "$work/$n.txt" --format npy --output "$work/$n.npy" 2> "$work/log"
    printf '%4s lines: %s, peak RSS %.1f MiB\n' "$n" "$(grep -o 'in .*' "$work/log" | tail -1)" "$(awk "{print \$1 / 1024}" "$work/rss")"
done
