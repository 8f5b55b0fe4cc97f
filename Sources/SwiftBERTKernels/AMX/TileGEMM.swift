// The Linear layers on tiles: the blocking, threading and epilogues stay in Swift; a C call
// computes one block of up to 32 rows × one 64-channel panel over the whole k (TileBackend).
//
// The weights are the packed matrices the vector kernels read: a tile of weights is 16 K-pair
// (or K-quad) rows of a panel, 16 channels wide, 256 bytes apart. So a model keeps one packed
// copy per precision, whichever unit runs it.

/// Runs `block` over `rows` × the panels of `columns`, panels outermost (a panel of weights
/// stays in cache while every block of rows runs over it), and stores each block through the
/// same epilogue as the vector kernels: the same scaling, bias and partial panels.
@inline(__always)
func tileGEMM<Scalar: SIMDScalar>(rows: Range<Int>, columns: Range<Int>, accumulating _: Scalar.Type,
                                  block: (_ row: Int, _ count: Int, _ panel: Int, _ out: UnsafeMutablePointer<Scalar>) -> Void,
                                  epilogue: (_ row: Int, _ firstChannel: Int, _ inPanel: Range<Int>) -> TileEpilogue,
                                  finished: FinishedBlock?) {
    guard !rows.isEmpty, !columns.isEmpty else { return }
    let blockRows = TileBackend.blockRows
    withUnsafeTemporaryAllocation(of: Scalar.self, capacity: blockRows * panelWidth) { scratch in
        let out = scratch.baseAddress!
        for panel in (columns.lowerBound / panelWidth)..<((columns.upperBound + panelWidth - 1) / panelWidth) {
            let first = panel * panelWidth
            let written = max(columns.lowerBound, first)..<min(columns.upperBound, first + panelWidth)
            for row in stride(from: rows.lowerBound, to: rows.upperBound, by: blockRows) {
                let count = min(blockRows, rows.upperBound - row)
                block(row, count, panel, out)
                let store = epilogue(row, first, (written.lowerBound - first)..<(written.upperBound - first))
                for r in 0..<count {
                    let p = UnsafeRawPointer(out + r * panelWidth)
                    store.store(TileRow<Scalar>(p.load(as: SIMD16<Scalar>.self), p.load(fromByteOffset: 64, as: SIMD16<Scalar>.self),
                                                p.load(fromByteOffset: 128, as: SIMD16<Scalar>.self),
                                                p.load(fromByteOffset: 192, as: SIMD16<Scalar>.self)), row: r)
                }
            }
            finished?(rows, written)
        }
    }
}

extension PackedBF16Matrix {
    /// `multiply` on tiles: activations as BF16 pairs (`BF16Activations` keeps them so when it
    /// has a tile backend).
    func multiply(on tiles: TileBackend, _ activations: BF16Activations, bias: UnsafePointer<Float>,
                  into y: UnsafeMutablePointer<Float>, rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?) {
        let (n, kPairs, panelStride, lanes, pairs, block) = (n, kPairs, panelStride, lanes, activations.pairs, tiles.bf16Block)
        tileGEMM(rows: rows, columns: columns, accumulating: Float.self,
                 block: { row, count, panel, out in
                     block(pairs + row * kPairs, kPairs * 4, Int32(count), lanes + panel * panelStride, Int32(kPairs), out)
                 },
                 epilogue: { row, first, inPanel in
                     TileEpilogue(y: y + row * n + first, ldy: n, scale: .none, bias: bias + first, columns: inPanel)
                 }, finished: finished)
    }
}
