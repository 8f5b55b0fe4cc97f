// Attention's products in integers (int8-attention, int8-static): QKᵀ on quads of bytes
// (vpdpbusd), P·V on pairs of 16-bit probabilities (vpdpwssd). See Attention.swift.

#if SWIFTBERT_NATIVE_ISA && (SWIFTBERT_HOST_BF16 || SWIFTBERT_HOST_VNNI)
import SwiftBERTVNNI
#endif

/// INT8 products (the `int8-attention` and `int8-static` precisions):
/// - Q·Kᵀ: four multiply-adds per lane of one vpdpbusd. Each query row as unsigned bytes q + 128
///   with its own scale, each key row as signed bytes with its own; the + 128 comes off with
///   128 × the key's byte sum. Quads of d per key in Kᵀ.
/// - P·V: two multiply-adds per lane of one vpdpwssd (`Int8ProbabilityProduct`). Probabilities,
///   in [0, 1], as 15-bit fixed point p · 32767, in pairs of keys; V as signed bytes' values in
///   16-bit halves, pairs of keys per channel, one scale per channel. A 256-key block sums at most
///   256 · 32767 · 127 < 2³¹. P in one byte (p · 255, as NNCF's static INT8 has it) took
///   all-mpnet-base-v2's smallest cosine to FP32 from 0.9835 to 0.9745: attention over a few
///   dozen tokens is flat, and p · 255 of a few units loses most of each probability. (P as 16
///   bits split into two byte planes for vpdpbusd does the same multiply-adds per instruction,
///   with two passes and a byte split of every probability.)
/// Both are padded with zeros along their depth. The scales are the rows' own, found as they are
/// quantised: one pass over n · d values, against the products' n² · d. The tile keeps its Int32 sums in the bits of its float
/// accumulators; `finishScores` and `addProducts` make floats of them.
enum Int8Attention: AttentionArithmetic {
    @inline(__always)
    static func step(_ acc: inout SIMD16<Float>, _ x: UInt32, _ w: SIMD16<UInt32>) {
        let sums = unsafeBitCast(acc, to: SIMD16<Int32>.self), signed = unsafeBitCast(w, to: SIMD16<Int32>.self)
        #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
        acc = unsafeBitCast(dotBytes(sums, unsigned: SIMD16(repeating: Int32(bitPattern: x)), signed: signed), to: SIMD16<Float>.self)
        #else
        // As vpdpbusd: byte t of x (unsigned) times byte t of each lane of w (signed), t = 0...3.
        var total = sums
        for t in 0..<4 {
            let a = SIMD16<Int32>(repeating: Int32(truncatingIfNeeded: (x >> UInt32(8 * t)) & 0xFF))
            total &+= a &* ((signed &<< Int32(24 - 8 * t)) &>> 24)
        }
        acc = unsafeBitCast(total, to: SIMD16<Float>.self)
        #endif
    }

