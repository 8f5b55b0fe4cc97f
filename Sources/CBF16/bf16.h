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

/// 16 floats, and 16 lanes of two bf16 each: Swift imports these as SIMD16<Float> and
/// SIMD16<UInt32>, so the call passes registers, not pointers (pointers to the kernel's
/// accumulators made Swift check exclusive access at run time around every call).
typedef float swiftbert_f32x16 __attribute__((ext_vector_type(16)));
typedef unsigned int swiftbert_bf16x2x16 __attribute__((ext_vector_type(16)));

/// acc + pairs of bf16 in a · pairs in b, lane by lane: per lane, the odd halves' product then
/// the even halves', each added in FP32 (Intel's VDPBF16PS).
static inline __attribute__((always_inline, target("avx512f,avx512bf16")))
swiftbert_f32x16 swiftbert_dpbf16ps(swiftbert_f32x16 acc, swiftbert_bf16x2x16 a, swiftbert_bf16x2x16 b) {
    return (swiftbert_f32x16)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
}

/// A prefetch of the cache line at p into L2 (prefetcht1), for SwiftBERTVNNI's prefetchToL2
/// (Prefetch.swift), which the Linear kernels call on weights streamed from memory. Inlined
/// into the Swift caller, as swiftbert_dpbf16ps is.
static inline __attribute__((always_inline)) void swiftbert_prefetch_l2(const void *p) {
    __builtin_prefetch(p, 0, 2);
}
#endif
