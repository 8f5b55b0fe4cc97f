#!/usr/bin/env bash
# The test suite under AddressSanitizer, then under ThreadSanitizer (release mode, as `make
# test`: the kernels are too slow unoptimised). Each sanitizer builds in its own scratch folder
# (.build/sanitize-address, .build/sanitize-thread), so the main build is left alone, and the
# `bert` the end-to-end tests run is built with the same sanitizer.
#
#   tools/sanitize.sh [address|thread ...] [-- swift test arguments, e.g. --filter Concurrency]
#
# Prints the time each run took; exits non-zero if any run fails. See docs/robustness.md for
# the timings and for what runs in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sanitizers+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(address thread)

# Leak checking is off: LeakSanitizer cannot follow pointers that Swift stores with spare-bit
# tags in enum payloads and reports live objects as leaked. Out-of-bounds accesses, use after
# free and double frees are what this run is for.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0}
# Races are reported with both stacks; the run goes on so that one report does not hide others,
# and the exit status says whether there was any.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:exitcode=66}

# The sanitizer builds leave the package trait Server off, and with it `bert serve` and its
# dependencies (Hummingbird, SwiftNIO, swift-prometheus): compiling them twice more would add
# several minutes per sanitizer to CI, and the server's code is the HTTP layer over the engine
# these runs check. ServerTests skip here with that reason; `make test` runs them.

# The native build line (tools/native-flags), as `make test`: the same kernels are checked.
read -r -a native < tools/native-flags

status=0
summary=""
for sanitizer in "${sanitizers[@]}"; do
    case $sanitizer in address|thread) ;; *) echo "unknown sanitizer $sanitizer (address, thread)" >&2; exit 64 ;; esac
    scratch=.build/sanitize-$sanitizer
    flags=(-c release "${native[@]}" --sanitize="$sanitizer" --scratch-path "$scratch" -Xswiftc -enable-testing)
    started=$(date +%s)
    echo "== $sanitizer: building" >&2
    set +e
    swift build "${flags[@]}" --build-tests 2>&1 | grep -v -E '^(\[[0-9]+/[0-9]+\]|Compiling|Write|Emitting|Linking|Planning)' >&2
    code=${PIPESTATUS[0]}
    set -e
    built=$(date +%s)
    if [ "$code" -ne 0 ]; then
        summary+="$sanitizer: build failed after $((built - started)) s"$'\n'
        status=1
        continue
    fi
    echo "== $sanitizer: testing" >&2
    log=$scratch/test.log
    set +e
    # SWIFTBERT_SANITIZER lets timing checks that instrumentation would break stand down.
    SWIFTBERT_SANITIZER=$sanitizer SWIFTBERT_BERT="$(swift build "${flags[@]}" --show-bin-path)/bert" \
        swift test "${flags[@]}" --skip-build --disable-swift-testing "$@" 2>&1 | tee "$log"
    code=${PIPESTATUS[0]}
    set -e
    ended=$(date +%s)
    reports=$(grep -c -E '^(==[0-9]+==ERROR: AddressSanitizer|WARNING: ThreadSanitizer)' "$log" || true)
    line="$sanitizer: build $((built - started)) s, tests $((ended - built)) s, exit $code, $reports sanitizer reports"
    summary+="$line"$'\n'
    [ "$code" -eq 0 ] && [ "$reports" -eq 0 ] || status=1
done
printf '%s' "$summary"
exit $status