    @inline(__always)
    static func withPackedKeysAndValues(k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                                        _ scratch: AttentionScratch,
                                        _ body: (UnsafePointer<UInt32>, UnsafePointer<UInt32>) -> Void) {
        let (d, dPad, nPad) = (scratch.headDim, scratch.paddedHeadDim, roundUp16(n))
        let dQuads = (d + 3) / 4, nPairs = (n + 1) / 2
        let (keyScales, keyOffsets, valueScales) = (scratch.keyScales, scratch.keyOffsets, scratch.valueScales)
        scratch.withLanes { keysT, values in
            // Kᵀ [dQuads × nPad]: lane (p, j) = K[j][4p ..< 4p + 4] as signed bytes; each key's
            // bytes go through a row of scratch, then its quads to their rows of Kᵀ.
            let keyBytes = UnsafeMutableRawPointer(scratch.products)
            for j in 0..<n {
                let key = k + j * ld
                let maxAbs = SymmetricInt8.maxAbs(key, count: d)
                keyScales[j] = maxAbs / 127
                let sum = SymmetricInt8.quantize(key, count: d, reciprocal: SymmetricInt8.reciprocalScale(maxAbs: maxAbs), offset: 0,
                                                 into: keyBytes)
                for p in 0..<dQuads { keysT[p &* nPad &+ j] = keyBytes.load(fromByteOffset: 4 &* p, as: UInt32.self) }
                keyOffsets[j] = 128 &* sum
            }
            for p in 0..<dQuads { for j in n..<nPad { keysT[p &* nPad &+ j] = 0 } }
            // V [nPairs × dPad]: lane (jp, c) = V[2jp][c], V[2jp + 1][c] as signed bytes' values in
            // 16-bit halves, one scale per channel (its largest |v| over the sequence); the pad
            // columns stay zero.
            let largest = scratch.products, reciprocals = scratch.products + dPad
            let wide = d & ~15  // channels in whole 16-lane vectors; the rest one by one
            largest.update(repeating: 0, count: d)
            for j in 0..<n {
                let row = v + j * ld
                var c = 0
                while c < wide {
                    let x = UnsafeRawPointer(row + c).loadUnaligned(as: SIMD16<Float>.self)
                    let m = lanewiseMax(UnsafeRawPointer(largest + c).loadUnaligned(as: SIMD16<Float>.self),
                                        x.replacing(with: -x, where: x .< 0))
                    UnsafeMutableRawPointer(largest + c).storeBytes(of: m, as: SIMD16<Float>.self)
                    c &+= 16
                }
                for c in wide..<d { largest[c] = max(largest[c], abs(row[c])) }
            }
            for c in 0..<d {
                reciprocals[c] = SymmetricInt8.reciprocalScale(maxAbs: largest[c])
                valueScales[c] = largest[c] / (127 * 32767)  // P is p · 32767
            }
            for jp in 0..<nPairs {
                let row = values + jp * dPad, first = 2 * jp
                let rows = min(2, n - first)
                let v0 = v + first * ld
                var c = 0
                while c < wide {
                    let r = UnsafeRawPointer(reciprocals + c).loadUnaligned(as: SIMD16<Float>.self)
                    @inline(__always) func q(_ t: Int) -> SIMD16<Int32> {
                        guard t < rows else { return SIMD16() }
                        let x = UnsafeRawPointer(v0 + (t &* ld &+ c)).loadUnaligned(as: SIMD16<Float>.self)
                        return SymmetricInt8.quantize(x, reciprocal: r)
                    }
                    let pairs = q(0) & 0xFFFF | q(1) &<< 16
                    UnsafeMutableRawPointer(row + c).storeBytes(of: pairs, as: SIMD16<Int32>.self)
                    c &+= 16
                }
                @inline(__always) func q(_ t: Int, _ c: Int) -> Int32 {
                    t < rows ? SymmetricInt8.quantize(v0[t &* ld &+ c], reciprocal: reciprocals[c]) : 0
                }
                for c in wide..<d { row[c] = UInt32(truncatingIfNeeded: q(0, c) & 0xFFFF | q(1, c) &<< 16) }
            }
            body(keysT, values)
        }
    }

    @inline(__always)
    static func queries(_ q: UnsafePointer<Float>, ld: Int, rows: Int, _ scratch: AttentionScratch) -> (UnsafePointer<UInt32>, Int, Int) {
        let d = scratch.headDim, dQuads = (d + 3) / 4, out = scratch.queryPairs
        for r in 0..<rows {
            let row = q + r * ld
            let maxAbs = SymmetricInt8.maxAbs(row, count: d)
            scratch.queryScales[r] = maxAbs / 127
            // u8 = q + 128; padding is q = 0 (byte 128), against keys padded with 0.
            SymmetricInt8.quantize(row, count: d, reciprocal: SymmetricInt8.reciprocalScale(maxAbs: maxAbs), offset: 128,
                                   into: UnsafeMutableRawPointer(out + r &* dQuads))
        }
        return (UnsafePointer(out), dQuads, dQuads)
    }

