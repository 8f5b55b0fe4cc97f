#!/usr/bin/env bash
# The test suite under AddressSanitizer and/or ThreadSanitizer (release mode, as `make test`:
# the kernels are too slow unoptimised). Each sanitizer builds in its own scratch folder
# (.build/sanitize-address, .build/sanitize-thread, ...), so the main build is left alone, and
# the `bert` the end-to-end tests run is built with the same sanitizer.
#
#   tools/sanitize.sh [--build-only] [SANITIZER ...] [-- swift test arguments, e.g. --filter Concurrency]
#
# SANITIZER is address or thread (default: both), optionally with +server (thread+server): that
# build turns the package trait Server on, so the server's suites (ServerTests, BatcherTests)
# run instead of skipping, at the cost of compiling Hummingbird and SwiftNIO under the sanitizer
# too. Several sanitizers build side by side (a release build leaves a core idle for much of
# its time: one module's whole-module passes run on one thread), then test one after another.
# --build-only stops after the builds (.ci/run builds them beside the fuzz and consumer builds).
#
# Prints the time each run took; exits non-zero if any build or run fails or any sanitizer
# report is written. See docs/robustness.md for the timings and for what runs in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=0
sanitizers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
        --build-only) build_only=1 ;;
        address|thread|address+server|thread+server) sanitizers+=("$1") ;;
        *) echo "unknown sanitizer $1 (address, thread, address+server, thread+server)" >&2; exit 64 ;;
    esac
    shift
done
[ "${1:-}" = "--" ] && shift
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(address thread)

# Leak checking is off: LeakSanitizer cannot follow pointers that Swift stores with spare-bit
# tags in enum payloads and reports live objects as leaked. Out-of-bounds accesses, use after
# free and double frees are what this run is for.
asan_options=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0}
# Races are reported with both stacks; the run goes on so that one report does not hide others,
# and the exit status says whether there was any.
tsan_options=${TSAN_OPTIONS:-halt_on_error=0:exitcode=66}

# Without +server the build leaves the package trait Server off, and with it `bert serve` and
# its dependencies (Hummingbird, SwiftNIO, swift-prometheus): ServerTests and BatcherTests skip
# there with that reason; `make test` runs them.

# The native build line (tools/native-flags), as `make test`: the same kernels are checked.
read -r -a native < tools/native-flags

flags() {  # the build and test flags of sanitizer $1 (address, thread+server, ...)
    local flags=(-c release "${native[@]}" --sanitize="${1%+server}" --scratch-path ".build/sanitize-$1" -Xswiftc -enable-testing)
    local traits=()
    [ "${1%+server}" = "$1" ] || traits+=(Server)
    # ThreadSanitizer's tests spend their time in the engine, so their own module is compiled
    # unoptimised (Package.swift, trait UnoptimisedTests): the test bundle built in 60 s instead
    # of 132, and its tests ran in 103 s against 101 (2026-11-28, alone on 2 cores, AVX2).
    # AddressSanitizer's tests include the kernels' scalar references: unoptimised they took
    # 390 s instead of 169, more than the build saves.
    [ "${1%+server}" = thread ] && traits+=(UnoptimisedTests)
    [ ${#traits[@]} -eq 0 ] || flags+=(--traits "$(IFS=,; echo "${traits[*]}")")
    echo "${flags[@]}"
}

status=0
summary=""

# The builds, side by side; each one's output (less the progress lines) in its scratch folder.
declare -A pids started
for sanitizer in "${sanitizers[@]}"; do
    read -r -a f <<<"$(flags "$sanitizer")"
    mkdir -p ".build/sanitize-$sanitizer"
    echo "== $sanitizer: building" >&2
    started[$sanitizer]=$(date +%s)
    # What the tests run, no more: `bert` (the end-to-end tests' child) and the test bundle
    # (not the benchmarks or the C ABI, which no sanitized test loads).
    ( { swift build "${f[@]}" --product bert && swift build "${f[@]}" --product SwiftBERTPackageTests; } 2>&1 | grep -v -E '^(\[[0-9]+/[0-9]+\]|Compiling|Write|Emitting|Linking|Planning)' \
        >".build/sanitize-$sanitizer/build.log"; code=${PIPESTATUS[0]}; date +%s >".build/sanitize-$sanitizer/build.end"; exit "$code" ) &
    pids[$sanitizer]=$!
done
built_ok=()
for sanitizer in "${sanitizers[@]}"; do
    code=0
    wait "${pids[$sanitizer]}" || code=$?
    cat ".build/sanitize-$sanitizer/build.log" >&2
    seconds=$(( $(cat ".build/sanitize-$sanitizer/build.end") - ${started[$sanitizer]} ))
    if [ "$code" -ne 0 ]; then
        summary+="$sanitizer: build failed after $seconds s"$'\n'
        status=1
    else
        summary+="$sanitizer: built in $seconds s"$'\n'
        built_ok+=("$sanitizer")
    fi
done

[ $build_only = 1 ] && { printf '%s' "$summary"; exit $status; }

# The tests' temporary files in one folder of this run's, removed when it ends (as tools/run_suite.sh).
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/swiftbert-sanitize.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

for sanitizer in ${built_ok[@]+"${built_ok[@]}"}; do
    read -r -a f <<<"$(flags "$sanitizer")"
    scratch=.build/sanitize-$sanitizer
    log=$scratch/test.log
    # Every process's reports go to files, the `bert` children's too: the tests capture a
    # child's stderr, so a report written there would not reach this log.
    reports_dir=$scratch/reports
    rm -rf "$reports_dir"; mkdir -p "$reports_dir"
    echo "== $sanitizer: testing" >&2
    testing=$(date +%s)
    set +e
    # SWIFTBERT_SANITIZER lets timing checks that instrumentation would break stand down.
    ASAN_OPTIONS="$asan_options:log_path=$PWD/$reports_dir/report:log_exe_name=1" \
    TSAN_OPTIONS="$tsan_options:log_path=$PWD/$reports_dir/report:log_exe_name=1" \
    SWIFTBERT_SANITIZER=${sanitizer%+server} SWIFTBERT_BERT="$(swift build "${f[@]}" --show-bin-path)/bert" \
        swift test "${f[@]}" --skip-build --disable-swift-testing "$@" 2>&1 | tee "$log"
    code=${PIPESTATUS[0]}
    set -e
    ended=$(date +%s)
    reports=0
    for file in "$reports_dir"/report.*; do
        [ -f "$file" ] || continue
        echo "== $sanitizer: reports in $file" >&2
        cat "$file" | tee -a "$log" >&2
        reports=$((reports + $(grep -c -E '^(==.*==ERROR: AddressSanitizer|WARNING: ThreadSanitizer)' "$file" || true)))
    done
    summary+="$sanitizer: tests $((ended - testing)) s, exit $code, $reports sanitizer reports"$'\n'
    [ "$code" -eq 0 ] && [ "$reports" -eq 0 ] || status=1
done
printf '%s' "$summary"
exit $status
