// Fused, cache-blocked attention for one sequence and one head:
//
//     out[n × d] = softmax(Q·Kᵀ · scale) · V        (keys past the sequence masked out)
//
// without the n × n score matrix. Queries go in blocks of `queryBlock` rows, keys in blocks of
// `keyBlock`; for each pair of blocks the scores land in a small buffer that stays in L1,
// then an online softmax (running maximum m and sum l per query, as in FlashAttention) turns
// them into probabilities, rescales what the block's output rows hold so far by e^(m_old − m_new),
// and adds P·V_block. At the end each output row is divided by its l.
//
// Both products are the same small GEMM: a tile of up to 6 rows × up to 64 columns (four
// 16-lane vectors) in zmm accumulators, one row of A broadcast per step, one row of B loaded.
// QKᵀ reads Kᵀ packed per head ([d × keys], keys padded to 16); P·V reads V packed per head
// ([keys × d], d padded to 16). Tiles are sized in 16-column steps, so a 16-token sequence or a
// 32-wide head (MiniLM) wastes no lanes, unlike the 64-channel panels of the Linear kernels.
//
// Q, K and V are the float outputs of the QKV projection in every precision. The products run in
// FP32 (`FP32Attention`); for the `bf16` precision in BF16 pairs with FP32 accumulation
// (`BF16Attention`: Q, K, V and the probabilities rounded to BF16, vdpbf16ps: twice the
// multiply-adds per instruction, or FMA on the same values widened, as `BF16Product` picks); for
// the `int8-attention` and `int8-static` precisions in integers with Int32 accumulation
// (`Int8Attention`: QKᵀ on quads of bytes, vpdpbusd, four times the multiply-adds of an FMA; P·V
// on pairs of 16-bit values, vpdpwssd, twice). The softmax, its sums and the output are FP32 in
// all of them.

#if SWIFTBERT_NATIVE_ISA && (SWIFTBERT_HOST_BF16 || SWIFTBERT_HOST_VNNI)
import SwiftBERTVNNI
#endif

/// The arithmetic of attention's two products, chosen by the model's precision.
enum AttentionPrecision: Sendable {
    case fp32, bf16, int8
}

/// Scratch for `attendHead`, owned by one worker: Kᵀ and V of one head (floats, BF16 pairs or
/// byte quads), the score block, the output block and its running maximum and sum, the BF16
/// pairs (byte quads) of a query block and of a probability block, and INT8's scales.
final class AttentionScratch {
    let maxLength: Int
    let headDim: Int
    let paddedHeadDim: Int
    let keysT, values, scores, output, rowMax, rowSum: UnsafeMutablePointer<Float>
    /// Each query row's maximum after the current key block, before the exponentials use it.
    let blockMax: UnsafeMutablePointer<Float>
    let queryPairs, probabilityPairs: UnsafeMutablePointer<UInt32>
    /// INT8 only: each query row's and key row's scale, each value channel's scale over 32767
    /// (P's fixed point), and one block of P·V's Int32 sums (also scratch while V is quantised).
    let queryScales, keyScales, valueScales, products: UnsafeMutablePointer<Float>
    /// INT8 only: 128 × each key's byte sum, the u8 offset of the queries to take off.
    let keyOffsets: UnsafeMutablePointer<Int32>
    private let buffers: FloatBuffers

    init(maxLength: Int, headDim: Int) {
        (self.maxLength, self.headDim) = (maxLength, headDim)
        paddedHeadDim = roundUp16(headDim)
        let keys = roundUp16(maxLength)
        // Kᵀ has a row more than d for the widened BF16 products, which pad an odd d to pairs.
        buffers = FloatBuffers([(headDim + 1) * keys, keys * paddedHeadDim, attentionQueryBlock * attentionKeyBlock,
                                attentionQueryBlock * paddedHeadDim, attentionQueryBlock, attentionQueryBlock,
                                attentionQueryBlock * paddedHeadDim, attentionQueryBlock * attentionKeyBlock / 2,
                                attentionQueryBlock, keys, keys, paddedHeadDim, attentionQueryBlock * paddedHeadDim,
                                attentionQueryBlock], zeroed: true)
        let p = buffers.pointers
        (keysT, values, scores, output, rowMax, rowSum) = (p[0], p[1], p[2], p[3], p[4], p[5])
        queryPairs = UnsafeMutableRawPointer(p[6]).bindMemory(to: UInt32.self, capacity: attentionQueryBlock * paddedHeadDim)
        probabilityPairs = UnsafeMutableRawPointer(p[7]).bindMemory(to: UInt32.self, capacity: attentionQueryBlock * attentionKeyBlock / 2)
        (queryScales, keyScales, valueScales, products, blockMax) = (p[8], p[9], p[11], p[12], p[13])
        keyOffsets = UnsafeMutableRawPointer(p[10]).bindMemory(to: Int32.self, capacity: keys)
    }