    @inline(__always)
    static func finishScores(_ scores: UnsafeMutablePointer<Float>, ld: Int, rows: Int, cols: Int, firstKey: Int,
                             _ scratch: AttentionScratch) {
        let keyScales = scratch.keyScales + firstKey, keyOffsets = scratch.keyOffsets + firstKey
        for r in 0..<rows {
            let s = UnsafeMutableRawPointer(scores + r * ld), queryScale = SIMD16<Float>(repeating: scratch.queryScales[r])
            // Whole 16-key steps (the tile's; the scales past the sequence are finite). While
            // loops here and below: `stride(from:to:by:)` compiled to a call per step.
            var c = 0
            while c < cols {
                let sums = s.loadUnaligned(fromByteOffset: 4 &* c, as: SIMD16<Int32>.self)
                let offsets = UnsafeRawPointer(keyOffsets + c).loadUnaligned(as: SIMD16<Int32>.self)
                let scales = UnsafeRawPointer(keyScales + c).loadUnaligned(as: SIMD16<Float>.self)
                s.storeBytes(of: integersAsFloats(sums &- offsets) * (queryScale * scales),
                             toByteOffset: 4 &* c, as: SIMD16<Float>.self)
                c &+= 16
            }
        }
    }

    @inline(__always)
    static func probabilities(_ p: UnsafePointer<Float>, ld: Int, rows: Int, cols: Int, _ scratch: AttentionScratch) -> (UnsafePointer<UInt32>, Int, Int) {
        let ldPairs = attentionKeyBlock / 2, out = scratch.probabilityPairs
        let lane = SIMD16<Int32>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
        for r in 0..<rows {
            let row = UnsafeRawPointer(p + r * ld), target = UnsafeMutableRawPointer(out + r * ldPairs)
            // p ∈ [0, 1]: round(p · 32767) ∈ 0...32767, ties to even (as `SymmetricInt8.quantize`),
            // as 16-bit halves in key order, so each lane holds a pair of keys. Keys past `cols` are 0.
            var c = 0
            while c < cols {
                var fixed = SymmetricInt8.rounded(row.loadUnaligned(fromByteOffset: 4 &* c, as: SIMD16<Float>.self) * 32767)
                if c &+ 16 > cols { fixed.replace(with: 0, where: lane .>= Int32(cols &- c)) }
                target.storeBytes(of: truncatedToWords(fixed), toByteOffset: 2 &* c, as: SIMD16<UInt16>.self)
                c &+= 16
            }
        }
        return (UnsafePointer(out), ldPairs, (cols + 1) / 2)
    }

    @inline(__always) static func valueRow(_ k0: Int) -> Int { k0 / 2 }

    @inline(__always)
    static func addProducts(_ p: UnsafePointer<UInt32>, ldp: Int, depth: Int, values: UnsafePointer<UInt32>,
                            into o: UnsafeMutablePointer<Float>, rows: Int, _ scratch: AttentionScratch) {
        let dPad = scratch.paddedHeadDim, products = scratch.products, valueScales = scratch.valueScales
        attentionGEMM(Int8ProbabilityProduct.self, a: p, lda: ldp, b: values, ldb: dPad, depth: depth, c: products,
                      ldc: dPad, rows: rows, columns: dPad, accumulate: false)
        for r in 0..<rows {
            let row = o + r * dPad, sums = products + r * dPad
            for c in 0..<dPad { row[c] += Float(Int32(bitPattern: sums[c].bitPattern)) * valueScales[c] }
        }
    }
}

/// INT8 attention's P·V step: a pair of 16-bit probabilities (keys 2j, 2j + 1) times a pair of
/// 16-bit values per channel, added to Int32 sums kept in the bits of the float accumulators.
enum Int8ProbabilityProduct: AttentionProduct {
    @inline(__always)
    static func step(_ acc: inout SIMD16<Float>, _ x: UInt32, _ w: SIMD16<UInt32>) {
        let sums = unsafeBitCast(acc, to: SIMD16<Int32>.self), pairs = unsafeBitCast(w, to: SIMD16<Int32>.self)
        let broadcast = SIMD16<Int32>(repeating: Int32(bitPattern: x))
        #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
        acc = unsafeBitCast(dotWordPairs(sums, broadcast, pairs), to: SIMD16<Float>.self)
        #else
        // As vpdpwssd: the low halves' product plus the high halves', both signed.
        let low = ((broadcast &<< 16) &>> 16) &* ((pairs &<< 16) &>> 16)
        acc = unsafeBitCast(sums &+ low &+ (broadcast &>> 16) &* (pairs &>> 16), to: SIMD16<Float>.self)
        #endif
    }
}
