// One AVX-512 BF16 instruction, vdpbf16ps, for the BF16 micro-kernel (SwiftBERTKernels/BF16Kernel.swift).
//
// Swift cannot name it: LLVM's intrinsic takes <32 x bfloat> operands and the Builtin module has
// no bfloat type, so it comes from a static inline C function (Sources/CBF16/bf16.h), which is
// inlined here and costs nothing beyond the instruction. Compiled only when the target CPU has
// AVX512_BF16 (SWIFTBERT_NATIVE_ISA and SWIFTBERT_HOST_BF16, see Package.swift); without it the kernel converts BF16 to FP32
// by shifting and uses FMA.

import Swift

#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
import CBF16

/// acc + a.odd · b.odd + a.even · b.even, lane by lane over 16 Float lanes, where each UInt32
/// lane of `a` and `b` holds two BF16 values (even k in the low half, odd k in the high half).
@inlinable @inline(__always)
public func dotBF16Pairs(_ acc: SIMD16<Float>, _ a: SIMD16<UInt32>, _ b: SIMD16<UInt32>) -> SIMD16<Float> {
    swiftbert_dpbf16ps(acc, a, b)
}
#endif
