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
// All arithmetic is FP32, whatever the precision of the Linear layers: Q, K and V are the
// float outputs of the QKV projection in every precision.

/// Scratch for `attendHead`, owned by one worker: Kᵀ and V of one head, the score block, the
/// output block and its running maximum and sum.
final class AttentionScratch {
    let maxLength: Int
    let headDim: Int
    let paddedHeadDim: Int
    let keysT, values, scores, output, rowMax, rowSum: UnsafeMutablePointer<Float>
    private let buffers: FloatBuffers

    init(maxLength: Int, headDim: Int) {
        (self.maxLength, self.headDim) = (maxLength, headDim)
        paddedHeadDim = roundUp16(headDim)
        let keys = roundUp16(maxLength)
        buffers = FloatBuffers([headDim * keys, keys * paddedHeadDim, attentionQueryBlock * attentionKeyBlock,
                                attentionQueryBlock * paddedHeadDim, attentionQueryBlock, attentionQueryBlock], zeroed: true)
        let p = buffers.pointers
        (keysT, values, scores, output, rowMax, rowSum) = (p[0], p[1], p[2], p[3], p[4], p[5])
    }
}

/// Queries per block: four 6-row tiles share each load of Kᵀ and V from L2.
let attentionQueryBlock = 24
/// Keys per block: a 24 × 256 score block is 24 KiB, in L1 with the rows of Kᵀ and V it meets.
/// (INT8 MiniLM at 512 tokens, CPU time of a pass: 24 × 256 33.9 ms, 24 × 128 35.5, 12 × 256 35.0,
/// 6 × 512 33.7: within noise of the best, with the smaller score block.)
let attentionKeyBlock = 256

@inline(__always) func roundUp16(_ x: Int) -> Int { (x + 15) & ~15 }

/// out[T × heads·headDim] (row stride ldo) = softmax(Q·Kᵀ/√headDim)·V per sequence and head, for
/// packed Q, K and V whose rows are `ld` floats apart (sequence s: `lengths[s]` rows from row
/// `starts[s]`); the (sequence, head) pairs are split
/// across `threads`, each with its own scratch. BERT's and MobileBERT's self-attention run this.
func multiHeadAttention(q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int,
                        heads: Int, headDim: Int, starts: [Int], lengths: [Int], threads: Int,
                        scratch: [AttentionScratch], into out: UnsafeMutablePointer<Float>, ldo: Int) {
    let scale = 1 / Float(headDim).squareRoot()
    let work = lengths.reduce(0) { $0 + 2 * $1 * $1 * heads * headDim }  // QKᵀ and P·V, all heads
    parallelFor(lengths.count * heads, threads: threads, work: work) { task, worker in
        let s = task / heads, head = task % heads
        let row = starts[s] * ld + head * headDim
        attendHead(q: q + row, k: k + row, v: v + row, ld: ld, n: lengths[s], scale: scale,
                   into: out + starts[s] * ldo + head * headDim, ldo: ldo, scratch[worker])
    }
}

