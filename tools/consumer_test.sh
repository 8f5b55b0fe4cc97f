#!/usr/bin/env bash
# What a user does: depend on SwiftBERT by version from another package, build it, use it.
# Clones this repository (its committed HEAD) into a temporary folder, tags the clone 1.0.0,
# writes a consumer package whose Package.swift says `.package(url: <clone>, from: "1.0.0")`,
# builds it with `swift build -c release` and nothing else (the portable build), and checks
# its embeddings of the reference sentences against sentence-transformers' (min cosine >=
# 0.9999; tools/consumer/main.swift). No network: SwiftPM resolves the local clone.
#
#   tools/consumer_test.sh [--native] [--debug] [--time ROUNDS] [--keep] [--server]
#
# --debug   builds `swift build -c debug` instead: the same resolution, sources and checks at a
#           third of the compile time (.ci/run's choice; the release build is `make dist`'s).
# --native  builds with the README's one build line instead (-Xswiftc -target-cpu ... native).
# --time N  then times one 128-token text from the consumer against the root build's
#           `bert bench` FP32 1x128 (2 threads), interleaved N rounds, and prints the medians.
# --server  depends on SwiftBERT with `traits: ["Server"]` and on the product SwiftBERTServer
#           too (a Swift service serving from its own process; builds Hummingbird, minutes), then
#           also checks the embeddings that the in-process server answers (consumer serve).
# --keep    leaves the temporary folder (its path is printed) to run the consumer again, e.g.
#           under qemu-x86_64 -cpu Haswell (docs/builds.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

native=0; debug=0; rounds=0; keep=0; server=0
while [ $# -gt 0 ]; do
    case $1 in
        --native) native=1 ;;
        --debug) debug=1 ;;
        --time) rounds=$2; shift ;;
        --keep) keep=1 ;;
        --server) server=1 ;;
        *) echo "usage: $0 [--native] [--debug] [--time ROUNDS] [--keep] [--server]" >&2; exit 64 ;;
    esac
    shift
done

model=$root/weights/all-MiniLM-L6-v2
reference=$root/Tests/SwiftBERTTests/Fixtures/reference/all-MiniLM-L6-v2
[ -f "$model/model.safetensors" ] || { echo "no $model: run make setup first" >&2; exit 1; }

work=$(mktemp -d)
[ $keep = 1 ] && echo "consumer folder: $work" >&2 || trap 'rm -rf "$work"' EXIT

git clone --quiet "$root" "$work/SwiftBERT"
git -C "$work/SwiftBERT" tag -f 1.0.0 >/dev/null
mkdir -p "$work/consumer/Sources/consumer"
cp tools/consumer/main.swift "$work/consumer/Sources/consumer/"
if [ $server = 1 ]; then
    dependency='.package(url: "'$work'/SwiftBERT", from: "1.0.0", traits: ["Server"])'
    products='.product(name: "SwiftBERT", package: "SwiftBERT"), .product(name: "SwiftBERTServer", package: "SwiftBERT")'
else
    dependency='.package(url: "'$work'/SwiftBERT", from: "1.0.0")'
    products='.product(name: "SwiftBERT", package: "SwiftBERT")'
fi
cat > "$work/consumer/Package.swift" <<EOF
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "consumer",
    dependencies: [$dependency],
    targets: [.executableTarget(name: "consumer", dependencies: [$products])]
)
EOF

build=(swift build -c release)
[ $debug = 1 ] && build=(swift build -c debug)
if [ $native = 1 ]; then read -r -a flags < tools/native-flags; build+=("${flags[@]}"); fi
echo "consumer: ${build[*]}" >&2
started=$(date +%s)
(cd "$work/consumer" && "${build[@]}" 2>&1 | grep -E 'error|warning: .*unsafe|Build complete' >&2) || true
consumer=$(cd "$work/consumer" && "${build[@]}" --show-bin-path)/consumer
[ -x "$consumer" ] || { echo "consumer: the build failed" >&2; exit 1; }
fetched=$(ls "$work/consumer/.build/checkouts" | tr '\n' ' ')
echo "consumer: built in $(( $(date +%s) - started )) s; packages fetched: $fetched" >&2
# The server's packages (Hummingbird, SwiftNIO, ...) are behind the trait Server, off by default:
# a consumer fetches SwiftBERT and the `bert` command's argument parser, nothing else.
[ $server = 1 ] || [ "$fetched" = "SwiftBERT swift-argument-parser " ] || { echo "consumer: fetched more than SwiftBERT and swift-argument-parser: $fetched" >&2; exit 1; }

"$consumer" check "$model" "$reference.json" "$reference.safetensors"
[ $server = 0 ] || "$consumer" serve "$model" "$reference.json" "$reference.safetensors"

if [ "$rounds" -gt 0 ]; then
    bert=${BERT:-$root/.build/release/bert}  # the root build to compare with
    [ -x "$bert" ] || { echo "no $bert: run make setup first" >&2; exit 1; }
    bench=(); mine=()
    fields='import json, sys
text = sys.stdin.read()  # bert bench: a JSON list; the consumer: a line of text, then one JSON object
try: row = json.loads(text)[0]
except ValueError: row = json.loads(text.strip().splitlines()[-1])
print(row["median_ms"], row["cpu_median_ms"])'
    for round in $(seq "$rounds"); do
        bench+=("$("$bert" bench --json --model all-MiniLM-L6-v2 --precision fp32 --batch 1 --seq 128 --threads 2 \
            --seconds 3 --accuracy-sentences 0 --no-memory --quiet | python3 -c "$fields")")
        mine+=("$("$consumer" time "$model" Tests/SwiftBERTTests/Fixtures/sentences.txt 3 | python3 -c "$fields")")
        echo "round $round (wall ms, CPU ms): bert bench fp32 1x128 ${bench[-1]}, consumer ${mine[-1]}; load $(cut -d' ' -f1 /proc/loadavg)" >&2
    done
    python3 - "$(printf '%s\n' "${bench[@]}")" "$(printf '%s\n' "${mine[@]}")" <<'EOF'
import statistics, sys
def medians(text):
    rows = [list(map(float, line.split())) for line in text.splitlines()]
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
(bench, bench_cpu), (mine, mine_cpu) = medians(sys.argv[1]), medians(sys.argv[2])
# Each round's consumer/bench ratio (measured back to back), then their median: the side-by-side figure.
paired = statistics.median(float(c.split()[0]) / float(b.split()[0]) for b, c in zip(sys.argv[1].splitlines(), sys.argv[2].splitlines()))
print(f"median over rounds: bert bench FP32 1x128 {bench:.2f} ms (CPU {bench_cpu:.2f}), consumer one 128-token "
      f"text {mine:.2f} ms (CPU {mine_cpu:.2f}); ratio {mine / bench:.3f} wall, {mine_cpu / bench_cpu:.3f} CPU, "
      f"{paired:.3f} wall round by round; load average {open('/proc/loadavg').read().split()[0]}")
EOF
fi
