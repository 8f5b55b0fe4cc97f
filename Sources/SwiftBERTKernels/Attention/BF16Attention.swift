// Attention's products in BF16 pairs with FP32 accumulation (the bf16 precision): vdpbf16ps, or
// FMA on the same values widened (`BF16Product` picks; the same bits). See Attention.swift.

#if SWIFTBERT_NATIVE_ISA && (SWIFTBERT_HOST_BF16 || SWIFTBERT_HOST_VNNI)
import SwiftBERTVNNI
#endif

/// BF16 products (the `bf16` precision): Q, K, V and P rounded to BF16 as the Linear layers
/// round their inputs, in pairs along each product's depth (Kᵀ: pairs of d per key; V: pairs of
/// keys per channel), so one vdpbf16ps does 32 multiply-adds where an FMA does 16. An odd d or
/// key count pairs its last element with zero.
enum BF16Attention: AttentionArithmetic {
    @inline(__always)
    static func step(_ acc: inout SIMD16<Float>, _ x: UInt32, _ w: SIMD16<UInt32>) {
        #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
        acc = dotBF16Pairs(acc, SIMD16(repeating: x), w)
        #else
        // As vdpbf16ps: the odd halves' product, then the even halves' (products of BF16 are exact).
        acc.accumulateProduct(SIMD16(repeating: BFloat16.float(high: x)), unsafeBitCast(w & 0xFFFF_0000, to: SIMD16<Float>.self))
        acc.accumulateProduct(SIMD16(repeating: BFloat16.float(low: x)), unsafeBitCast(w &<< 16, to: SIMD16<Float>.self))
        #endif
    }

    @inline(__always)
    static func withPackedKeysAndValues(k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                                        _ scratch: AttentionScratch,
                                        _ body: (UnsafePointer<UInt32>, UnsafePointer<UInt32>) -> Void) {
        let (d, dPad, nPad) = (scratch.headDim, scratch.paddedHeadDim, roundUp16(n))
        let dPairs = (d + 1) / 2, nPairs = (n + 1) / 2
        scratch.withLanes { keysT, values in
            // Kᵀ [dPairs × nPad]: lane (p, j) = K[j][2p], K[j][2p + 1]. Sixteen pairs at a time:
            // each key's 32 channels rounded in one vector, its 16 lanes written to 16 rows in
            // order of j, as FP32Attention transposes. Scattering each key's whole row of pairs
            // (128 rows 2 KB apart for EmbeddingGemma at 512 tokens) cost a tenth of the attention
            // stage on one thread, and was done again by every thread that split the queries.
            var p0 = 0
            while p0 &+ 16 <= d / 2 {
                let rows = keysT + p0 &* nPad
                for j in 0..<n {
                    let lanes = BFloat16.pairs(k + (j &* ld &+ 2 &* p0))
                    for t in 0..<16 { rows[t &* nPad &+ j] = lanes[t] }
                }
                p0 &+= 16
            }
            // The rest of the row (an odd d's last channel paired with zero), as roundPairs rounds it.
            if p0 < dPairs {
                scratch.products.withMemoryRebound(to: UInt32.self, capacity: dPairs - p0) { pairs in
                    for j in 0..<n {
                        BFloat16.roundPairs(k + (j &* ld &+ 2 &* p0), count: d - 2 * p0, into: pairs)
                        for p in p0..<dPairs { keysT[p &* nPad &+ j] = pairs[p &- p0] }
                    }
                }
            }
            for p in 0..<dPairs { (keysT + p * nPad + n).update(repeating: 0, count: nPad - n) }
            // V [nPairs × dPad]: lane (jp, c) = V[2jp][c], V[2jp + 1][c]; the pad columns stay zero.
            for jp in 0..<nPairs {
                let row = values + jp * dPad, even = v + 2 * jp * ld
                if 2 * jp + 1 < n {
                    let odd = even + ld
                    var c = 0
                    while c &+ 16 <= d {
                        @inline(__always) func lanes(_ x: UnsafePointer<Float>) -> SIMD16<UInt32> {
                            BFloat16.bits(UnsafeRawPointer(x + c).loadUnaligned(as: SIMD16<UInt32>.self))
                        }
                        UnsafeMutableRawPointer(row + c).storeBytes(of: lanes(even) | lanes(odd) &<< 16, as: SIMD16<UInt32>.self)
                        c &+= 16
                    }
                    while c < d { row[c] = BFloat16.pair(even[c], odd[c]); c &+= 1 }
                } else {
                    for c in 0..<d { row[c] = BFloat16.bits(even[c]) }
                }
            }
            body(keysT, values)
        }
    }

    @inline(__always)
    static func queries(_ q: UnsafePointer<Float>, ld: Int, rows: Int, _ scratch: AttentionScratch) -> (UnsafePointer<UInt32>, Int, Int) {
        let d = scratch.headDim, dPairs = (d + 1) / 2, out = scratch.queryPairs
        for r in 0..<rows { BFloat16.roundPairs(q + r * ld, count: d, into: out + r * dPairs) }
        return (UnsafePointer(out), dPairs, dPairs)
    }

