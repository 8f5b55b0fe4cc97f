#!/usr/bin/env bash
# Builds SwiftBERT's libFuzzer targets and runs each for a set time (one after another, or -j at a time).
#
#   tools/fuzz/run.sh [-t SECONDS] [-k] [-b] [-j JOBS] [TARGET ...]
#
# TARGET is safetensors (the header and tensor-table parser), loaders (config.json,
# tokenizer.json, vocab.txt), tokenizer (the tokenizer and line reader on arbitrary bytes) or
# torch (the torch.save checkpoint reader: stored zip, restricted unpickler, tensor table);
# default: all four. -t is the time per target (default 60 s; the recorded long runs in
# docs/robustness.md use 600). -k keeps the binary already built even if sources changed since
# (a long run on a snapshot while the tree is being edited). -b builds the binary (if sources
# changed) and stops: .ci/run builds it beside the other builds, then fuzzes. -j runs that many
# targets at a time (default 1; each takes one core: CI's two cores run two). The binary, .build/fuzz/fuzz, is the
# library's sources compiled with swiftc together with every tools/fuzz/Fuzz*.swift, under
# -sanitize=fuzzer,address and -O (as the package, so overflows and bounds checks trap instead of
# wrapping silently); SWIFTBERT_FUZZ_TARGET=TARGET picks the target it runs.
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
build_only=0
jobs=1
while getopts "t:kbj:" option; do
    case $option in
        t) seconds=$OPTARG ;;
        k) keep=1 ;;
        b) build_only=1 ;;
        j) jobs=$OPTARG ;;
        *) echo "usage: $0 [-t SECONDS] [-k] [-b] [-j JOBS] [safetensors|loaders|tokenizer|torch ...]" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
[ "$jobs" -ge 1 ] 2>/dev/null || { echo "-j takes a number of targets, 1 or more" >&2; exit 64; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors loaders tokenizer torch)

swiftc=${SWIFTC:-swiftc}
out=.build/fuzz
mkdir -p "$out"
# The engine and the command line's readers (the tokenizer target fuzzes TextRecordReader), as one
# module, over the kernels and what they import: SwiftBERTVNNI (Swift, through CBF16's header) and
# SwiftBERTAMX (C). Headers and C files count: a changed one rebuilds too, as do the build flags.
mapfile -t library < <(find Sources/SwiftBERTVNNI Sources/SwiftBERTKernels Sources/SwiftBERT Sources/SwiftBERTCommandLine -name '*.swift'
                       find Sources/SwiftBERTAMX Sources/CBF16 Sources/COpenBLAS -type f; echo tools/native-flags)

check_target() {
    case $1 in
        safetensors|loaders|tokenizer|torch) ;;
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