    /// body(Kᵀ, V) over the packed-keys and packed-values buffers as 32-bit lanes: BF16 pairs,
    /// INT8's byte quads (Kᵀ) or 16-bit pairs (V), which take no more room than the floats they
    /// replace.
    @inline(__always)
    func withLanes(_ body: (UnsafeMutablePointer<UInt32>, UnsafeMutablePointer<UInt32>) -> Void) {
        let keys = roundUp16(maxLength)
        keysT.withMemoryRebound(to: UInt32.self, capacity: headDim * keys) { keysT in
            values.withMemoryRebound(to: UInt32.self, capacity: keys * paddedHeadDim) { values in body(keysT, values) }
        }
    }
}

/// Queries per block: four 6-row tiles share each load of Kᵀ and V from L2.
let attentionQueryBlock = 24
/// Keys per block: a 24 × 256 score block is 24 KiB, in L1 with the rows of Kᵀ and V it meets.
/// (INT8 MiniLM at 512 tokens, CPU time of a pass: 24 × 256 33.9 ms, 24 × 128 35.5, 12 × 256 35.0,
/// 6 × 512 33.7: within noise of the best, with the smaller score block.)
let attentionKeyBlock = 256

@inline(__always) func roundUp16(_ x: Int) -> Int { (x + 15) & ~15 }

/// A bias added to the attention scores that depends only on the head and on the distance
/// key − query (MPNet's relative position bias), stored per head as one row over every
/// distance, so the bias of a query row and a block of keys is one contiguous slice. Values are
/// in units of the unscaled score Q·Kᵀ (divided by the softmax scale once, at load), so adding
/// them before the scale gives softmax(Q·Kᵀ·scale + bias).
final class RelativeAttentionBias: @unchecked Sendable {
    /// Longest sequence covered: distances −(span − 1) … span − 1.
    let span: Int
    private let table: UnsafeMutablePointer<Float>

    /// `bias(head, distance)` for distance = key − query, in final (scaled) score units.
    init(heads: Int, span: Int, scale: Float, _ bias: (_ head: Int, _ distance: Int) -> Float) {
        self.span = span
        let width = 2 * span - 1
        table = .allocate(capacity: heads * width)
        for head in 0..<heads {
            for d in 0..<width { table[head * width + d] = bias(head, d - (span - 1)) / scale }
        }
    }
    deinit { table.deallocate() }

    /// The bias of query `query` against keys `firstKey`, `firstKey` + 1, … in head `head`.
    @inline(__always)
    func row(head: Int, query: Int, firstKey: Int) -> UnsafePointer<Float> {
        UnsafePointer(table + head * (2 * span - 1) + (firstKey - query + span - 1))
    }
}

