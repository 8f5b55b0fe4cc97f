import Dispatch

// Weight-only INT8: FP32 activations times INT8 weights, for layers whose activations lose
// too much accuracy when quantised. It reads the same packed panels as the INT8 kernel,
// turns each weight vector into floats in registers (shared by the tile's 5 rows) and
// accumulates with FMAs; the per-channel scale is applied once, at the end.

/// 64 float lanes: a tile row's accumulators, or one K-step of a panel's weights.
struct FloatTileRow {
    var v0 = SIMD16<Float>(), v1 = SIMD16<Float>(), v2 = SIMD16<Float>(), v3 = SIMD16<Float>()

    init() {}

    /// Byte t of every lane of a packed quad, as floats. Adding 0x4B40_0000 to a small
    /// integer gives the bits of 12582912 + it, so a subtraction finishes the conversion
    /// (SIMD16<Float>(SIMD16<Int32>) is not inlined, and this is cheaper than a call).
    @inline(__always)
    init(weightsOf quad: Int32TileRow, step t: Int) {
        let bytes = quad.signedBytes(t)
        let magic = SIMD16<Float>(repeating: 12_582_912)
        @inline(__always) func float(_ v: SIMD16<Int32>) -> SIMD16<Float> {
            unsafeBitCast(v &+ 0x4B40_0000, to: SIMD16<Float>.self) - magic
        }
        (v0, v1, v2, v3) = (float(bytes.v0), float(bytes.v1), float(bytes.v2), float(bytes.v3))
    }

    /// self += x · w lane-wise. `addingProduct` is one vfmadd per vector; `+` and `*` on
    /// SIMD16<Float> are lane loops that LLVM re-vectorised only partly here (20× slower).
    /// Without FMA in the target (SWIFTBERT_PORTABLE builds) this becomes libm fmaf calls:
    /// correct, but slow.
    @inline(__always)
    mutating func accumulate(_ x: Float, _ w: FloatTileRow) {
        let broadcast = SIMD16<Float>(repeating: x)
        v0 = v0.addingProduct(broadcast, w.v0)
        v1 = v1.addingProduct(broadcast, w.v1)
        v2 = v2.addingProduct(broadcast, w.v2)
        v3 = v3.addingProduct(broadcast, w.v3)
    }
}

/// y[r, n] = acc[r, n] · scale[n] + bias[n], for the valid `columns` of a panel.
struct WeightOnlyTileEpilogue {
    let y: UnsafeMutablePointer<Float>
    let ldy: Int
    let columnScales: UnsafePointer<Float>
    let bias: UnsafePointer<Float>?
    let columns: Range<Int>

    @inline(__always)
    func store(_ acc: FloatTileRow, row: Int) {
        withUnsafeBytes(of: acc) { lanes in
            let out = y + row * ldy
            @inline(__always) func lane(_ j: Int) -> Float { lanes.load(fromByteOffset: j * 4, as: Float.self) }
            if let bias {
                for j in columns { out[j] = lane(j) * columnScales[j] + bias[j] }
            } else {
                for j in columns { out[j] = lane(j) * columnScales[j] }
            }
        }
    }
}

/// One tile: `Rows.rows` (1...5) rows of x (stride `ldx` = K) times one packed panel.
@inline(never)
private func weightOnlyTile<Rows: TileRowCount>(_: Rows.Type, x x0: UnsafePointer<Float>, ldx: Int,
                                                panel: UnsafeRawPointer, k: Int, epilogue: WeightOnlyTileEpilogue) {
    let rows = Rows.rows
    let x1 = x0 + ldx, x2 = x1 + ldx, x3 = x2 + ldx, x4 = x3 + ldx
    var acc0 = FloatTileRow(), acc1 = FloatTileRow(), acc2 = FloatTileRow()
    var acc3 = FloatTileRow(), acc4 = FloatTileRow()
    @inline(__always) func step(_ packed: Int32TileRow, quad: Int, _ t: Int) {
        let w = FloatTileRow(weightsOf: packed, step: t)
        let kk = quad * Int8PanelLayout.kGroup + t
        acc0.accumulate(x0[kk], w)
        if rows > 1 { acc1.accumulate(x1[kk], w) }
        if rows > 2 { acc2.accumulate(x2[kk], w) }
        if rows > 3 { acc3.accumulate(x3[kk], w) }
        if rows > 4 { acc4.accumulate(x4[kk], w) }
    }
    let fullQuads = k / Int8PanelLayout.kGroup
    for quad in 0..<fullQuads {
        let packed = Int32TileRow(loadingQuad: panel + quad * Int8PanelLayout.quadBytes)
        step(packed, quad: quad, 0); step(packed, quad: quad, 1)
        step(packed, quad: quad, 2); step(packed, quad: quad, 3)
    }
    // x has exactly k columns: the last, partial quad must not read past them.
    if k % Int8PanelLayout.kGroup > 0 {
        let packed = Int32TileRow(loadingQuad: panel + fullQuads * Int8PanelLayout.quadBytes)
        for t in 0..<(k % Int8PanelLayout.kGroup) { step(packed, quad: fullQuads, t) }
    }
    epilogue.store(acc0, row: 0)
    if rows > 1 { epilogue.store(acc1, row: 1) }
    if rows > 2 { epilogue.store(acc2, row: 2) }
    if rows > 3 { epilogue.store(acc3, row: 3) }
    if rows > 4 { epilogue.store(acc4, row: 4) }
}

