// One AVX-512 VNNI instruction, vpdpbusd, for the INT8 micro-kernel.
//
// LLVM does not turn 4-way byte dot products written in Swift into vpdpbusd, and Swift has
// no x86 intrinsics. This module imports the compiler's Builtin module (the experimental feature
// BuiltinModule, which SwiftPM allows in a versioned dependency, unlike -parse-stdlib) and,
// through it, LLVM's intrinsic by name. It is the engine's only use of Builtin. The intrinsic
// compiles only for a target CPU that has AVX-512 VNNI, so it exists only in native builds
// (SWIFTBERT_NATIVE_ISA, the build line's `-target-cpu native`) on a host that has VNNI
// (SWIFTBERT_HOST_VNNI, from Package.swift); otherwise the kernel uses vpdpwssd, which plain
// Swift reaches (a quarter of the multiply-adds per instruction).

import Builtin

#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
/// acc + Σ(t=0..3) u8(a.byte t) · s8(w.byte t), lane by lane over 16 Int32 lanes: each lane of
/// `unsigned` holds 4 unsigned bytes, each lane of `signed` 4 signed bytes. No saturation.
@inlinable @inline(__always)
public func dotBytes(_ acc: SIMD16<Int32>, unsigned: SIMD16<Int32>, signed: SIMD16<Int32>) -> SIMD16<Int32> {
    var result = SIMD16<Int32>()
    result._storage._value = Builtin.int_x86_avx512_vpdpbusd_512(
        acc._storage._value, unsigned._storage._value, signed._storage._value)
    return result
}

/// acc + s16(a.low) · s16(w.low) + s16(a.high) · s16(w.high), lane by lane over 16 Int32 lanes
/// (vpdpwssd): each lane of `a` and `w` holds two signed 16-bit halves. No saturation.
@inlinable @inline(__always)
public func dotWordPairs(_ acc: SIMD16<Int32>, _ a: SIMD16<Int32>, _ w: SIMD16<Int32>) -> SIMD16<Int32> {
    var result = SIMD16<Int32>()
    result._storage._value = Builtin.int_x86_avx512_vpdpwssd_512(acc._storage._value, a._storage._value, w._storage._value)
    return result
}
#endif