/// out[T × heads·headDim] (row stride ldo) = softmax(Q·Kᵀ/√headDim)·V per sequence and head, for
/// packed Q, K and V whose rows are `ld` floats apart (sequence s: `lengths[s]` rows from row
/// `starts[s]`); the (sequence, head) pairs are split
/// across `threads`, each with its own scratch. BERT's and MobileBERT's self-attention run this;
/// `arithmetic`: the products in FP32, BF16 or INT8 (the model's precision). `bias`: a
/// relative position bias added to the scores (MPNet). `window`: each query sees only the keys
/// within this distance of it (ModernBERT's sliding-window layers); the key blocks beyond are
/// skipped, so such a layer costs what its window costs.
func multiHeadAttention(q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int,
                        heads: Int, headDim: Int, starts: [Int], lengths: [Int], threads: Int, arithmetic: AttentionPrecision = .fp32,
                        bias: RelativeAttentionBias? = nil, window: Int? = nil,
                        scratch: [AttentionScratch], into out: UnsafeMutablePointer<Float>, ldo: Int) {
    let scale = 1 / Float(headDim).squareRoot()
    // QKᵀ and P·V, all heads: each query meets n keys, or 2·window + 1.
    let work = lengths.reduce(0) { $0 + 2 * $1 * min($1, 2 * (window ?? $1) + 1) * heads * headDim }
    parallelFor(lengths.count * heads, threads: threads, work: work) { task, worker in
        let s = task / heads, head = task % heads
        let row = starts[s] * ld + head * headDim
        let (n, target) = (lengths[s], out + starts[s] * ldo + head * headDim)
        let bias = bias.map { ($0, head: head) }
        switch arithmetic {
        case .fp32:
            attendHead(FP32Attention.self, q: q + row, k: k + row, v: v + row, ld: ld, n: n, scale: scale,
                       bias: bias, window: window, into: target, ldo: ldo, scratch[worker])
        case .bf16:
            attendHead(bf16: .preferred, q: q + row, k: k + row, v: v + row, ld: ld, n: n, scale: scale,
                       bias: bias, window: window, into: target, ldo: ldo, scratch[worker])
        case .int8:
            attendHead(Int8Attention.self, q: q + row, k: k + row, v: v + row, ld: ld, n: n, scale: scale,
                       bias: bias, window: window, into: target, ldo: ldo, scratch[worker])
        }
    }
}

/// What one depth step of the attention tile multiplies: one element (FP32), one pair (BF16,
/// INT8's probabilities) or one quad (INT8's scores).
protocol AttentionProduct {
    associatedtype Scalar: SIMDScalar
    /// acc += x · w, lane by lane, x broadcast: one depth step of a tile row.
    static func step(_ acc: inout SIMD16<Float>, _ x: Scalar, _ w: SIMD16<Scalar>)
}

/// The arithmetic of attention's two products, QKᵀ and P·V: what the tile multiplies and how its
/// operands are packed.
protocol AttentionArithmetic: AttentionProduct {
    /// body(Kᵀ [steps of d × nPad], V [steps of nPad × dPad]) for one head's k and v (n rows,
    /// `ld` apart), packed into the scratch; padding is zero.
    static func withPackedKeysAndValues(k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                                        _ scratch: AttentionScratch,
                                        _ body: (UnsafePointer<Scalar>, UnsafePointer<Scalar>) -> Void)
    /// A block of `rows` query rows (`ld` apart) as the tile reads them: pointer, row stride, steps of d.
    static func queries(_ q: UnsafePointer<Float>, ld: Int, rows: Int, _ scratch: AttentionScratch) -> (UnsafePointer<Scalar>, Int, Int)
    /// The probability block (`rows` × `cols`, rows `ld` apart): pointer, row stride, steps of cols.
    static func probabilities(_ p: UnsafePointer<Float>, ld: Int, rows: Int, cols: Int, _ scratch: AttentionScratch) -> (UnsafePointer<Scalar>, Int, Int)
    /// The packed rows of V from key k0 on (k0 a multiple of the key block).
    static func valueRow(_ k0: Int) -> Int
    /// The score block [rows × cols] (rows `ld` apart) of keys from `firstKey` on, as the tile
    /// left it, turned into scores Q·Kᵀ in place (INT8's sums are integers until then).
    static func finishScores(_ scores: UnsafeMutablePointer<Float>, ld: Int, rows: Int, cols: Int, firstKey: Int,
                             _ scratch: AttentionScratch)
    /// o[rows × dPad] += P·V for a probability block as `probabilities` gave it and V's packed rows.
    static func addProducts(_ p: UnsafePointer<Scalar>, ldp: Int, depth: Int, values: UnsafePointer<Scalar>,
                            into o: UnsafeMutablePointer<Float>, rows: Int, _ scratch: AttentionScratch)
}

extension AttentionArithmetic {
    /// Float products are scores already.
    @inline(__always)
    static func finishScores(_ scores: UnsafeMutablePointer<Float>, ld: Int, rows: Int, cols: Int, firstKey: Int,
                             _ scratch: AttentionScratch) {}