/// Runs the weight-only tile kernel specialised for `rows` (1...5).
func weightOnlyTileKernel(rows: Int, x: UnsafePointer<Float>, ldx: Int, panel: UnsafeRawPointer,
                          k: Int, epilogue: WeightOnlyTileEpilogue) {
    switch rows {
    case 5: weightOnlyTile(TileRows5.self, x: x, ldx: ldx, panel: panel, k: k, epilogue: epilogue)
    case 4: weightOnlyTile(TileRows4.self, x: x, ldx: ldx, panel: panel, k: k, epilogue: epilogue)
    case 3: weightOnlyTile(TileRows3.self, x: x, ldx: ldx, panel: panel, k: k, epilogue: epilogue)
    case 2: weightOnlyTile(TileRows2.self, x: x, ldx: ldx, panel: panel, k: k, epilogue: epilogue)
    default: weightOnlyTile(TileRows1.self, x: x, ldx: ldx, panel: panel, k: k, epilogue: epilogue)
    }
}

/// y[m, N] = x[m, K] · dequant(W)ᵀ + bias with FP32 activations and INT8 weights, for output
/// channels `columns` (all by default). No workspace: nothing is quantised per call.
public func int8WeightOnlyLinear(_ x: UnsafePointer<Float>, m: Int, weights: PackedInt8Matrix, bias: UnsafePointer<Float>?,
                                 output y: UnsafeMutablePointer<Float>, columns: Range<Int>? = nil) {
    let columns = columns ?? 0..<weights.rows
    precondition(columns.lowerBound >= 0 && columns.upperBound <= weights.rows, "columns \(columns) outside 0..<\(weights.rows)")
    guard m > 0, !columns.isEmpty else { return }
    let k = weights.cols
    let packed = weights.packed.baseAddress!
    weights.paddedScales.withUnsafeBufferPointer { columnScales in
        forEachPanelTile(rows: m, tileRows: int8TileRows, columns: columns, panelWidth: Int8PanelLayout.panelWidth,
                         panelBytes: weights.panelStride) { row, rows, panel, inPanel in
            let first = panel * Int8PanelLayout.panelWidth
            let epilogue = WeightOnlyTileEpilogue(
                y: y + row * weights.rows + first, ldy: weights.rows, columnScales: columnScales.baseAddress! + first,
                bias: bias.map { $0 + first }, columns: inPanel)
            weightOnlyTileKernel(rows: rows, x: x + row * k, ldx: k, panel: packed + panel * weights.panelStride,
                                 k: k, epilogue: epilogue)
        }
    }
}

/// `int8WeightOnlyLinear` with the output channels split into whole panels across `threads`.
public func int8WeightOnlyLinear(_ x: UnsafePointer<Float>, m: Int, weights: PackedInt8Matrix, bias: UnsafePointer<Float>?,
                                 output y: UnsafeMutablePointer<Float>, threads: Int) {
    let parts = Int8PanelLayout.usefulThreads(rows: weights.rows, threads: threads)
    guard parts > 1 else {
        return int8WeightOnlyLinear(x, m: m, weights: weights, bias: bias, output: y)
    }
    DispatchQueue.concurrentPerform(iterations: parts) { part in
        let columns = Int8PanelLayout.threadBlock(part, of: parts, rows: weights.rows)
        int8WeightOnlyLinear(x, m: m, weights: weights, bias: bias, output: y, columns: columns)
    }
}
