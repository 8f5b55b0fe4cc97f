#!/usr/bin/env python3
"""Checks the machine code of the hot loops in a native release build: no Swift runtime calls, and
vector code where vector code is meant to be.

    tools/check_kernels.py [.build/release/bert]

Why: the library is built with -O (a versioned dependency cannot set -Ounchecked or
-enforce-exclusivity=unchecked), and there a single range-checked conversion or a pointer to a
captured variable silently costs a kernel its vectorisation or adds a runtime call per step. Two
such regressions went unnoticed for a session (docs/history/benchmarks-notebook.md, "Two -O regressions, found and fixed"):
`Int32(_:)` in the softmax's exp2 kept attention scalar (MiniLM b1x512 FP32 93 ms instead of 62),
and pointers to the BF16 tile's accumulators made Swift check exclusive access around every
vdpbf16ps (BF16 6.4x slower than FP32). The suite's results were right all along; only the
machine code shows it. This reads `objdump -d` and fails (exit 1) when
- a kernel function calls the Swift runtime (swift_beginAccess, swift_retain, swift_release, ...);
- the attention or elementwise kernels have no 512-bit vector instructions, or the attention's
  exp2 has no 16-lane exponent shift (`vpslld $0x17, ..., %zmm`).
On an Intel CPU, 256-bit instructions count as well for the loops LLVM vectorises by itself (the
exp2, GELU, LayerNorm): its tuning for Intel's AVX-512 server cores (Skylake-SP to Sapphire
Rapids, `prefer-256-bit`) keeps such loops at 256 bits, where its AMD Zen 4/5 tuning uses 512.
Either is vector code; the regressions this guards against were scalar.
On a host without AVX-512 (an AMD EPYC with AVX2 ran this on 2026-11-27) the native build's
vectors are 256 bits wide, and those count; a portable build (no AVX) is refused: there is
nothing to check.
"""
import re
import subprocess
import sys

# Symbol substrings of the hot functions (Swift mangled names keep the source names).
RUNTIME_FREE = ["panelTile", "AttentionTile", "attendHead", "addLayerNorm", "4gelu_", "softmaxRows"]
# Closures (row blocks) of the row-wise passes; their outer functions set up the region and may
# allocate it.
RUNTIME_FREE_CLOSURES = ["Int8ActivationsC8quantize", "BF16ActivationsC5round"]
NEEDS_ZMM = ["panelTile", "AttentionTile", "attendHead", "addLayerNorm", "4gelu_", "softmaxRows"]
# A cached type-metadata lookup: objdump lists the small out-of-line accessor that calls it under
# the function placed before it (it has no symbol of its own); it runs once per process.
ALLOWED = {"swift_getTypeByMangledNameInContext2", "swift_getTypeByMangledNameInContextInMetadataState2"}


def functions(binary):
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True,
                             check=True).stdout
    result, current = {}, None
    for line in listing.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            current = header.group(1)
            result[current] = []
        elif current and line.strip():
            result[current].append(line)
    return result


def demangled(names):
    """Swift's demangler on each name (the toolchain's `swift demangle`), in order."""
    out = subprocess.run(["swift", "demangle", "--compact"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


def unspecialised(text):
    """A generic function's unspecialised body, or a type's value witness. A -enable-testing build
    (make test) keeps these as entry points; the engine runs the specialised copies."""
    return "value witness" in text or (" where " in text and "generic specialization <" not in text)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/bert"
    # The kernels' target, and the engine's (whose Linear and attention call them).
    code = {name: body for name, body in functions(binary).items() if name.startswith(("$s16SwiftBERTKernels", "$s9SwiftBERT"))}
    cpuinfo = open("/proc/cpuinfo").read()
    # The native build targets this host: AVX-512 where it has it, else AVX2's 256-bit registers
    # (an AMD EPYC without AVX-512 ran CI on 2026-11-27).
    has512 = re.search(r"^flags\s*:.*\bavx512f\b", cpuinfo, re.M) is not None
    widest = "zmm" if has512 else "ymm"
    if not any(widest in line for name, body in code.items() if "panelTile" in name for line in body):
        sys.exit(f"{binary}: no {'AVX-512' if has512 else 'AVX2'} in the Linear kernels: a portable build? (build with $(cat tools/native-flags))")
    names = list(code)
    # Without vdpbf16ps the engine's bf16 attention runs WidenedBF16Attention (attendHead(bf16:));
    # BF16Attention's emulated step is compiled for the tests that compare the two, never run.
    has_bf16 = re.search(r"^flags\s*:.*\bavx512_bf16\b", cpuinfo, re.M) is not None
    skip = {name for name, text in zip(names, demangled(names))
            if unspecialised(text) or "metadata" in text or (not has_bf16 and "<SwiftBERTKernels.BF16Attention" in text)}
    # The vector registers that count as vector code for the loops LLVM vectorises by itself.
    vendor = next((line.split(":")[1].strip() for line in cpuinfo.splitlines() if line.startswith("vendor_id")), "")
    wide = r"%[yz]mm" if vendor == "GenuineIntel" or not has512 else r"%zmm"
    problems, checked = [], 0
    for name, body in code.items():
        if name in skip:
            continue
        closure = re.search(r"F[yXA-Z_]*fU_", name) is not None
        runtime_free = any(p in name for p in RUNTIME_FREE) or (closure and any(p in name for p in RUNTIME_FREE_CLOSURES))
        if not runtime_free or name.endswith("TA"):  # TA: a thunk that forwards to the closure
            continue
        checked += 1
        calls = sorted({m.group(1) for line in body for m in [re.search(r"call\s+\S+\s+<(swift_\w+)@", line)] if m} - ALLOWED)
        if calls:
            problems.append(f"{name}: calls the Swift runtime: {', '.join(calls)}")
        if any(p in name for p in NEEDS_ZMM) and len(body) > 40 and not any(re.search(wide, line) for line in body):
            problems.append(f"{name}: no {'256- or 512' if 'y' in wide else '512'}-bit vector instruction")
    attention = [body for name, body in code.items() if "attendHead" in name]
    if not attention:
        problems.append("attendHead not found")
    elif not any(re.search(r"vpslld\s+\$0x17,.*" + wide, line) for body in attention for line in body):
        problems.append("attendHead: the softmax's exp2 is not vectorised (no vector exponent shift)")
    for problem in problems:
        print("check_kernels:", problem, file=sys.stderr)
    print(f"check_kernels: {checked} kernel functions in {binary}: {'FAILED' if problems else 'no runtime calls, vectorised'}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
