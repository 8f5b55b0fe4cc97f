// The Linear layers on tiles: the blocking, threading and epilogues stay in Swift; a C call
// computes a block of rows × a run of 64-channel panels over the whole k (TileBackend's
// product, with the panels as b: 64 lanes a row, a panel's bytes apart).
//
// The weights are the packed matrices the vector kernels read: a tile of weights is 16 K-pair
// (or K-quad) rows of a panel, 16 channels wide, 256 bytes apart. So a model keeps one packed
// copy per precision, whichever unit runs it.

/// Runs `block` over `rows` × the panels of `columns` and stores each panel's rows through the
/// same epilogue as the vector kernels (the same scaling, bias and partial panels).
///
/// The order is the vector kernels' (`panelGEMM`): with few rows, panels outermost; with more,
/// panels in groups of about `l2PanelGroupBytes` of weights (they stay in L2), 32-row blocks over
/// each group, and the group's panels innermost, so a block's activations stay in L1 while every
/// panel of the group runs over them. Panels outermost read all of a call's activations again
/// for every panel: up to 512 rows a thread (an encoder chunk), 384 KiB of BF16 activations at
/// k = 384 and 1.5 MiB at 1,536, from L2 at best. Measured gain at 1x512: about 5 %.
///
/// One call covers as many panels as keep its outputs within `TileBackend.callOutputBytes`
/// (4 panels of a 32-row block): each call loads the tile configuration and releases the tiles,
/// about 75 ns, against about 600 ns for a 32 × 64 block at k = 384 (measured on Emerald Rapids,
/// docs/amx.md).
///
/// `block(row, count, firstPanel, panels, out, ldOut)` computes rows `row ..< row + count` of
/// `panels` panels from `firstPanel` into `out`, rows `ldOut` elements apart.
@inline(__always)
func tileGEMM<Scalar: SIMDScalar>(rows: Range<Int>, columns: Range<Int>, panelBytes: Int, accumulating _: Scalar.Type,
                                  block: (_ row: Int, _ count: Int, _ firstPanel: Int, _ panels: Int,
                                          _ out: UnsafeMutablePointer<Scalar>, _ ldOut: Int) -> Void,
                                  epilogue: (_ row: Int, _ firstChannel: Int, _ inPanel: Range<Int>) -> TileEpilogue,
                                  finished: FinishedBlock?) {
    guard !rows.isEmpty, !columns.isEmpty else { return }
    let blockRows = TileBackend.blockRows, capacity = TileBackend.callOutputBytes / MemoryLayout<Scalar>.stride
    let panels = (columns.lowerBound / panelWidth)..<((columns.upperBound + panelWidth - 1) / panelWidth)
    @inline(__always) func written(_ first: Int, _ end: Int) -> Range<Int> { columnsWritten(by: first..<end, of: columns) }
    withUnsafeTemporaryAllocation(of: Scalar.self, capacity: capacity) { scratch in
        let out = scratch.baseAddress!
        /// Rows `row ..< row + count` of `chunk`'s panels: one call, then each panel's epilogue.
        @inline(__always) func run(_ row: Int, _ count: Int, _ chunk: Range<Int>) {
            let ldOut = chunk.count * panelWidth
            block(row, count, chunk.lowerBound, chunk.count, out, ldOut)
            for panel in chunk {
                let first = panel * panelWidth, inY = written(panel, panel + 1)
                let store = epilogue(row, first, (inY.lowerBound - first)..<(inY.upperBound - first))
                let outputs = out + (panel - chunk.lowerBound) * panelWidth
                for r in 0..<count {
                    let p = UnsafeRawPointer(outputs + r * ldOut)
                    store.store(TileRow<Scalar>(p.load(as: SIMD16<Scalar>.self), p.load(fromByteOffset: 64, as: SIMD16<Scalar>.self),
                                                p.load(fromByteOffset: 128, as: SIMD16<Scalar>.self),
                                                p.load(fromByteOffset: 192, as: SIMD16<Scalar>.self)), row: r)
                }
            }
        }
        /// body(run) for the runs of `range`'s panels that one call takes for `count` rows: as
        /// many panels as the scratch holds.
        @inline(__always) func calls(rows count: Int, _ range: Range<Int>, _ body: (Range<Int>) -> Void) {
            let perCall = max(1, capacity / (count * panelWidth))
            for first in stride(from: range.lowerBound, to: range.upperBound, by: perCall) {
                body(first..<min(first + perCall, range.upperBound))
            }
        }
        if rows.count <= 2 * blockRows {
            // Every row in each call (the C side runs its 32-row blocks), panels outermost.
            calls(rows: rows.count, panels) { chunk in
                run(rows.lowerBound, rows.count, chunk)
                finished?(rows, written(chunk.lowerBound, chunk.upperBound))
            }
            return
        }
        let perGroup = max(1, l2PanelGroupBytes / panelBytes)
        for groupStart in stride(from: panels.lowerBound, to: panels.upperBound, by: perGroup) {
            let groupEnd = min(groupStart + perGroup, panels.upperBound)
            for row in stride(from: rows.lowerBound, to: rows.upperBound, by: blockRows) {
                let count = min(blockRows, rows.upperBound - row)
                calls(rows: count, groupStart..<groupEnd) { run(row, count, $0) }
                finished?(row..<(row + count), written(groupStart, groupEnd))
            }
        }
    }
}

extension PackedBF16Matrix {
    /// `multiply` on tiles: activations as BF16 pairs (`BF16Activations` keeps them so when it
    /// has a tile backend).
    func multiply(on tiles: TileBackend, _ activations: BF16Activations, bias: UnsafePointer<Float>,
                  into y: UnsafeMutablePointer<Float>, rows: Range<Int>, columns: Range<Int>, finished: FinishedBlock?) {
        let (n, kPairs, panelStride, lanes, pairs, gemm) = (n, kPairs, panelStride, lanes, activations.pairs, tiles.bf16GEMM)
        tileGEMM(rows: rows, columns: columns, panelBytes: panelStride * 4, accumulating: Float.self,
                 block: { row, count, firstPanel, panels, out, ldOut in
                     gemm(pairs + row * kPairs, kPairs * 4, Int32(count), lanes + firstPanel * panelStride, panelWidth * 4,
                          panelStride * 4, Int32(panels * panelWidth), Int32(kPairs), out, ldOut * 4, 0)
                 },
                 epilogue: { row, first, inPanel in
                     TileEpilogue(y: y + row * n + first, ldy: n, scale: .none, bias: bias + first, columns: inPanel)
                 }, finished: finished)
    }
}
