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

/// scores[i · n + j] = c2p[i, j] + p2c[i, j] for one sequence of n tokens and one head, in
/// unscaled score units (the softmax scale applies to the sum with Q·Kᵀ). `queries` and `keys`
/// point at the head's first column of the sequence's first token, rows `ld` apart;
/// `positionKeys` (c2p) and `positionQueries` (p2c) at the head's first column of table row 0,
/// rows `positionLD` apart, nil when the model leaves that score out. `tableRow` points at the
/// entry of distance 0 of r, valid from −(n − 1) to n − 1, non-decreasing.
public func disentangledScores(queries: UnsafePointer<Float>, keys: UnsafePointer<Float>, ld: Int, n: Int, headDim d: Int,
                               positionKeys: UnsafePointer<Float>?, positionQueries: UnsafePointer<Float>?, positionLD: Int,
                               tableRow: UnsafePointer<Int32>, into scores: UnsafeMutablePointer<Float>) {
    let first = Int(tableRow[-(n - 1)]), rows = Int(tableRow[n - 1]) - first + 1
    /// [n × rows]: each of the sequence's tokens (`x`: its queries or keys) against the reachable
    /// table rows.
    func products(_ x: UnsafePointer<Float>, _ positions: UnsafePointer<Float>) -> UnsafeMutablePointer<Float> {
        let products = UnsafeMutablePointer<Float>.allocate(capacity: n * rows)
        matmulTransposedB(x, lda: ld, positions + first * positionLD, ldb: positionLD, products, ldc: rows, m: n, n: rows, k: d)
        return products
    }
    let contentToPosition = positionKeys.map { products(queries, $0) }
    let positionToContent = positionQueries.map { products(keys, $0) }
    defer { contentToPosition?.deallocate(); positionToContent?.deallocate() }
    for i in 0..<n {
        let row = scores + i * n
        for j in 0..<n { row[j] = 0 }
        if let c2p = contentToPosition {
            let products = c2p + i * rows - first
            for j in 0..<n { row[j] += products[Int(tableRow[i - j])] }
        }
        if let p2c = positionToContent {
            for j in 0..<n { row[j] += p2c[j * rows + Int(tableRow[i - j]) - first] }
        }
    }
}
