// The online softmax's arithmetic: 2^x for non-positive x, and a row's maximum and sum as trees
// of lane rotations.

#if SWIFTBERT_NATIVE_ISA && (SWIFTBERT_HOST_BF16 || SWIFTBERT_HOST_VNNI)
import SwiftBERTVNNI
#endif

/// 2^x for x ≤ 0 (or a rounding error above it), within about 1 ulp: 2^n · p(x − n) with
/// n = round(x), p the degree-7 Taylor polynomial of 2^f (error below 1e-8 on |f| ≤ ½); 0 below
/// −127. A third fewer instructions than `exp`, whose range reduction and clamp above are not
/// needed here: the exponentials were most of the softmax's time.
///
/// n comes from adding 1.5 · 2²³, which rounds x to the nearest integer (ties to even) and
/// leaves it in the low bits, so no float → integer conversion is needed: in -O builds
/// `Int32(_:)` checks its range and kept the whole loop scalar (3× the softmax's time).
@inline(__always)
func exp2OfNonPositive(_ a: Float) -> Float {
    let x = max(a, -127)
    let magic: Float = 12_582_912  // 1.5 · 2²³
    let shifted = x + magic
    let n = shifted - magic
    let f = x - n
    var p: Float = 1.5252734e-5
    p = Float(1.5403530e-4).plusProduct(p, f)
    p = Float(1.3333558e-3).plusProduct(p, f)
    p = Float(9.6181291e-3).plusProduct(p, f)
    p = Float(5.5504109e-2).plusProduct(p, f)
    p = Float(2.4022651e-1).plusProduct(p, f)
    p = Float(6.9314718e-1).plusProduct(p, f)
    p = Float(1).plusProduct(p, f)
    // 2^n as a float's exponent field: n + 127 in 0...127 (0 below −126 gives 0, as before).
    return p * Float(bitPattern: (shifted.bitPattern &- magic.bitPattern &+ 127) &<< 23)
}

/// `exp2OfNonPositive` on 16 lanes, the same operations in the same order.
@inline(__always)
func exp2OfNonPositive(_ a: SIMD16<Float>) -> SIMD16<Float> {
    let x = lanewiseMax(a, SIMD16(repeating: -127))
    let magic = SIMD16<Float>(repeating: 12_582_912)
    let shifted = x + magic
    let n = shifted - magic
    let f = x - n
    @inline(__always) func step(_ c: Float, _ p: SIMD16<Float>) -> SIMD16<Float> {
        var next = SIMD16<Float>(repeating: c)
        next.accumulateProduct(p, f)
        return next
    }
    var p = SIMD16<Float>(repeating: 1.5252734e-5)
    p = step(1.5403530e-4, p)
    p = step(1.3333558e-3, p)
    p = step(9.6181291e-3, p)
    p = step(5.5504109e-2, p)
    p = step(2.4022651e-1, p)
    p = step(6.9314718e-1, p)
    p = step(1, p)
    let exponent = (unsafeBitCast(shifted, to: SIMD16<Int32>.self) &- Int32(bitPattern: magic[0].bitPattern) &+ 127) &<< 23
    return p * unsafeBitCast(exponent, to: SIMD16<Float>.self)
}

// Reductions of one row of scores: 16 lanes, then a tree across them. (`sum` and `maximum` in
// Elementwise.swift end in a chain of 16 dependent scalar steps, which cost as much here as the
// exponentials: they run once per row and key block.) The tree halves the lanes by rotating
// them (one permute each): lane i meets lane i + 8, then i + 4, i + 2, i + 1.

@inline(__always)
func rotated(_ a: SIMD16<Float>, by n: Int) -> SIMD16<Float> {
    var result = SIMD16<Float>()
    for i in 0..<16 { result[i] = a[(i &+ n) & 15] }
    return result
}

@inline(__always)
func scoreMaximum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    // Four chains of maxima, not one: the maximum is the same in any order.
    var (a0, a1, a2, a3) = (SIMD16<Float>(repeating: -.infinity), SIMD16<Float>(repeating: -.infinity),
                            SIMD16<Float>(repeating: -.infinity), SIMD16<Float>(repeating: -.infinity))
    @inline(__always) func vector(_ i: Int) -> SIMD16<Float> { UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self) }
    var i = 0
    while i &+ 64 <= count {
        (a0, a1) = (lanewiseMax(a0, vector(i)), lanewiseMax(a1, vector(i &+ 16)))
        (a2, a3) = (lanewiseMax(a2, vector(i &+ 32)), lanewiseMax(a3, vector(i &+ 48)))
        i &+= 64
    }
    while i &+ 16 <= count { a0 = lanewiseMax(a0, vector(i)); i &+= 16 }
    var v = lanewiseMax(lanewiseMax(a0, a1), lanewiseMax(a2, a3))
    v = lanewiseMax(v, rotated(v, by: 8))
    v = lanewiseMax(v, rotated(v, by: 4))
    v = lanewiseMax(v, rotated(v, by: 2))
    v = lanewiseMax(v, rotated(v, by: 1))
    var best = v[0]
    while i < count { best = max(best, x[i]); i &+= 1 }
    return best
}

@inline(__always)
func scoreSum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var acc = SIMD16<Float>()
    var i = 0
    while i &+ 16 <= count { acc += UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self); i &+= 16 }
    // ((a0 + a8) + (a4 + a12)) ... as the scalar tree it replaces: the same sums.
    var v = acc
    v += rotated(v, by: 8)
    v += rotated(v, by: 4)
    v += rotated(v, by: 2)
    v += rotated(v, by: 1)
    var total = v[0]
    while i < count { total += x[i]; i &+= 1 }
    return total
}