    /// Float products accumulate into the output rows directly.
    @inline(__always)
    static func addProducts(_ p: UnsafePointer<Scalar>, ldp: Int, depth: Int, values: UnsafePointer<Scalar>,
                            into o: UnsafeMutablePointer<Float>, rows: Int, _ scratch: AttentionScratch) {
        let dPad = scratch.paddedHeadDim
        attentionGEMM(Self.self, a: p, lda: ldp, b: values, ldb: dPad, depth: depth, c: o, ldc: dPad, rows: rows,
                      columns: dPad, accumulate: true)
    }
}

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
            // Kᵀ [dPairs × nPad]: lane (p, j) = K[j][2p], K[j][2p + 1].
            for p in 0..<dPairs {
                let row = keysT + p * nPad, c = 2 * p
                if c + 1 < d {
                    for j in 0..<n { row[j] = BFloat16.pair(k[j * ld + c], k[j * ld + c + 1]) }
                } else {
                    for j in 0..<n { row[j] = BFloat16.bits(k[j * ld + c]) }
                }
                for j in n..<nPad { row[j] = 0 }
            }
            // V [nPairs × dPad]: lane (jp, c) = V[2jp][c], V[2jp + 1][c]; the pad columns stay zero.
            for jp in 0..<nPairs {
                let row = values + jp * dPad, even = v + 2 * jp * ld
                if 2 * jp + 1 < n {
                    let odd = even + ld
                    for c in 0..<d { row[c] = BFloat16.pair(even[c], odd[c]) }
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
                for c in stride(from: 0, to: wide, by: 16) {
                    let x = UnsafeRawPointer(row + c).loadUnaligned(as: SIMD16<Float>.self)
                    let m = lanewiseMax(UnsafeRawPointer(largest + c).loadUnaligned(as: SIMD16<Float>.self),
                                        x.replacing(with: -x, where: x .< 0))
                    UnsafeMutableRawPointer(largest + c).storeBytes(of: m, as: SIMD16<Float>.self)
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
                for c in stride(from: 0, to: wide, by: 16) {
                    let r = UnsafeRawPointer(reciprocals + c).loadUnaligned(as: SIMD16<Float>.self)
                    @inline(__always) func q(_ t: Int) -> SIMD16<Int32> {
                        guard t < rows else { return SIMD16() }
                        let x = UnsafeRawPointer(v0 + (t &* ld &+ c)).loadUnaligned(as: SIMD16<Float>.self)
                        return SymmetricInt8.quantize(x, reciprocal: r)
                    }
                    let pairs = q(0) & 0xFFFF | q(1) &<< 16
                    UnsafeMutableRawPointer(row + c).storeBytes(of: pairs, as: SIMD16<Int32>.self)
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
            // Whole 16-key steps (the tile's; the scales past the sequence are finite).
            for c in stride(from: 0, to: cols, by: 16) {
                let sums = s.loadUnaligned(fromByteOffset: 4 &* c, as: SIMD16<Int32>.self)
                let offsets = UnsafeRawPointer(keyOffsets + c).loadUnaligned(as: SIMD16<Int32>.self)
                let scales = UnsafeRawPointer(keyScales + c).loadUnaligned(as: SIMD16<Float>.self)
                s.storeBytes(of: integersAsFloats(sums &- offsets) * (queryScale * scales),
                             toByteOffset: 4 &* c, as: SIMD16<Float>.self)
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
            for c in stride(from: 0, to: cols, by: 16) {
                var fixed = SymmetricInt8.rounded(row.loadUnaligned(fromByteOffset: 4 &* c, as: SIMD16<Float>.self) * 32767)
                if c &+ 16 > cols { fixed.replace(with: 0, where: lane .>= Int32(cols &- c)) }
                target.storeBytes(of: truncatedToWords(fixed), toByteOffset: 2 &* c, as: SIMD16<UInt16>.self)
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

/// out[n × d] (row stride ldo) = softmax(q·kᵀ · scale)·v for one sequence of n tokens and one
/// head, the products in `A`'s arithmetic: q, k, v point at the head's first column of its
/// first token, rows `ld` floats apart. `bias`: a relative position bias and the head it is
/// read for. `window`: keys farther than this from the query are left out.
func attendHead<A: AttentionArithmetic>(_: A.Type, q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>,
                                        ld: Int, n: Int, scale: Float, bias: (RelativeAttentionBias, head: Int)? = nil,
                                        window: Int? = nil, into out: UnsafeMutablePointer<Float>, ldo: Int,
                                        _ scratch: AttentionScratch) {
    precondition(n <= scratch.maxLength && n <= bias?.0.span ?? n)
    A.withPackedKeysAndValues(k: k, v: v, ld: ld, n: n, scratch) { keysT, values in
        attendPacked(A.self, q: q, ld: ld, n: n, scale: scale, bias: bias, window: window ?? n,
                     keysT: keysT, values: values, into: out, ldo: ldo, scratch)
    }
}

/// `attendHead` with BF16 products, by `product`'s arithmetic (the same results either way).
func attendHead(bf16 product: BF16Product, q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>,
                ld: Int, n: Int, scale: Float, bias: (RelativeAttentionBias, head: Int)? = nil,
                window: Int? = nil, into out: UnsafeMutablePointer<Float>, ldo: Int, _ scratch: AttentionScratch) {
    switch product {
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
    case .dotInstruction:
        attendHead(BF16Attention.self, q: q, k: k, v: v, ld: ld, n: n, scale: scale, bias: bias, window: window,
                   into: out, ldo: ldo, scratch)
    #endif
    case .widened:
        attendHead(WidenedBF16Attention.self, q: q, k: k, v: v, ld: ld, n: n, scale: scale, bias: bias, window: window,
                   into: out, ldo: ldo, scratch)
    }
}

/// attendHead once Kᵀ and V are packed: query blocks × key blocks with the online softmax.
@inline(__always)
private func attendPacked<A: AttentionArithmetic>(_: A.Type, q: UnsafePointer<Float>, ld: Int, n: Int, scale: Float,
                                                  bias: (RelativeAttentionBias, head: Int)?, window: Int, keysT: UnsafePointer<A.Scalar>, values: UnsafePointer<A.Scalar>,
                                                  into out: UnsafeMutablePointer<Float>, ldo: Int, _ scratch: AttentionScratch) {
    let d = scratch.headDim, dPad = scratch.paddedHeadDim, nPad = roundUp16(n)
    let scores = scratch.scores, o = scratch.output, rowMax = scratch.rowMax, rowSum = scratch.rowSum
    let blockMax = scratch.blockMax
    let ldS = attentionKeyBlock
    let scale2 = scale * 1.44269504088896341  // log2 e
    for q0 in stride(from: 0, to: n, by: attentionQueryBlock) {
        let rows = min(attentionQueryBlock, n - q0)
        for r in 0..<rows { rowMax[r] = -.infinity; rowSum[r] = 0 }
        o.update(repeating: 0, count: rows * dPad)
        let (queries, ldq, qSteps) = A.queries(q + q0 * ld, ld: ld, rows: rows, scratch)
        // The keys some query of the block sees: all, or the block's rows ± window, from a
        // multiple of 16 (the tiles read Kᵀ in 16-key steps up to nPad; BF16 pairs V's rows).
        let firstKey = max(0, q0 - window) & ~15, endKey = min(n, q0 + rows + window)
        let windowed = firstKey > 0 || endKey < n || window < n - 1
        for k0 in stride(from: firstKey, to: endKey, by: attentionKeyBlock) {
            let cols = min(attentionKeyBlock, endKey - k0)
            // S[rows × cols] = Q_block · K_blockᵀ.
            attentionGEMM(A.self, a: queries, lda: ldq, b: keysT + k0, ldb: nPad, depth: qSteps,
                          c: scores, ldc: ldS, rows: rows, columns: roundUp16(cols), accumulate: false)
            A.finishScores(scores, ld: ldS, rows: rows, cols: cols, firstKey: k0, scratch)
            // Online softmax: P = e^(S·scale − m_new) in place, l and the output rows rescaled.
            // In powers of 2 (m in units of log2 e), which saves exp its range reduction.
            // The columns query r sees: [lo, hi) (all of them without a window).
            @inline(__always) func seen(_ r: Int) -> Range<Int> {
                let lo = windowed ? min(cols, max(0, q0 + r - window - k0)) : 0
                return lo..<(windowed ? max(lo, min(cols, q0 + r + window + 1 - k0)) : cols)
            }
            // Every row's new maximum first, then every row's exponentials: a row's exponentials
            // wait on its maximum (a chain of loads, maxima and a tree), which the rows before
            // it now hide.
            for r in 0..<rows {
                let s = scores + r * ldS
                if let (table, head) = bias {
                    let b = table.row(head: head, query: q0 + r, firstKey: k0)
                    for c in 0..<cols { s[c] += b[c] }
                }
                let columns = seen(r)
                if !columns.isEmpty { blockMax[r] = max(rowMax[r], scoreMaximum(s + columns.lowerBound, count: columns.count) * scale2) }
            }
            for r in 0..<rows {
                let s = scores + r * ldS
                let columns = seen(r)
                let (lo, hi) = (columns.lowerBound, columns.upperBound)
                guard lo < hi else {
                    // No key of this block is in the query's window: it adds nothing.
                    s.update(repeating: 0, count: cols)
                    continue
                }
                let (mOld, mNew) = (rowMax[r], blockMax[r])
                // 16 lanes written out: left to LLVM, the loop ran on 8-lane vectors. The lanes past
                // `cols` (up to the tile's 16-key steps) are computed and never read.
                let (shift, factor) = (SIMD16<Float>(repeating: -mNew), SIMD16<Float>(repeating: scale2))
                for c in stride(from: 0, to: cols, by: 16) {
                    var x = shift
                    x.accumulateProduct(UnsafeRawPointer(s + c).loadUnaligned(as: SIMD16<Float>.self), factor)
                    UnsafeMutableRawPointer(s + c).storeBytes(of: exp2OfNonPositive(x), as: SIMD16<Float>.self)
                }
                if windowed {
                    for c in 0..<lo { s[c] = 0 }
                    for c in hi..<cols { s[c] = 0 }
                }
                rowMax[r] = mNew
                if k0 == firstKey {
                    rowSum[r] = scoreSum(s, count: cols)
                } else {
                    let correction = exp2OfNonPositive(mOld - mNew)
                    rowSum[r] = rowSum[r] * correction + scoreSum(s, count: cols)
                    let row = o + r * dPad
                    for c in 0..<dPad { row[c] *= correction }
                }
            }
            // O_block += P · V_block.
            let (probabilities, ldp, pSteps) = A.probabilities(scores, ld: ldS, rows: rows, cols: cols, scratch)
            A.addProducts(probabilities, ldp: ldp, depth: pSteps, values: values + A.valueRow(k0) * dPad, into: o,
                          rows: rows, scratch)
        }
        for r in 0..<rows {
            let inv = 1 / rowSum[r]
            let row = o + r * dPad, target = out + (q0 + r) * ldo
            for c in 0..<d { target[c] = row[c] * inv }
        }
    }
}

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
private func exp2OfNonPositive(_ a: SIMD16<Float>) -> SIMD16<Float> {
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
private func rotated(_ a: SIMD16<Float>, by n: Int) -> SIMD16<Float> {
    var result = SIMD16<Float>()
    for i in 0..<16 { result[i] = a[(i &+ n) & 15] }
    return result
}

@inline(__always)
private func scoreMaximum(_ x: UnsafePointer<Float>, count: Int) -> Float {
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
private func scoreSum(_ x: UnsafePointer<Float>, count: Int) -> Float {
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

/// C[rows × columns] (+)= A[rows × depth] · B[depth × columns], columns a multiple of 16, in
/// tiles of up to 6 rows × 64 columns.
@inline(__always)
fileprivate func attentionGEMM<A: AttentionProduct>(_: A.Type, a: UnsafePointer<A.Scalar>, lda: Int, b: UnsafePointer<A.Scalar>,
                                                   ldb: Int, depth: Int, c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int,
                                                   columns: Int, accumulate: Bool) {
    var row = 0
    while row < rows {
        let tileRows = min(6, rows - row)
        var column = 0
        while column < columns {
            let vectors = min(4, (columns - column) / 16)
            let tile = AttentionTile<A>(a: a + row * lda, lda: lda, b: b + column, ldb: ldb, depth: depth,
                                        c: c + row * ldc + column, ldc: ldc, accumulate: accumulate)
            withTileRows(tileRows, AttentionTileRows(tile: tile, vectors: vectors))
            column += 16 * vectors
        }
        row += tileRows
    }
}

/// The tile for the row count `withTileRows` gives, then for its count of vectors.
private struct AttentionTileRows<A: AttentionProduct>: TileRowsBody {
    let tile: AttentionTile<A>
    let vectors: Int
    @inline(__always)
    func callAsFunction<Rows: TileRowCount>(_: Rows.Type) { withTileRows(vectors, AttentionTileVectors<A, Rows>(tile: tile)) }
}

private struct AttentionTileVectors<A: AttentionProduct, Rows: TileRowCount>: TileRowsBody {
    let tile: AttentionTile<A>
    @inline(__always)
    func callAsFunction<Vectors: TileRowCount>(_: Vectors.Type) { tile.run(Rows.self, Vectors.self) }
}

/// One tile of `attentionGEMM`: `Rows` rows × `Vectors` 16-lane vectors, kept in registers over
/// the whole depth.
private struct AttentionTile<A: AttentionProduct> {
    let a: UnsafePointer<A.Scalar>
    let lda: Int
    let b: UnsafePointer<A.Scalar>
    let ldb: Int
    let depth: Int
    let c: UnsafeMutablePointer<Float>
    let ldc: Int
    let accumulate: Bool

    @inline(never)
    func run<Rows: TileRowCount, Vectors: TileRowCount>(_: Rows.Type, _: Vectors.Type) {
        let rows = Rows.rows, vectors = Vectors.rows
        var acc0 = FloatTileRow(), acc1 = FloatTileRow(), acc2 = FloatTileRow()
        var acc3 = FloatTileRow(), acc4 = FloatTileRow(), acc5 = FloatTileRow()
        @inline(__always) func load(_ acc: inout FloatTileRow, _ row: Int) {
            let p = UnsafeRawPointer(c + row * ldc)
            acc.v0 = p.loadUnaligned(as: SIMD16<Float>.self)
            if vectors > 1 { acc.v1 = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self) }
            if vectors > 2 { acc.v2 = p.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self) }
            if vectors > 3 { acc.v3 = p.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self) }
        }
        @inline(__always) func store(_ acc: FloatTileRow, _ row: Int) {
            let p = UnsafeMutableRawPointer(c + row * ldc)
            p.storeBytes(of: acc.v0, as: SIMD16<Float>.self)
            if vectors > 1 { p.storeBytes(of: acc.v1, toByteOffset: 64, as: SIMD16<Float>.self) }
            if vectors > 2 { p.storeBytes(of: acc.v2, toByteOffset: 128, as: SIMD16<Float>.self) }
            if vectors > 3 { p.storeBytes(of: acc.v3, toByteOffset: 192, as: SIMD16<Float>.self) }
        }
        /// body on each of the tile's rows and its accumulators, unrolled.
        @inline(__always) func forEachRow(_ body: (inout FloatTileRow, Int) -> Void) {
            body(&acc0, 0)
            if rows > 1 { body(&acc1, 1) }
            if rows > 2 { body(&acc2, 2) }
            if rows > 3 { body(&acc3, 3) }
            if rows > 4 { body(&acc4, 4) }
            if rows > 5 { body(&acc5, 5) }
        }
        if accumulate { forEachRow(load) }
        for i in 0..<depth {
            let w = UnsafeRawPointer(b + i * ldb)
            let w0 = w.loadUnaligned(as: SIMD16<A.Scalar>.self)
            let w1 = vectors > 1 ? w.loadUnaligned(fromByteOffset: 64, as: SIMD16<A.Scalar>.self) : SIMD16()
            let w2 = vectors > 2 ? w.loadUnaligned(fromByteOffset: 128, as: SIMD16<A.Scalar>.self) : SIMD16()
            let w3 = vectors > 3 ? w.loadUnaligned(fromByteOffset: 192, as: SIMD16<A.Scalar>.self) : SIMD16()
            @inline(__always) func step(_ acc: inout FloatTileRow, _ row: Int) {
                let x = a[row * lda + i]
                A.step(&acc.v0, x, w0)
                if vectors > 1 { A.step(&acc.v1, x, w1) }
                if vectors > 2 { A.step(&acc.v2, x, w2) }
                if vectors > 3 { A.step(&acc.v3, x, w3) }
            }
            forEachRow(step)
        }
        forEachRow { acc, row in store(acc, row) }
    }
}
