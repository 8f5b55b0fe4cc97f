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
public enum AttentionPrecision: Sendable {
    case fp32, bf16, int8
}

/// Scratch for `attendHead`, owned by one worker: Kᵀ and V of one head (floats, BF16 pairs or
/// byte quads), the score block, the output block and its running maximum and sum, the BF16
/// pairs (byte quads) of a query block and of a probability block, and INT8's scales.
public final class AttentionScratch {
    let maxLength: Int
    let headDim: Int
    let paddedHeadDim: Int
    let keysT, values, scores, output, rowMax, rowSum: UnsafeMutablePointer<Float>
    /// Each query row's maximum after the current key block, before the exponentials use it.
    let blockMax: UnsafeMutablePointer<Float>
    let queryPairs, probabilityPairs: UnsafeMutablePointer<UInt32>
    /// INT8 only: each query row's and key row's scale, each value channel's scale over 32767
    /// (P's fixed point), and one block of P·V's Int32 sums (also scratch while K and V are
    /// packed, in BF16 too: a key's row of pairs).
    let queryScales, keyScales, valueScales, products: UnsafeMutablePointer<Float>
    /// INT8 only: 128 × each key's byte sum, the u8 offset of the queries to take off.
    let keyOffsets: UnsafeMutablePointer<Int32>
    private let buffers: FloatBuffers