/// out[n × d] (row stride ldo) = softmax(q·kᵀ · scale)·v for one sequence of n tokens and one
/// head: q, k, v point at the head's first column of its first token, rows `ld` floats apart.
func attendHead(q: UnsafePointer<Float>, k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                scale: Float, into out: UnsafeMutablePointer<Float>, ldo: Int, _ scratch: AttentionScratch) {
    let d = scratch.headDim, dPad = scratch.paddedHeadDim, nPad = roundUp16(n)
    precondition(n <= scratch.maxLength)
    let keysT = scratch.keysT, values = scratch.values, scores = scratch.scores
    let o = scratch.output, rowMax = scratch.rowMax, rowSum = scratch.rowSum
    // Kᵀ [d × nPad] and V [nPad × dPad], padding zero (fresh scratch stays zero in the pad).
    for j in 0..<n { (values + j * dPad).update(from: v + j * ld, count: d) }
    for c in 0..<d {
        let row = keysT + c * nPad
        for j in 0..<n { row[j] = k[j * ld + c] }  // written in order: a scatter here cost more than the reads
        for j in n..<nPad { row[j] = 0 }
    }
    let ldS = attentionKeyBlock
    let scale2 = scale * 1.44269504088896341  // log2 e
    for q0 in stride(from: 0, to: n, by: attentionQueryBlock) {
        let rows = min(attentionQueryBlock, n - q0)
        for r in 0..<rows { rowMax[r] = -.infinity; rowSum[r] = 0 }
        o.update(repeating: 0, count: rows * dPad)
        for k0 in stride(from: 0, to: n, by: attentionKeyBlock) {
            let cols = min(attentionKeyBlock, n - k0)
            // S[rows × cols] = Q_block · K_blockᵀ.
            attentionGEMM(a: q + q0 * ld, lda: ld, b: keysT + k0, ldb: nPad, depth: d,
                          c: scores, ldc: ldS, rows: rows, columns: roundUp16(cols), accumulate: false)
            // Online softmax: P = e^(S·scale − m_new) in place, l and the output rows rescaled.
            // In powers of 2 (m in units of log2 e), which saves exp its range reduction.
            for r in 0..<rows {
                let s = scores + r * ldS
                let mOld = rowMax[r]
                let mNew = max(mOld, scoreMaximum(s, count: cols) * scale2)
                for c in 0..<cols { s[c] = exp2OfNonPositive((-mNew).addingProduct(s[c], scale2)) }
                let correction = exp2OfNonPositive(mOld - mNew)  // 0 on the first block (2^-inf)
                rowSum[r] = rowSum[r] * correction + scoreSum(s, count: cols)
                rowMax[r] = mNew
                if k0 > 0 {
                    let row = o + r * dPad
                    for c in 0..<dPad { row[c] *= correction }
                }
            }
            // O_block += P · V_block.
            attentionGEMM(a: scores, lda: ldS, b: values + k0 * dPad, ldb: dPad, depth: cols,
                          c: o, ldc: dPad, rows: rows, columns: dPad, accumulate: true)
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
private func exp2OfNonPositive(_ a: Float) -> Float {
    let x = max(a, -127)
    let magic: Float = 12_582_912  // 1.5 · 2²³
    let shifted = x + magic
    let n = shifted - magic
    let f = x - n
    var p: Float = 1.5252734e-5
    p = Float(1.5403530e-4).addingProduct(p, f)
    p = Float(1.3333558e-3).addingProduct(p, f)
    p = Float(9.6181291e-3).addingProduct(p, f)
    p = Float(5.5504109e-2).addingProduct(p, f)
    p = Float(2.4022651e-1).addingProduct(p, f)
    p = Float(6.9314718e-1).addingProduct(p, f)
    p = Float(1).addingProduct(p, f)
    // 2^n as a float's exponent field: n + 127 in 0...127 (0 below −126 gives 0, as before).
    return p * Float(bitPattern: (shifted.bitPattern &- magic.bitPattern &+ 127) &<< 23)
}

// Reductions of one row of scores: 16 lanes, then a tree across them. (`sum` and `maximum` in
// Elementwise.swift end in a chain of 16 dependent scalar steps, which cost as much here as the
// exponentials: they run once per row and key block.)

@inline(__always)
private func scoreMaximum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var acc = SIMD16<Float>(repeating: -.infinity)
    var i = 0
    while i + 16 <= count { acc = lanewiseMax(acc, UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self)); i += 16 }
    // The tree in scalars: `replacing(with:where:)` on the smaller vectors compiled to lane-by-lane code.
    let a = acc
    let b0 = max(a[0], a[8]), b1 = max(a[1], a[9]), b2 = max(a[2], a[10]), b3 = max(a[3], a[11])
    let b4 = max(a[4], a[12]), b5 = max(a[5], a[13]), b6 = max(a[6], a[14]), b7 = max(a[7], a[15])
    var best = max(max(max(b0, b4), max(b2, b6)), max(max(b1, b5), max(b3, b7)))
    while i < count { best = max(best, x[i]); i += 1 }
    return best
}

@inline(__always)
private func scoreSum(_ x: UnsafePointer<Float>, count: Int) -> Float {
    var acc = SIMD16<Float>()
    var i = 0
    while i + 16 <= count { acc += UnsafeRawPointer(x + i).loadUnaligned(as: SIMD16<Float>.self); i += 16 }
    let a = acc
    let b0 = a[0] + a[8], b1 = a[1] + a[9], b2 = a[2] + a[10], b3 = a[3] + a[11]
    let b4 = a[4] + a[12], b5 = a[5] + a[13], b6 = a[6] + a[14], b7 = a[7] + a[15]
    var total = ((b0 + b4) + (b2 + b6)) + ((b1 + b5) + (b3 + b7))
    while i < count { total += x[i]; i += 1 }
    return total
}

/// C[rows × columns] (+)= A[rows × depth] · B[depth × columns], columns a multiple of 16, in
/// tiles of up to 6 rows × 64 columns.
@inline(__always)
private func attentionGEMM(a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int, depth: Int,
                           c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, columns: Int, accumulate: Bool) {
    var row = 0
    while row < rows {
        let tileRows = min(6, rows - row)
        var column = 0
        while column < columns {
            let vectors = min(4, (columns - column) / 16)
            let tile = AttentionTile(a: a + row * lda, lda: lda, b: b + column, ldb: ldb, depth: depth,
                                     c: c + row * ldc + column, ldc: ldc, accumulate: accumulate)
            withTileRows(tileRows, AttentionTileRows(tile: tile, vectors: vectors))
            column += 16 * vectors
        }
        row += tileRows
    }
}

/// The tile for the row count `withTileRows` gives, then for its count of vectors.
private struct AttentionTileRows: TileRowsBody {
    let tile: AttentionTile
    let vectors: Int
    @inline(__always)
    func callAsFunction<Rows: TileRowCount>(_: Rows.Type) { withTileRows(vectors, AttentionTileVectors<Rows>(tile: tile)) }
}

private struct AttentionTileVectors<Rows: TileRowCount>: TileRowsBody {
    let tile: AttentionTile
    @inline(__always)
    func callAsFunction<Vectors: TileRowCount>(_: Vectors.Type) { tile.run(Rows.self, Vectors.self) }
}

/// One tile of `attentionGEMM`: `Rows` rows × `Vectors` 16-lane vectors, kept in registers over
/// the whole depth.
private struct AttentionTile {
    let a: UnsafePointer<Float>
    let lda: Int
    let b: UnsafePointer<Float>
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
            let w0 = w.loadUnaligned(as: SIMD16<Float>.self)
            let w1 = vectors > 1 ? w.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self) : .zero
            let w2 = vectors > 2 ? w.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self) : .zero
            let w3 = vectors > 3 ? w.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self) : .zero
            @inline(__always) func step(_ acc: inout FloatTileRow, _ row: Int) {
                let x = SIMD16<Float>(repeating: a[row * lda + i])
                acc.v0.addProduct(x, w0)
                if vectors > 1 { acc.v1.addProduct(x, w1) }
                if vectors > 2 { acc.v2.addProduct(x, w2) }
                if vectors > 3 { acc.v3.addProduct(x, w3) }
            }
            forEachRow(step)
        }
        forEachRow { acc, row in store(acc, row) }
    }
}