# One binary holds all four targets (FuzzMain.swift picks one by SWIFTBERT_FUZZ_TARGET): each
# build compiles the whole library with AddressSanitizer, about 3 minutes on 2 cores.
binary=$out/fuzz
entries=(tools/fuzz/Fuzz*.swift)
build() {
    # Rebuild only when a source is newer than the binary.
    if [ -x "$binary" ] && { [ $keep = 1 ] || [ -z "$(find "${library[@]}" "${entries[@]}" -newer "$binary" | head -1)" ]; }; then
        return
    fi
    echo "building $binary" >&2
    rm -f "$binary"
    # From a snapshot of the sources: the tree may be edited while the compiler runs.
    local snapshot=$out/src
    rm -rf "$snapshot"
    mkdir -p "$snapshot/entries"
    cp -R Sources/SwiftBERTAMX Sources/SwiftBERTVNNI Sources/SwiftBERTKernels Sources/SwiftBERT Sources/SwiftBERTCommandLine \
        Sources/COpenBLAS Sources/CBF16 "$snapshot/"
    cp "${entries[@]}" "$snapshot/entries/"
    # The package build's flags: the native line (tools/native-flags, as make, sanitize.sh and the
    # suite build), and Package.swift's hostFeatures, the SWIFTBERT_HOST_… define of each AVX-512
    # extension /proc/cpuinfo names. VNNI, the kernels and the engine must agree on them: the
    # kernels call VNNI's intrinsics only where VNNI compiled them.
    local native=() host=() flag pair
    for flag in $(cat tools/native-flags); do [ "$flag" = -Xswiftc ] || native+=("$flag"); done
    for pair in avx512f:AVX512 avx512_vnni:VNNI avx512_bf16:BF16; do
        grep -q " ${pair%%:*}" /proc/cpuinfo && host+=("-DSWIFTBERT_HOST_${pair#*:}")
    done
    local swift=("$swiftc" -package-name SwiftBERT -parse-as-library -O -g -num-threads 2 -sanitize=fuzzer,address
                 "${native[@]}" "${host[@]}" -I "$snapshot/COpenBLAS" -I "$snapshot/CBF16" -I "$snapshot/SwiftBERTAMX/include" -I "$out/modules")
    rm -rf "$out/modules"; mkdir -p "$out/modules/amx"
    # SwiftBERTAMX, as SwiftPM compiles a C target (-O2, no flags of its own: the tile functions
    # carry target attributes), instrumented for coverage and ASan; the fuzzer's main comes with
    # the last link. Its module map is the one SwiftPM generates for an include/ folder.
    printf 'module SwiftBERTAMX {\n    umbrella "."\n    export *\n}\n' >"$snapshot/SwiftBERTAMX/include/module.modulemap"
    local c
    for c in "$snapshot"/SwiftBERTAMX/*.c; do
        "${CLANG:-clang}" -O2 -g -DSWIFT_PACKAGE=1 -fblocks -fPIC -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address \
            -I "$snapshot/SwiftBERTAMX/include" -c "$c" -o "$out/modules/amx/$(basename "$c" .c).o"
    done
    ar rcs "$out/modules/libSwiftBERTAMX.a" "$out/modules"/amx/*.o
    # SwiftBERTVNNI: Package.swift's settings, the Builtin module and Swift 6 (the package's mode).
    mapfile -t vnni < <(find "$snapshot/SwiftBERTVNNI" -name '*.swift' | sort)
    "${swift[@]}" -module-name SwiftBERTVNNI -swift-version 6 -enable-experimental-feature BuiltinModule \
        -emit-module -emit-module-path "$out/modules/SwiftBERTVNNI.swiftmodule" \
        -emit-library -static -o "$out/modules/libSwiftBERTVNNI.a" "${vnni[@]}" 2>&1 | { grep -v 'Cannot export local symbol' || true; } >&2
    # The kernels next, as the module the engine imports (a static library), then the engine,
    # the command line's readers and the entries as one module.
    mapfile -t kernels < <(find "$snapshot/SwiftBERTKernels" -name '*.swift' | sort)
    "${swift[@]}" -module-name SwiftBERTKernels -swift-version 5 -emit-module -emit-module-path "$out/modules/SwiftBERTKernels.swiftmodule" \
        -emit-library -static -o "$out/modules/libSwiftBERTKernels.a" "${kernels[@]}" 2>&1 | { grep -v 'Cannot export local symbol' || true; } >&2
    mapfile -t sources < <(find "$snapshot/SwiftBERT" "$snapshot/SwiftBERTCommandLine" "$snapshot/entries" -name '*.swift' | sort)
    "${swift[@]}" -module-name SwiftBERT -swift-version 5 -L "$out/modules" -lSwiftBERTKernels -lSwiftBERTVNNI -lSwiftBERTAMX \
        "${sources[@]}" -lopenblas -o "$binary" 2>&1 | { grep -v 'Cannot export local symbol' || true; } >&2
    [ -x "$binary" ] || { echo "building $binary failed" >&2; exit 1; }
}

for target in "${targets[@]}"; do check_target "$target"; done
started=$(date +%s)
build
[ $build_only = 0 ] || { echo "fuzz binary up to date after $(( $(date +%s) - started )) s" >&2; exit 0; }
# One target's run; its summary line (and the start of any crash report) on stdout.
fuzz() {
    local target=$1 corpus=$out/corpus/$1 crashes=$out/crashes/$1 log=$out/$1.log
    mkdir -p "$corpus" "$crashes"
    local before
    before=$(find "$crashes" -type f | wc -l)
    echo "fuzzing $target for $seconds s (log: $log)" >&2
    # -timeout: an input taking over 10 s is a hang; -rss_limit_mb: unbounded allocation is a bug.
    # Leak checking is off: LeakSanitizer cannot see pointers Swift keeps in enum payloads with
    # spare-bit tags, so it reports reachable objects (and leaks are not a safety issue here).
    local code=0
    SWIFTBERT_FUZZ_TARGET=$target ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} "$binary" "$corpus" "tools/fuzz/seeds/$target" "tools/fuzz/corpus/$target" \
        -dict="$(dictionary "$target")" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -len_control=200 -print_final_stats=1 -detect_leaks=0 \
        -artifact_prefix="$crashes/" >"$log" 2>&1 || code=$?
    local executions after found
    executions=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
    after=$(find "$crashes" -type f | wc -l)
    found=$((after - before))
    echo "$target: $executions executions in $seconds s, corpus $(find "$corpus" -type f | wc -l) inputs, $found new crashing inputs (exit $code)"
    if [ "$found" -gt 0 ] || [ "$code" -ne 0 ]; then
        grep -h -A3 'ERROR: \|Fatal error\|==ERROR' "$log" | head -20 >&2 || true
        return 1
    fi
}

# -j targets at a time (each libFuzzer process uses one core), their summaries in target order.
status=0
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    pids=()
    for target in "${batch[@]}"; do fuzz "$target" >"$out/$target.summary" & pids+=($!); done
    for j in "${!batch[@]}"; do
        wait "${pids[$j]}" || status=1
        cat "$out/${batch[$j]}.summary"
    done
done
exit $status
