#!/usr/bin/env bash
# The test suite as `make test` runs it, on the build `make build-tests` made.
#
#   tools/run_suite.sh            every test: two processes side by side, then the timed tests alone
#   tools/run_suite.sh FILTER     the tests matching FILTER (`swift test --filter`), one process
#
# Most tests run one thread, so one process leaves a core of a 2-core machine idle. The suite's
# classes run in two processes side by side, balanced by their measured times, except those whose
# checks bound a wall-clock time (the server's deadlines and shutdown grace, the tokenizers'
# linear-time bounds, the hostile-input limits, the signal tests): they run alone afterwards, as
# the whole suite used to. The processes share only ./weights, where the one file a test writes
# (a model's INT8 weights, on first use) is written atomically. They run the XCTest bundle
# directly: `swift test` holds the build folder's lock while its tests run, so two of them would
# take turns.
#
# Prints each process's output, then one line that sums their XCTest summaries:
#   suite: P passed, F failed, S skipped, of N tests in T s (...)
# and exits non-zero if any process failed.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a flags <<<"$(cat tools/native-flags tools/build-flags | tr '\n' ' ')"
# Every file the tests and their `bert` children put in the temporary folder (copied and
# converted models, outputs: about 260 MB a process) goes into one folder of this run's, removed
# when it ends, however it ends: left in /tmp, 222 runs' folders once filled a machine's disk.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/swiftbert-suite.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

if [ $# -gt 0 ]; then
    swift test -c release "${flags[@]}" --disable-swift-testing --skip-build --filter "$1"
    exit
fi
bundle=$(swift build -c release "${flags[@]}" --show-bin-path)/SwiftBERTPackageTests.xctest
[ -x "$bundle" ] || { echo "run_suite: no test bundle at $bundle: run make build-tests first" >&2; exit 1; }

# Checks that bound wall-clock time: alone, where another process cannot stretch them.
timed='^(Server|Batcher|TokenizerComplexity|Hostile)'
# Seconds per class on a 2-core machine, alone (the suite of 4505e91 in CI; MPNetTests since
# its precisions run on a third of the sentences; GemmaTests when its weights are pulled, which
# CI does not do). A class not listed counts 1 s. The longest go first, each to the process with
# less work so far.
declare -A seconds=([MPNetTests]=110 [GemmaTests]=370 [Int8AccuracyTests]=66 [ChunkTests]=29
                    [BF16AccuracyTests]=15 [ConcurrencyTests]=15 [CLIFailureTests]=11 [TokenizerTypesTests]=8
                    [RotaryEncoderTests]=8 [CLICommandTests]=7 [CLIEmbedTests]=6 [EngineExactnessTests]=6
                    [SuggestTests]=5 [ChunkCLITests]=4 [HeadCLITests]=4 [MultilingualTokenizerTests]=4
                    [SuggestCLITests]=4 [TokenizerVariantTests]=4 [PullTests]=3 [TokenizerUnicodeTests]=3)

# Without EmbeddingGemma's real weights (CI never pulls them) GemmaTests skip at once: counted
# at 370 s, it would fill one process alone and leave the other with every other class.
[ -f weights/embeddinggemma-300m/config.json ] || seconds[GemmaTests]=1

classes=$("$bundle" --list-tests | sed -n -E 's|^SwiftBERTTests\.([A-Za-z0-9_]+)/.*|\1|p' | sort -u)
[ -n "$classes" ] || { echo "run_suite: $bundle lists no tests" >&2; exit 1; }
alone=() first=() second=() first_load=0 second_load=0
while read -r load class; do
    if [[ $class =~ $timed ]]; then alone+=("$class")
    elif [ "$first_load" -le "$second_load" ]; then first+=("$class"); first_load=$((first_load + load))
    else second+=("$class"); second_load=$((second_load + load)); fi
done < <(for class in $classes; do echo "${seconds[$class]:-1} $class"; done | sort -k1,1nr -k2)

specifiers() { local IFS=,; echo "${*/#/SwiftBERTTests.}"; }  # XCTest's Module.Class,Module.Class
logs=$(mktemp -d)
started=$(date +%s)
status=0
"$bundle" "$(specifiers "${first[@]}")" >"$logs/1.log" 2>&1 & one=$!
"$bundle" "$(specifiers "${second[@]}")" >"$logs/2.log" 2>&1 & two=$!
wait $one || status=1
wait $two || status=1
cat "$logs/1.log" "$logs/2.log"
side_by_side=$(( $(date +%s) - started ))
"$bundle" "$(specifiers "${alone[@]}")" 2>&1 | tee "$logs/3.log" || status=1

# XCTest's summary of each process: "Executed N tests, with S tests skipped and F failures (...)".
executed=0 skipped=0 failed=0
for log in "$logs"/{1,2,3}.log; do
    line=$(grep -E "^[[:space:]]*Executed [0-9]+ tests?, with" "$log" | tail -1)
    [ -n "$line" ] || { echo "run_suite: $log has no XCTest summary (the process ended early)" >&2; status=1; continue; }
    executed=$((executed + $(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$line")))
    failed=$((failed + $(sed -E 's/.* ([0-9]+) failures?.*/\1/' <<<"$line")))
    skipped=$((skipped + $(grep -oE "[0-9]+ tests? skipped" <<<"$line" | grep -oE "^[0-9]+" || echo 0)))
done
rm -rf "$logs"
echo "suite: $((executed - failed - skipped)) passed, $failed failed, $skipped skipped, of $executed tests in $(( $(date +%s) - started )) s" \
     "(${#first[@]} + ${#second[@]} classes side by side in $side_by_side s, then ${#alone[@]} timed classes alone)"
[ "$failed" -eq 0 ] || status=1
exit $status
