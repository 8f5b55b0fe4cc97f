#!/usr/bin/env python3
"""Issue 47's targets from one run of tools/bench/compare_engines.py (its results JSON): per model and
cell, the medians of SwiftBERT (tiles, and AMX off) and of the peers, and the ratios the issue sets.

    python3 tools/bench/amx_targets.py weights/.cache/compare/results-YYYYMMDD-HHMMSS.json

Ratios: BF16 / OpenVINO BF16 (target <= 0.8); SwiftBERT's best INT8 mode / the fastest INT8 peer
(<= 0.8); FP32 / the fastest FP32 peer (<= 1.0); FP32 / BF16 (>= 2 at 128 tokens and beyond).
Standard library only.
"""
import json
import sys

INT8_MODES = {"swift-int8": "int8", "swift-int8a": "int8-attention", "swift-int8s": "int8-static"}


def main():
    results = json.load(open(sys.argv[1]))
    m = results["machine"]
    print(f"Run of {results['started']} ({'quick' if results['quick'] else 'full'}), {m['cpu']}, {m['cores']} cores, "
          f"commit {m['commit']}, {results['duration_min']:.1f} min; medians in ms over interleaved rounds.\n")
    for key, model in results["models"].items():
        print(f"**{model['title']}**\n")
        print("| cell | FP32 | BF16 | BF16, AMX off | best INT8 (mode) | INT8, AMX off | OV f32 | OV bf16 | OV INT8 | ORT f32 | ORT INT8 "
              "| BF16 / OV bf16 | INT8 / best INT8 peer | FP32 / best FP32 peer | FP32 / BF16 |")
        print("|---|" + "--:|" * 14)
        for cell in model["cells"]:
            ms = {r["engine"]: r["median_ms"] for r in cell["rows"] if r.get("op", "run") == "run" and r.get("split") is None}
            def get(e): return ms.get(e)
            def fmt(x): return "" if x is None else (f"{x:.2f}" if x < 100 else f"{x:.0f}")
            def ratio(a, b): return "" if a is None or b is None else f"{a / b:.2f}"
            int8 = [(ms[e], mode) for e, mode in INT8_MODES.items() if e in ms]
            best_int8 = min(int8) if int8 else (None, "")
            int8_peer = min([ms[e] for e in ("ov-int8", "ort-int8") if e in ms], default=None)
            fp32_peer = min([ms[e] for e in ("ov-fp32", "ort-fp32") if e in ms], default=None)
            name = f"{cell['workload']}" + (f" T{cell['threads']}" if cell["threads"] > 1 else "")
            print(f"| {name} | {fmt(get('swift-fp32'))} | {fmt(get('swift-bf16'))} | {fmt(get('swift-bf16-vector'))} "
                  f"| {fmt(best_int8[0])} ({best_int8[1]}) | {fmt(get('swift-int8-vector'))} | {fmt(get('ov-fp32'))} "
                  f"| {fmt(get('ov-bf16'))} | {fmt(get('ov-int8'))} | {fmt(get('ort-fp32'))} | {fmt(get('ort-int8'))} "
                  f"| {ratio(get('swift-bf16'), get('ov-bf16'))} | {ratio(best_int8[0], int8_peer)} "
                  f"| {ratio(get('swift-fp32'), fp32_peer)} | {ratio(get('swift-fp32'), get('swift-bf16'))} |")
        agreement = model.get("agreement", {})
        if agreement:
            print("\nCosine to PyTorch FP32 (pooled output, b1x128): " + ", ".join(
                f"{e} {a['cosine']:.6f}" for e, a in agreement.items() if "cosine" in a))
        print()


if __name__ == "__main__":
    main()
