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
