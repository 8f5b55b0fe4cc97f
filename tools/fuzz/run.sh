#!/usr/bin/env bash
# Builds SwiftBERT's libFuzzer targets and runs each for a set time, one after another.
#
#   tools/fuzz/run.sh [-t SECONDS] [-k] [TARGET ...]
#
# TARGET is safetensors (the header and tensor-table parser), loaders (config.json,
# tokenizer.json, vocab.txt), tokenizer (the tokenizer and line reader on arbitrary bytes) or
# torch (the torch.save checkpoint reader: stored zip, restricted unpickler, tensor table);
# default: all four. -t is the time per target (default 60 s; the recorded long runs in
# docs/robustness.md use 600). -k keeps binaries already built even if sources changed since
# (a long run on a snapshot while the tree is being edited). Each target is the library's sources compiled with swiftc
# together with tools/fuzz/Fuzz<Target>.swift, under -sanitize=fuzzer,address and -O (as the
# package, so overflows and bounds checks trap instead of wrapping silently).
#
# The working corpus grows in .build/fuzz/corpus/TARGET, seeded from tools/fuzz/seeds/TARGET
# (hand-written) and tools/fuzz/corpus/TARGET (the minimised corpus of the recorded long runs,
# made with -merge=1; the test suite replays it, see HostileFuzzCorpusTests);
# crashing inputs land in .build/fuzz/crashes/TARGET/. Turn each into a regression fixture in
# Tests/SwiftBERTTests/Fixtures/hostile/ (HostileInputTests replays them). The last line per
# target is a summary: executions, corpus size, crashes. Exit status 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=60
keep=0
while getopts "t:k" option; do
    case $option in
        t) seconds=$OPTARG ;;
        k) keep=1 ;;
        *) echo "usage: $0 [-t SECONDS] [-k] [safetensors|loaders|tokenizer|torch ...]" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors loaders tokenizer torch)

swiftc=${SWIFTC:-swiftc}
out=.build/fuzz
mkdir -p "$out"
# The engine and the command line's readers (the tokenizer target fuzzes TextRecordReader), as one module.
mapfile -t library < <(find Sources/SwiftBERT Sources/SwiftBERTCommandLine -name '*.swift' | sort)

entry_file() {
    case $1 in
        safetensors) echo tools/fuzz/FuzzSafeTensors.swift ;;
        loaders) echo tools/fuzz/FuzzLoaders.swift ;;
        tokenizer) echo tools/fuzz/FuzzTokenizer.swift ;;
        torch) echo tools/fuzz/FuzzTorchCheckpoint.swift ;;
        *) echo "unknown target $1 (safetensors, loaders, tokenizer, torch)" >&2; exit 64 ;;
    esac
}

# The torch target's inputs are zips of pickles, not JSON.
dictionary() {
    case $1 in
        torch) echo tools/fuzz/pickle.dict ;;
        *) echo tools/fuzz/json.dict ;;
    esac
}

build() {
    local target=$1 entry binary
    entry=$(entry_file "$target")
    binary=$out/fuzz-$target
    # Rebuild only when a source is newer than the binary.
    if [ -x "$binary" ] && { [ $keep = 1 ] || [ -z "$(find "${library[@]}" "$entry" -newer "$binary" | head -1)" ]; }; then
        return
    fi
    echo "building $binary" >&2
    rm -f "$binary"
    # From a snapshot of the sources: the tree may be edited while the compiler runs.
    local snapshot=$out/src-$target
    rm -rf "$snapshot"
    mkdir -p "$snapshot"
    cp -R Sources/SwiftBERT Sources/SwiftBERTCommandLine Sources/COpenBLAS "$entry" "$snapshot/"
    mapfile -t sources < <(find "$snapshot/SwiftBERT" "$snapshot/SwiftBERTCommandLine" -name '*.swift' | sort)
    "$swiftc" -module-name SwiftBERT -package-name SwiftBERT -parse-as-library -swift-version 5 -O -g \
        -sanitize=fuzzer,address -I "$snapshot/COpenBLAS" \
        "${sources[@]}" "$snapshot/$(basename "$entry")" -lopenblas -o "$binary" 2>&1 | { grep -v 'Cannot export local symbol' || true; } >&2
    [ -x "$binary" ] || { echo "building $binary failed" >&2; exit 1; }
}

status=0
for target in "${targets[@]}"; do
    build "$target"
    corpus=$out/corpus/$target
    crashes=$out/crashes/$target
    log=$out/$target.log
    mkdir -p "$corpus" "$crashes"
    before=$(find "$crashes" -type f | wc -l)
    echo "fuzzing $target for $seconds s (log: $log)" >&2
    # -timeout: an input taking over 10 s is a hang; -rss_limit_mb: unbounded allocation is a bug.
    # Leak checking is off: LeakSanitizer cannot see pointers Swift keeps in enum payloads with
    # spare-bit tags, so it reports reachable objects (and leaks are not a safety issue here).
    set +e
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$out/fuzz-$target" "$corpus" "tools/fuzz/seeds/$target" "tools/fuzz/corpus/$target" \
        -dict="$(dictionary "$target")" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -len_control=200 -print_final_stats=1 -detect_leaks=0 \
        -artifact_prefix="$crashes/" >"$log" 2>&1
    code=$?
    set -e
    executions=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
    after=$(find "$crashes" -type f | wc -l)
    found=$((after - before))
    echo "$target: $executions executions in $seconds s, corpus $(find "$corpus" -type f | wc -l) inputs, $found new crashing inputs (exit $code)"
    if [ "$found" -gt 0 ] || [ "$code" -ne 0 ]; then
        status=1
        grep -h -A3 'ERROR: \|Fatal error\|==ERROR' "$log" | head -20 >&2 || true
    fi
done
exit $status
