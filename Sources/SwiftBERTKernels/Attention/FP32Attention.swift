// Attention's products in FP32 (the fp32, int8 and int8-weights precisions). See Attention.swift.

#if SWIFTBERT_NATIVE_ISA && (SWIFTBERT_HOST_BF16 || SWIFTBERT_HOST_VNNI)
import SwiftBERTVNNI
#endif

/// FP32 products: Kᵀ transposed, V copied, Q and P read in place.
enum FP32Attention: AttentionArithmetic {
    @inline(__always)
    static func step(_ acc: inout SIMD16<Float>, _ x: Float, _ w: SIMD16<Float>) { acc.accumulateProduct(SIMD16(repeating: x), w) }

    @inline(__always)
    static func withPackedKeysAndValues(k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                                        _ scratch: AttentionScratch,
                                        _ body: (UnsafePointer<Float>, UnsafePointer<Float>) -> Void) {
        let (d, dPad, nPad, keysT, values) = (scratch.headDim, scratch.paddedHeadDim, roundUp16(n), scratch.keysT, scratch.values)
        // Kᵀ [d × nPad] and V [nPad × dPad], padding zero (fresh scratch stays zero in the pad).
        for j in 0..<n { (values + j * dPad).update(from: v + j * ld, count: d) }
        // Kᵀ eight channels at a time: each key's row is read once per eight channels (not once
        // per channel), and the eight output rows are written in order (a scatter of whole key
        // rows cost more than the reads).
        var c0 = 0
        while c0 < d {
            let width = min(8, d - c0), row = keysT + c0 * nPad
            if width == 8 {
                for j in 0..<n {
                    let key = k + (j &* ld &+ c0)
                    row[j] = key[0]; row[nPad &+ j] = key[1]; row[2 &* nPad &+ j] = key[2]; row[3 &* nPad &+ j] = key[3]
                    row[4 &* nPad &+ j] = key[4]; row[5 &* nPad &+ j] = key[5]; row[6 &* nPad &+ j] = key[6]; row[7 &* nPad &+ j] = key[7]
                }
            } else {
                for c in 0..<width { for j in 0..<n { row[c &* nPad &+ j] = k[j &* ld &+ c0 &+ c] } }
            }
            for c in 0..<width { for j in n..<nPad { row[c &* nPad &+ j] = 0 } }
            c0 += width
        }
        body(keysT, values)
    }

    @inline(__always)
    static func queries(_ q: UnsafePointer<Float>, ld: Int, rows: Int, _ scratch: AttentionScratch) -> (UnsafePointer<Float>, Int, Int) {
        (q, ld, scratch.headDim)
    }

    @inline(__always)
    static func probabilities(_ p: UnsafePointer<Float>, ld: Int, rows: Int, cols: Int, _ scratch: AttentionScratch) -> (UnsafePointer<Float>, Int, Int) {
        (p, ld, cols)
    }

    @inline(__always) static func valueRow(_ k0: Int) -> Int { k0 }
}
