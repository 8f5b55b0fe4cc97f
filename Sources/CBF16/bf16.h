// One AVX-512 BF16 instruction, vdpbf16ps, for SwiftBERTVNNI's dotBF16Pairs (BF16.swift).
//
// Why C: LLVM's intrinsic (llvm.x86.avx512bf16.dpbf16ps.512) takes <32 x bfloat> operands since
// LLVM 17, and Swift's Builtin module has no bfloat type, so `Builtin.int_x86_avx512bf16_
// dpbf16ps_512` does not exist in Swift 6.3. A static inline function is compiled by the Clang
// importer into the caller's LLVM module and inlined there; its pointers then vanish (SROA), so
// the kernel keeps its accumulators in registers. The target attribute needs no compiler flag;
// Swift only calls it when the build is native and the host has avx512_bf16 (SWIFTBERT_NATIVE_ISA and SWIFTBERT_HOST_BF16).
#ifndef SWIFTBERT_CBF16_H
#define SWIFTBERT_CBF16_H
#include <immintrin.h>

/// acc[16 floats] += pairs of bf16 in a[16 lanes] · pairs in b[16 lanes], lane by lane: per lane,
/// the odd halves' product then the even halves', each added in FP32 (Intel's VDPBF16PS).
static inline __attribute__((always_inline, target("avx512f,avx512bf16")))
void swiftbert_dpbf16ps(void *acc, const void *a, const void *b) {
    __m512 sum = _mm512_loadu_ps(acc);
    sum = _mm512_dpbf16_ps(sum, (__m512bh)_mm512_loadu_si512(a), (__m512bh)_mm512_loadu_si512(b));
    _mm512_storeu_ps(acc, sum);
}
#endif
