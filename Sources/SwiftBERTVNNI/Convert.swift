// Int32 lanes to floats (vcvtdq2ps), to bytes (vpmovdb) and to 16-bit words (vpmovdw) in one
// instruction each, through the Builtin module as VNNI.swift.
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

/// The low byte of each lane (vpmovdb): `SIMD16<UInt8>(truncatingIfNeeded:)` of Int32 lanes is
/// also a call where it is not inlined.
@inlinable @inline(__always)
public func lowBytes(_ x: SIMD16<Int32>) -> SIMD16<UInt8> {
    var result = SIMD16<UInt8>()
    result._storage._value = Builtin.trunc_Vec16xInt32_Vec16xInt8(x._storage._value)
    return result
}

/// The low 16 bits of each lane (vpmovdw): `SIMD16<UInt16>(truncatingIfNeeded:)` of Int32 lanes
/// compiled to a vpmovdw and a vpermt2w in INT8 attention's probability loop.
@inlinable @inline(__always)
public func lowWords(_ x: SIMD16<Int32>) -> SIMD16<UInt16> {
    var result = SIMD16<UInt16>()
    result._storage._value = Builtin.trunc_Vec16xInt32_Vec16xInt16(x._storage._value)
    return result
}
