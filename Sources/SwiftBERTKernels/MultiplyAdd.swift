#if canImport(SwiftBERTVNNI)  // the package's builds; the fuzzers compile the library without it
import SwiftBERTVNNI
#endif

/// c + a·b for the kernels: one fused multiply-add in the native build, whose target CPU has FMA
/// (`SWIFTBERT_NATIVE_ISA`); a multiply and an add in the portable build (generic x86-64, no
/// FMA). There LLVM keeps a fused multiply-add exact by calling libm's `fmaf` for every lane, which
/// made the portable kernels that use it many times slower (docs/builds.md). The two builds'
/// results then differ in the last bits, as they already do through OpenBLAS.
extension Float {
    @inline(__always)
    func plusProduct(_ a: Float, _ b: Float) -> Float {
        #if SWIFTBERT_NATIVE_ISA
        addingProduct(a, b)
        #else
        self + a * b
        #endif
    }
}

extension SIMD16 where Scalar == Float {
    /// Integers below 2²² in magnitude as floats, exactly, in two instructions: adding
    /// 0x4B40_0000 to their bits gives those of 1.5 · 2²³ + x, and a subtraction finishes.
    /// `SIMD16<Float>(_:)` of Int32 lanes is not inlined: a call with the vector in four pieces.
    @inline(__always)
    init(smallIntegers x: SIMD16<Int32>) {
        self = unsafeBitCast(x &+ 0x4B40_0000, to: SIMD16<Float>.self) - 12_582_912
    }

    /// self += a · b lane-wise.
    @inline(__always)
    mutating func accumulateProduct(_ a: SIMD16<Float>, _ b: SIMD16<Float>) {
        #if SWIFTBERT_NATIVE_ISA
        addProduct(a, b)
        #else
        self += a * b
        #endif
    }
}

/// Int32 lanes as floats, rounded to nearest: one instruction where SwiftBERTVNNI is built.
@inline(__always)
func integersAsFloats(_ x: SIMD16<Int32>) -> SIMD16<Float> {
    #if canImport(SwiftBERTVNNI)
    floats(x)
    #else
    SIMD16<Float>(x)
    #endif
}

/// The low byte of each Int32 lane: one instruction where SwiftBERTVNNI is built.
@inline(__always)
func truncatedToBytes(_ x: SIMD16<Int32>) -> SIMD16<UInt8> {
    #if canImport(SwiftBERTVNNI)
    lowBytes(x)
    #else
    SIMD16<UInt8>(truncatingIfNeeded: x)
    #endif
}

/// The low 16 bits of each Int32 lane: one instruction where SwiftBERTVNNI is built.
@inline(__always)
func truncatedToWords(_ x: SIMD16<Int32>) -> SIMD16<UInt16> {
    #if canImport(SwiftBERTVNNI)
    lowWords(x)
    #else
    SIMD16<UInt16>(truncatingIfNeeded: x)
    #endif
}
