// Int32 lanes to floats in one instruction (vcvtdq2ps), through the Builtin module as VNNI.swift.
//
// `SIMD16<Float>(_:)` of SIMD16<Int32> is not inlined: a call that passes the vector in four
// 128-bit pieces and ends in vzeroupper. LLVM's sitofp on the whole vector is one instruction on
// any x86-64 (four on a CPU without AVX-512), so this needs no host feature.

import Builtin

/// Each lane of `x` as the nearest float (ties to even), as Float(_:) of an Int32.
@inlinable @inline(__always)
public func floats(_ x: SIMD16<Int32>) -> SIMD16<Float> {
    var result = SIMD16<Float>()
    result._storage._value = Builtin.sitofp_Vec16xInt32_Vec16xFPIEEE32(x._storage._value)
    return result
}