    public init(maxLength: Int, headDim: Int) {
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

@inline(__always) func roundUp16(_ x: Int) -> Int { (x + 15) & ~15 }

/// A bias added to the attention scores that depends only on the head and on the distance
/// key − query (MPNet's relative position bias), stored per head as one row over every
/// distance, so the bias of a query row and a block of keys is one contiguous slice. Values are
/// in units of the unscaled score Q·Kᵀ (divided by the softmax scale once, at load), so adding
/// them before the scale gives softmax(Q·Kᵀ·scale + bias).
public final class RelativeAttentionBias: @unchecked Sendable {
    /// Longest sequence covered: distances −(span − 1) … span − 1.
    let span: Int
    private let table: UnsafeMutablePointer<Float>

    /// `bias(head, distance)` for distance = key − query, in final (scaled) score units.
    public init(heads: Int, span: Int, scale: Float, _ bias: (_ head: Int, _ distance: Int) -> Float) {
        self.span = span
        let width = 2 * span - 1
        table = .allocate(capacity: heads * width)
        for head in 0..<heads {
            for d in 0..<width { table[head * width + d] = bias(head, d - (span - 1)) / scale }
        }
    }
    deinit { table.deallocate() }

    /// Head `head`'s bias as the kernel reads it: the row of query q starts one distance earlier
    /// than query q − 1's.
    func scores(head: Int) -> ScoreBias {
        ScoreBias(base: UnsafePointer(table + head * (2 * span - 1) + span - 1), queryStride: -1, span: span)
    }
}

/// Scores added to every query's row of Q·Kᵀ (in unscaled score units) for one sequence and head:
/// query q's bias against key k is `base[q · queryStride + k]`. A relative position bias (MPNet)
/// reads one row per distance (stride −1); a pairwise bias (DeBERTa's disentangled attention)
/// an [n × n] matrix (stride n).
struct ScoreBias {
    let base: UnsafePointer<Float>
    let queryStride: Int
    /// The longest sequence it covers.
    let span: Int

    /// The bias of query `query` against keys `firstKey`, `firstKey` + 1, ….
    @inline(__always)
    func row(query: Int, firstKey: Int) -> UnsafePointer<Float> { base + (query * queryStride + firstKey) }
}

/// Writes the scores one sequence's head adds to Q·Kᵀ, before the softmax scale, for every
/// query and key: `(sequence, head, n, matrix)` fills matrix[q · n + k] for the sequence's n
/// tokens. DeBERTa's content-to-position and position-to-content scores come this way: they
/// depend on the query, the key and their distance, so no table over distances holds them.
public typealias PairwiseAttentionBias = (_ sequence: Int, _ head: Int, _ n: Int, _ matrix: UnsafeMutablePointer<Float>) -> Void

/// The keys each query sees, by their position relative to it: from `before` keys back to
/// `after` keys ahead, itself included. `.all` in an encoder; `.around(w)` on sliding-window
/// layers (ModernBERT, Gemma); `.causal` in a decoder (Qwen3), each token seeing those before it.
public struct AttentionWindow: Sendable, Equatable {
    public let before: Int
    public let after: Int

    public init(before: Int, after: Int) {
        precondition(before >= 0 && after >= 0, "an attention window reaches zero or more keys each way")
        (self.before, self.after) = (before, after)
    }

    public static let all = AttentionWindow(before: .max, after: .max)
    public static let causal = AttentionWindow(before: .max, after: 0)
    /// The keys within `distance` of the query on either side.
    public static func around(_ distance: Int) -> AttentionWindow { AttentionWindow(before: distance, after: distance) }

    /// The most keys a query of a sequence of `length` tokens sees.
    func span(length: Int) -> Int { min(length, min(before, length) + min(after, length) + 1) }
}

/// out[T × heads·headDim] (row stride ldo) = softmax(Q·Kᵀ/√headDim)·V per sequence and head, for
/// packed Q, K and V whose rows are `ld` floats apart (sequence s: `lengths[s]` rows from row
/// `starts[s]`). BERT's and MobileBERT's self-attention run this;
/// `arithmetic`: the products in FP32, BF16 or INT8 (the model's precision). `bias`: a
/// relative position bias added to the scores (MPNet). `window`: the keys each query sees
/// (ModernBERT's and Gemma's sliding-window layers, a decoder's causal mask); the key blocks
/// beyond are skipped, so such a layer costs what its window costs. `tiles`: where BF16's
/// products run on AMX tiles (or their emulator); nil runs them on the vector units.
/// `pairwiseBias`: scores the caller writes per sequence and head (DeBERTa), added as `bias` is.
/// `scale`: the softmax's factor on Q·Kᵀ (nil: 1/√headDim). `keyValueHeads`: grouped-query
/// attention (Gemma, Qwen3), K and V holding that many heads (nil: `heads`), query head h reading
/// key/value head h / (heads / keyValueHeads).
///
/// `queries`: the rows of each sequence whose outputs are needed (nil: all). The query blocks
/// that hold them run whole, as in a pass over all rows, so every row computed is what that
/// pass gives; the rows of other blocks in `out` are left as they were.
///
/// The tasks across `threads`: each (sequence, key/value head) packs its K and V once for the
/// query heads of its group, and when such pairs are few and do not share out evenly (one for
/// EmbeddingGemma at batch 1), their queries split into runs of whole query blocks. The query
/// blocks are the same however the work is split, so the output does not depend on `threads`.
public func multiHeadAttention(q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int,
                        heads: Int, keyValueHeads: Int? = nil, headDim: Int, starts: [Int], lengths: [Int], threads: Int,
                        arithmetic: AttentionPrecision = .fp32,
                        bias: RelativeAttentionBias? = nil, pairwiseBias: PairwiseAttentionBias? = nil, scale: Float? = nil,
                        window: AttentionWindow = .all, queries: [Range<Int>]? = nil, tiles: TileBackend? = TileBackend.preferred,
                        scratch: [AttentionScratch], into out: UnsafeMutablePointer<Float>, ldo: Int) {
    precondition(bias == nil || pairwiseBias == nil, "one bias at a time")
    let kvHeads = keyValueHeads ?? heads
    precondition(kvHeads > 0 && heads % kvHeads == 0, "the query heads share the key/value heads in equal groups")
    let scale = scale ?? 1 / Float(headDim).squareRoot(), group = heads / kvHeads
    // QKᵀ and P·V, all heads: each query meets at most the keys of its window.
    let work = lengths.reduce(0) { $0 + 2 * $1 * window.span(length: $1) * heads * headDim }
    // A pairwise bias is written whole per task: its pairs are not split.
    let parts = pairwiseBias == nil ? queryParts(pairs: lengths.count * kvHeads, threads: threads) : 1
    parallelFor(lengths.count * kvHeads * parts, threads: threads, work: work) { task, worker in
        let s = task / (kvHeads * parts), kvHead = task / parts % kvHeads, part = task % parts
        let n = lengths[s]
        var queryRows = queryRun(part, of: parts, length: n)
        if let queries {
            // The whole query blocks that hold the wanted rows, as a full pass runs them: a
            // block's keys (with a window, up to its last row's) are then the same.
            let (wanted, block) = (queries[s], attentionQueryBlock)
            guard !wanted.isEmpty else { return }
            let from = max(queryRows.lowerBound, wanted.lowerBound / block * block)
            let to = min(queryRows.upperBound, (wanted.upperBound + block - 1) / block * block)
            queryRows = from..<max(from, to)
        }
        guard !queryRows.isEmpty else { return }
        precondition(n <= scratch[worker].maxLength, "the scratch holds the sequence's K and V")
        let kv = starts[s] * ld + kvHead * headDim
        /// The group's query heads against this K and V, packed once, in `A`'s arithmetic.
        func attend<A: AttentionArithmetic>(_: A.Type) {
            A.withPackedKeysAndValues(k: k + kv, v: v + kv, ld: ld, n: n, scratch[worker]) { keysT, values in
                for head in kvHead * group..<(kvHead + 1) * group {
                    var pairwise: UnsafeMutablePointer<Float>? = nil
                    if let pairwiseBias {
                        pairwise = .allocate(capacity: n * n)
                        pairwiseBias(s, head, n, pairwise!)
                    }
                    defer { pairwise?.deallocate() }
                    let scores = pairwise.map { ScoreBias(base: UnsafePointer($0), queryStride: n, span: n) } ?? bias?.scores(head: head)
                    precondition(n <= scores?.span ?? n)
                    attendPacked(A.self, q: q + starts[s] * ld + head * headDim, ld: ld, n: n, scale: scale, bias: scores,
                                 window: window, queryRows: queryRows, keysT: keysT, values: values,
                                 into: out + starts[s] * ldo + head * headDim, ldo: ldo, scratch[worker])
                }
            }
        }
        switch (arithmetic, tiles) {
        case (.fp32, _): attend(FP32Attention.self)
        case (.bf16, .hardware?): attend(TileBF16Attention<HardwareTiles>.self)
        case (.bf16, .emulator?): attend(TileBF16Attention<EmulatedTiles>.self)
        case (.bf16, nil):
            switch BF16Product.preferred {
            #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
            case .dotInstruction: attend(BF16Attention.self)
            #endif
            case .widened: attend(WidenedBF16Attention.self)
            }
        case (.int8, _): attend(Int8Attention.self)
        }
    }
}

/// How many runs each (sequence, key/value head) pair's queries split into. One when the pairs
/// share out evenly or are many; otherwise enough that the tasks do: EmbeddingGemma (one
/// key/value head) at batch 1 on 2 threads attended on one thread while the other waited.
/// Each run packs its K and V again (n · d beside the run's share of the n² · d products).
func queryParts(pairs: Int, threads: Int) -> Int {
    guard threads > 1, pairs % threads != 0, pairs < 4 * threads else { return 1 }
    var (a, b) = (pairs, threads)
    while b != 0 { (a, b) = (b, a % b) }
    return threads / a
}

/// Run `part` of `parts` of a sequence's n queries: whole query blocks, the blocks shared out as
/// evenly as they go (some runs are empty when the sequence has fewer blocks than parts).
func queryRun(_ part: Int, of parts: Int, length n: Int) -> Range<Int> {
    let blocks = (n + attentionQueryBlock - 1) / attentionQueryBlock
    let first = blocks * part / parts, last = blocks * (part + 1) / parts
    return min(n, first * attentionQueryBlock)..<min(n, last * attentionQueryBlock)
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
    /// c[rows × columns] (+)= a[rows × depth] · b[depth × columns], columns a multiple of 16,
    /// strides in elements: both products. The vector tiles of `attentionGEMM`, unless the
    /// arithmetic runs on a matrix unit (`TileBF16Attention`).
    static func product(a: UnsafePointer<Scalar>, lda: Int, b: UnsafePointer<Scalar>, ldb: Int, depth: Int,
                        c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, columns: Int, accumulate: Bool)
    /// o[rows × dPad] += P·V for a probability block as `probabilities` gave it and V's packed rows.
    static func addProducts(_ p: UnsafePointer<Scalar>, ldp: Int, depth: Int, values: UnsafePointer<Scalar>,
                            into o: UnsafeMutablePointer<Float>, rows: Int, _ scratch: AttentionScratch)
}

extension AttentionArithmetic {
    /// Float products are scores already.
    @inline(__always)
    static func finishScores(_ scores: UnsafeMutablePointer<Float>, ld: Int, rows: Int, cols: Int, firstKey: Int,
                             _ scratch: AttentionScratch) {}

    @inline(__always)
    static func product(a: UnsafePointer<Scalar>, lda: Int, b: UnsafePointer<Scalar>, ldb: Int, depth: Int,
                        c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, columns: Int, accumulate: Bool) {
        attentionGEMM(Self.self, a: a, lda: lda, b: b, ldb: ldb, depth: depth, c: c, ldc: ldc, rows: rows, columns: columns,
                      accumulate: accumulate)
    }

    /// Float products accumulate into the output rows directly.
    @inline(__always)
    static func addProducts(_ p: UnsafePointer<Scalar>, ldp: Int, depth: Int, values: UnsafePointer<Scalar>,
                            into o: UnsafeMutablePointer<Float>, rows: Int, _ scratch: AttentionScratch) {
        let dPad = scratch.paddedHeadDim
        product(a: p, lda: ldp, b: values, ldb: dPad, depth: depth, c: o, ldc: dPad, rows: rows, columns: dPad, accumulate: true)
    }
}

/// out[n × d] (row stride ldo) = softmax(q·kᵀ · scale)·v for one sequence of n tokens and one
/// head, the products in `A`'s arithmetic: q, k, v point at the head's first column of its
/// first token, rows `ld` floats apart. `bias`: scores added to Q·Kᵀ (a relative position
/// bias's head, or a pairwise matrix). `window`: the keys each query sees; the others are left out.
func attendHead<A: AttentionArithmetic>(_: A.Type, q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>,
                                        ld: Int, n: Int, scale: Float, bias: ScoreBias? = nil,
                                        window: AttentionWindow = .all, into out: UnsafeMutablePointer<Float>, ldo: Int,
                                        _ scratch: AttentionScratch) {
    precondition(n <= scratch.maxLength && n <= bias?.span ?? n)
    A.withPackedKeysAndValues(k: k, v: v, ld: ld, n: n, scratch) { keysT, values in
        attendPacked(A.self, q: q, ld: ld, n: n, scale: scale, bias: bias, window: window, queryRows: 0..<n,
                     keysT: keysT, values: values, into: out, ldo: ldo, scratch)
    }
}

/// `attendHead` with BF16 products, by `product`'s arithmetic (the same results either way).
func attendHead(bf16 product: BF16Product, q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>,
                ld: Int, n: Int, scale: Float, bias: ScoreBias? = nil,
                window: AttentionWindow = .all, into out: UnsafeMutablePointer<Float>, ldo: Int, _ scratch: AttentionScratch) {
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

/// attendHead once Kᵀ and V are packed: query blocks × key blocks with the online softmax, for
/// the query rows `queryRows` (from a multiple of the query block; only their output rows are written).
@inline(__always)
func attendPacked<A: AttentionArithmetic>(_: A.Type, q: UnsafePointer<Float>, ld: Int, n: Int, scale: Float,
                                                  bias: ScoreBias?, window: AttentionWindow, queryRows: Range<Int>, keysT: UnsafePointer<A.Scalar>, values: UnsafePointer<A.Scalar>,
                                                  into out: UnsafeMutablePointer<Float>, ldo: Int, _ scratch: AttentionScratch) {
    let d = scratch.headDim, dPad = scratch.paddedHeadDim, nPad = roundUp16(n)
    let scores = scratch.scores, o = scratch.output, rowMax = scratch.rowMax, rowSum = scratch.rowSum
    let blockMax = scratch.blockMax
    let ldS = attentionKeyBlock
    // Distances beyond the sequence are the sequence: no overflow in the sums below.
    let before = min(window.before, n), after = min(window.after, n)
    let scale2 = scale * 1.44269504088896341  // log2 e
    for q0 in stride(from: queryRows.lowerBound, to: queryRows.upperBound, by: attentionQueryBlock) {
        let rows = min(attentionQueryBlock, queryRows.upperBound - q0)
        for r in 0..<rows { rowMax[r] = -.infinity; rowSum[r] = 0 }
        o.update(repeating: 0, count: rows * dPad)
        let (queries, ldq, qSteps) = A.queries(q + q0 * ld, ld: ld, rows: rows, scratch)
        // The keys some query of the block sees: all, or from `before` keys back of its first row
        // to `after` keys ahead of its last, from a multiple of 16 (the tiles read Kᵀ in 16-key
        // steps up to nPad; BF16 pairs V's rows).
        let firstKey = max(0, q0 - before) & ~15, endKey = min(n, q0 + rows + after)
        let windowed = firstKey > 0 || endKey < n || before < n - 1 || after < n - 1
        for k0 in stride(from: firstKey, to: endKey, by: attentionKeyBlock) {
            let cols = min(attentionKeyBlock, endKey - k0)
            // S[rows × cols] = Q_block · K_blockᵀ.
            A.product(a: queries, lda: ldq, b: keysT + k0, ldb: nPad, depth: qSteps,
                      c: scores, ldc: ldS, rows: rows, columns: roundUp16(cols), accumulate: false)
            A.finishScores(scores, ld: ldS, rows: rows, cols: cols, firstKey: k0, scratch)
            // Online softmax: P = e^(S·scale − m_new) in place, l and the output rows rescaled.
            // In powers of 2 (m in units of log2 e), which saves exp its range reduction.
            // The columns query r sees: [lo, hi) (all of them without a window).
            @inline(__always) func seen(_ r: Int) -> Range<Int> {
                let lo = windowed ? min(cols, max(0, q0 + r - before - k0)) : 0
                return lo..<(windowed ? max(lo, min(cols, q0 + r + after + 1 - k0)) : cols)
            }
            // Every row's new maximum first, then every row's exponentials: a row's exponentials
            // wait on its maximum (a chain of loads, maxima and a tree), which the rows before
            // it now hide.
            for r in 0..<rows {
                let s = scores + r * ldS
                if let bias {
                    let b = bias.row(query: q0 + r, firstKey: k0)
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
