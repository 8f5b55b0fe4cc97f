#!/usr/bin/env bash
# The /proc/cpuinfo flags a native build (tools/native-flags: `-target-cpu native`) needs, one
# per line, for a launcher that picks the native or the portable build per CPU: the tarball's
# bin/bert (tools/dist.sh) and the wheel's loader (python/swiftbert/_variant.py). Fails when the
# binary holds instructions of an extension left out of the list.
#
#   tools/native_cpu_flags.sh NATIVE_BINARY > native-cpu-flags
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: tools/native_cpu_flags.sh NATIVE_BINARY" >&2; exit 64; }
binary=$1
# tools/native-flags says `-target-cpu native`: LLVM may use every instruction-set extension of
# the build machine. The toolchain's clang reports the same host detection as target features
# (`+avx512f`, …); these become /proc/cpuinfo names for the launcher. Left out: extensions the
# compiler emits only for their intrinsics, which SwiftBERT and its dependencies do not call,
# and which hypervisors or microcode often hide (TSX's rtm on many Xeons): requiring them would
# send such CPUs to the slower build for nothing. evex512 is not a CPU flag (AVX10's 512-bit
# switch, implied by avx512f). The check below makes sure the binary holds none of their
# instructions.
intrinsics_only=" aes vaes pclmul vpclmulqdq sha sha512 sm3 sm4 rtm hle tsxldtrk rdrnd rdseed rdpid invpcid fsgsbase xsave xsaveopt xsavec xsaves clwb clflushopt cldemote movdiri movdir64b serialize waitpkg ptwrite uintr enqcmd pconfig sgx shstk wbnoinvd pku prfchw kl widekl evex512 amx-tile amx-int8 amx-bf16 amx-fp16 amx-complex "
clang=$(dirname "$(command -v swift)")/clang
host_features=$("$clang" -march=native -### -x c -c /dev/null -o /dev/null 2>&1 | grep -o '"+[^"]*"' | tr -d '"+' | sort -u)
cpuinfo=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
needed=()
for feature in $host_features; do
    case "$intrinsics_only" in *" $feature "*) continue ;; esac
    case $feature in  # LLVM's name -> the kernel's /proc/cpuinfo name, where they differ
        64bit) flag=lm ;; sse3) flag=pni ;; sse4.1) flag=sse4_1 ;; sse4.2|crc32) flag=sse4_2 ;;
        sahf) flag=lahf_lm ;; lzcnt) flag=abm ;; bmi) flag=bmi1 ;; avxvnni) flag=avx_vnni ;;
        avx512vnni|avx512bf16|avx512fp16|avx512vbmi2|avx512bitalg|avx512vpopcntdq)
            flag=avx512_${feature#avx512} ;;
        *) flag=$feature ;;
    esac
    case "$cpuinfo" in
        *" $flag "*) needed+=("$flag") ;;
        *) echo "native_cpu_flags.sh: LLVM's host feature '$feature' has no /proc/cpuinfo flag '$flag' here; add its name to the mapping in tools/native_cpu_flags.sh" >&2; exit 1 ;;
    esac
done
# The instructions of the left-out extensions, in the native binary: there must be none. AMX's
# tile instructions are not checked: SwiftBERTAMX's kernels hold them in every build, and run
# only after the run-time detection (CPUID, XCR0, arch_prctl) says the CPU and kernel have AMX.
echo "native_cpu_flags.sh: checking $binary for instructions of the left-out extensions (objdump)" >&2
intrinsic_insns='\s(xbegin|xend|xabort|xtest|xsusldtrk|xresldtrk|rdrand|rdseed|rdpid|v?aes(enc|dec|imc|keygen)[a-z]*|v?pclmul[a-z]*|sha(1|256)[a-z0-9]*|clwb|clflushopt|cldemote|movdiri|movdir64b|serialize|invpcid|(rd|wr)(fs|gs)base|xsave[a-z0-9]*|xrstor[a-z0-9]*|prefetchw)\s'
found=$(objdump -d --no-show-raw-insn "$binary" | grep -oE "$intrinsic_insns" | sort | uniq -c || true)
if [ -n "$found" ]; then
    echo "native_cpu_flags.sh: the native binary uses instructions of extensions tools/native_cpu_flags.sh leaves out of native-cpu-flags:" >&2
    echo "$found" >&2
    echo "native_cpu_flags.sh: take their extensions out of intrinsics_only so the launcher requires them" >&2
    exit 1
fi

printf '%s\n' "${needed[@]}" | sort -u