    @inline(__always)
    static func probabilities(_ p: UnsafePointer<Float>, ld: Int, rows: Int, cols: Int, _ scratch: AttentionScratch) -> (UnsafePointer<UInt32>, Int, Int) {
        let ldPairs = attentionKeyBlock / 2, out = scratch.probabilityPairs
        for r in 0..<rows {
            // Probabilities are finite and non-negative: rounding needs no NaN case, which lets
            // the loop vectorise (the general pair rounding stayed scalar here).
            let row = UnsafeRawPointer(p + r * ld).assumingMemoryBound(to: UInt32.self), pairs = out + r * ldPairs
            for i in 0..<(cols / 2) {
                pairs[i] = BFloat16.bits(ofNonNaN: row[2 &* i]) | BFloat16.bits(ofNonNaN: row[2 &* i &+ 1]) &<< 16
            }
            if cols % 2 == 1 { pairs[cols / 2] = BFloat16.bits(ofNonNaN: row[cols - 1]) }
        }
        return (UnsafePointer(out), ldPairs, (cols + 1) / 2)
    }

    @inline(__always) static func valueRow(_ k0: Int) -> Int { k0 / 2 }
}

/// BF16 products by FMA on floats (`BF16Product.widened`): Q, K, V and P rounded to BF16 as
/// `BF16Attention` rounds them, but kept as floats, and each pair along a product's depth
/// stored odd element first, so that the FP32 tile adds the odd product, then the even one, as
/// vdpbf16ps does: the same sums, bit for bit. An odd d or key count pairs its last element
/// with zero, as there.
enum WidenedBF16Attention: AttentionArithmetic {
    @inline(__always)
    static func step(_ acc: inout SIMD16<Float>, _ x: Float, _ w: SIMD16<Float>) { acc.accumulateProduct(SIMD16(repeating: x), w) }

    /// out[0..<2 · pairs] = x[0..<count] rounded, each pair swapped; a last odd one pairs with 0.
    @inline(__always)
    private static func roundSwappingPairs(_ x: UnsafePointer<Float>, count: Int, into out: UnsafeMutablePointer<Float>) {
        for i in 0..<(count / 2) {
            out[2 &* i] = BFloat16.rounded(x[2 &* i &+ 1])
            out[2 &* i &+ 1] = BFloat16.rounded(x[2 &* i])
        }
        if count % 2 == 1 { (out[count - 1], out[count]) = (0, BFloat16.rounded(x[count - 1])) }
    }

    @inline(__always)
    static func withPackedKeysAndValues(k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                                        _ scratch: AttentionScratch,
                                        _ body: (UnsafePointer<Float>, UnsafePointer<Float>) -> Void) {
        let (d, dPad, nPad, keysT, values) = (scratch.headDim, scratch.paddedHeadDim, roundUp16(n), scratch.keysT, scratch.values)
        // Kᵀ [2 · dPairs × nPad]: row 2p holds channel 2p + 1 of every key, row 2p + 1 channel 2p.
        for c in 0..<d {
            let row = keysT + (c % 2 == 0 ? c + 1 : c - 1) * nPad
            for j in 0..<n { row[j] = BFloat16.rounded(k[j &* ld &+ c]) }
            for j in n..<nPad { row[j] = 0 }
        }
        if d % 2 == 1 { (keysT + (d - 1) * nPad).update(repeating: 0, count: nPad) }
        // V [2 · nPairs × dPad]: row 2p holds key 2p + 1, row 2p + 1 key 2p; the pad columns stay zero.
        for j in 0..<n {
            let row = values + (j % 2 == 0 ? j + 1 : j - 1) * dPad
            for c in 0..<d { row[c] = BFloat16.rounded(v[j &* ld &+ c]) }
        }
        if n % 2 == 1 { (values + (n - 1) * dPad).update(repeating: 0, count: d) }
        body(keysT, values)
    }

    @inline(__always)
    static func queries(_ q: UnsafePointer<Float>, ld: Int, rows: Int, _ scratch: AttentionScratch) -> (UnsafePointer<Float>, Int, Int) {
        let d = scratch.headDim, dPad = scratch.paddedHeadDim
        let out = UnsafeMutableRawPointer(scratch.queryPairs).assumingMemoryBound(to: Float.self)
        for r in 0..<rows { roundSwappingPairs(q + r * ld, count: d, into: out + r * dPad) }
        return (UnsafePointer(out), dPad, 2 * ((d + 1) / 2))
    }

    /// Rounded in place: the block's scores are not read again once P·V has them.
    @inline(__always)
    static func probabilities(_ p: UnsafePointer<Float>, ld: Int, rows: Int, cols: Int, _ scratch: AttentionScratch) -> (UnsafePointer<Float>, Int, Int) {
        let rowsBits = UnsafeMutableRawPointer(mutating: p).assumingMemoryBound(to: UInt32.self)
        for r in 0..<rows {
            // Probabilities are finite and non-negative: rounding needs no NaN case, and the
            // loop vectorises.
            let row = rowsBits + r * ld
            for i in 0..<(cols / 2) {
                let (even, odd) = (row[2 &* i], row[2 &* i &+ 1])
                row[2 &* i] = BFloat16.bits(ofNonNaN: odd) &<< 16
                row[2 &* i &+ 1] = BFloat16.bits(ofNonNaN: even) &<< 16
            }
            if cols % 2 == 1 { (row[cols - 1], row[cols]) = (0, BFloat16.bits(ofNonNaN: row[cols - 1]) &<< 16) }
        }
        return (p, ld, 2 * ((cols + 1) / 2))
    }

    @inline(__always) static func valueRow(_ k0: Int) -> Int { k0 }
}
