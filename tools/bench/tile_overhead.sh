#!/usr/bin/env bash
# What the tile path costs besides the tile instructions (issue 47, docs/amx.md), on any CPU.
#
# Builds `bert` from a copy of this tree (its last commit) whose tile emulator does no arithmetic: each product
# only stores zeros into its outputs (what a tile store writes), then profiles BF16 and INT8 with
# SWIFTBERT_ISA=amx-emulator. Everything else of the tile path runs as on AMX: the activations'
# rounding and packing, the C calls, the epilogues (bias, INT8 scales), GELU, attention's
# softmax and packing around its tile products, LayerNorm. So on an AMX machine, the pass on
# the tiles minus this pass is the time in tile instructions, and the stages here are what
# bounds the pass however fast the tiles run. The outputs are meaningless (accuracy is not
# measured): never use this build for anything else.
#
#   tools/bench/tile_overhead.sh [bert bench options]   # default: MiniLM 1x128 and 1x512, 1 thread
#
# The copy and its build live in ${TILE_OVERHEAD_DIR:-/tmp/swiftbert-tile-overhead} (a first
# release build: 5-9 minutes on 2 cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${TILE_OVERHEAD_DIR:-/tmp/swiftbert-tile-overhead}
# A clone at this tree's HEAD; a later run checks out only what changed (and restores
# emulator.c), so its build is incremental.
[ -d "$work/.git" ] || git clone -q --no-checkout "$root" "$work"
git -C "$work" fetch -q "$root" HEAD
git -C "$work" checkout -q -f --detach FETCH_HEAD
python3 - "$work/Sources/SwiftBERTAMX/emulator.c" <<'EOF'
import re, sys
path = sys.argv[1]
source = open(path).read()
products = re.compile(r"TILE_GEMM\(swiftbert_emulated_(bf16|int8)_gemm, , (\w+), (\w+), (\w+), SOFT_DP\w+\)")
assert len(products.findall(source)) == 2, "emulator.c no longer instantiates its two products as this script expects"
def free(match):
    name, a, b, c = match.groups()
    return (f"void swiftbert_emulated_{name}_gemm(const {a} *a, size_t a_stride, int rows, const {b} *b, size_t b_stride,\n"
            f"    size_t b_panel_stride, int cols, int depth, {c} *c, size_t c_stride, int accumulate) {{\n"
            f"    /* tile_overhead.sh: no arithmetic; a tile store's bytes only */\n"
            f"    if (accumulate) return;\n"
            f"    for (int r = 0; r < rows; r++) memset((char *)c + (size_t)r * c_stride, 0, (size_t)cols * 4);\n}}")
open(path, "w").write(products.sub(free, source))
EOF
cd "$work"
swift build -c release $(cat tools/native-flags) --product bert >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
cd "$root"
[ $# -gt 0 ] || set -- --model all-MiniLM-L6-v2 --precision bf16,int8 --batch 1 --seq 128,512 --threads 1 --seconds 4
SWIFTBERT_HOME=${SWIFTBERT_HOME:-$root} SWIFTBERT_ISA=amx-emulator "$work/.build/release/bert" bench --profile --no-memory \
    --accuracy-sentences 0 "$@"
