// DeBERTa's disentangled attention adds two scores to Q·Kᵀ for each query i and key j of a head
// (transformers' disentangled_attention_bias), both read at the row r(i − j) of a table of
// relative position embeddings that each layer projects with its own key and query weights:
//
//     content-to-position  c2p[i, j] = Q_i · Kpos[r(i − j)]
//     position-to-content  p2c[i, j] = K_j · Qpos[r(i − j)]
//
// transformers multiplies Q (and K) by every row of the table, then gathers. Here only the rows a
// sequence of n tokens can reach, r(−(n − 1)) … r(n − 1), are multiplied: 2n − 1 rows at most,
// fewer once distances share log buckets.

/// One head's projected relative-position table, [rows × d]: a layer's position keys (for c2p)
/// or position queries (for p2c). The products against it are a Linear layer's product with the
/// table as weights, on the Linear kernels: this build's FP32 kernel, or, for a BF16 model, the
/// BF16 one (the table and the rows multiplied rounded to BF16, as attention's Q·Kᵀ is). With
/// 2n − 1 table rows against Q·Kᵀ's n keys, c2p and p2c are about twice the multiply-adds of Q·Kᵀ
/// and P·V together.
public final class PositionTable: @unchecked Sendable {
    /// Table rows (2 · span).
    public let rows: Int
    let weights: any LinearWeights
    /// The products have no bias.
    private let zeros: UnsafeMutablePointer<Float>
    /// The copy `weights` points at where it keeps none of its own (FP32 in portable builds), else nil.
    private let storage: UnsafeMutablePointer<Float>?

    /// Row r's d floats are at table + r · ld. `bf16`: multiply in BF16 (a BF16 model).
    public init(_ table: UnsafePointer<Float>, rows: Int, headDim d: Int, ld: Int, bf16: Bool) {
        self.rows = rows
        let copy = UnsafeMutablePointer<Float>.allocate(capacity: rows * d)
        for r in 0..<rows { (copy + r * d).update(from: table + r * ld, count: d) }
        // PackedBF16Matrix, and the FP32 micro-kernel where the build has it, keep copies of their own.
        var copied = bf16
        weights = bf16 ? PackedBF16Matrix(copy, n: rows, k: d) : MappedFloatMatrix(copy, n: rows, k: d).forFP32Kernel { copied = true }
        if copied { copy.deallocate() }
        storage = copied ? nil : copy
        zeros = .allocate(capacity: rows)
        zeros.initialize(repeating: 0, count: rows)
    }

    deinit {
        storage?.deallocate()
        zeros.deallocate()
    }

    /// products[t · rows + r] = x_t · table[r] for the n tokens of x (rows `ld` apart) and the
    /// table rows in `reached`; the other columns of products are not written.
    func products(_ x: UnsafePointer<Float>, ld: Int, n: Int, reached: Range<Int>, into products: UnsafeMutablePointer<Float>) {
        let d = weights.k
        withUnsafeTemporaryAllocation(of: Float.self, capacity: n * d) { packed in
            let rowsOfX = packed.baseAddress!
            for t in 0..<n { (rowsOfX + t * d).update(from: x + t * ld, count: d) }
            var rounded: BF16Activations? = nil
            if weights.activations == .bf16 {
                rounded = BF16Activations()
                rounded!.round(rowsOfX, m: n, k: d)
            }
            weights.multiply(LinearInput(floats: rowsOfX, bf16: rounded), bias: zeros, into: products, rows: 0..<n,
                             columns: reached, finished: nil)
        }
    }
}

/// scores[i · n + j] = c2p[i, j] + p2c[i, j] for one sequence of n tokens and one head, in
/// unscaled score units (the softmax scale applies to the sum with Q·Kᵀ). `queries` and `keys`
/// point at the head's first column of the sequence's first token, rows `ld` apart;
/// `positionKeys` (c2p) and `positionQueries` (p2c) are the head's tables, nil when the model
/// leaves that score out. `tableRow` points at the entry of distance 0 of r, valid from −(n − 1)
/// to n − 1, non-decreasing.
public func disentangledScores(queries: UnsafePointer<Float>, keys: UnsafePointer<Float>, ld: Int, n: Int,
                               positionKeys: PositionTable?, positionQueries: PositionTable?,
                               tableRow: UnsafePointer<Int32>, into scores: UnsafeMutablePointer<Float>) {
    let reached = Int(tableRow[-(n - 1)])..<(Int(tableRow[n - 1]) + 1)
    /// [n × table rows]: each of the sequence's tokens (`x`: its queries or keys) against the
    /// reachable table rows.
    func products(_ x: UnsafePointer<Float>, _ table: PositionTable) -> UnsafeMutablePointer<Float> {
        let products = UnsafeMutablePointer<Float>.allocate(capacity: n * table.rows)
        table.products(x, ld: ld, n: n, reached: reached, into: products)
        return products
    }
    let contentToPosition = positionKeys.map { products(queries, $0) }
    let positionToContent = positionQueries.map { products(keys, $0) }
    defer { contentToPosition?.deallocate(); positionToContent?.deallocate() }
    for i in 0..<n {
        let row = scores + i * n
        for j in 0..<n { row[j] = 0 }
        if let c2p = contentToPosition, let table = positionKeys {
            let products = c2p + i * table.rows
            for j in 0..<n { row[j] += products[Int(tableRow[i - j])] }
        }
        if let p2c = positionToContent, let table = positionQueries {
            for j in 0..<n { row[j] += p2c[j * table.rows + Int(tableRow[i - j])] }
        }
    }
}
