// Weight-only INT8: FP32 activations times INT8 weights, for layers whose activations lose
// too much accuracy when quantised. It reads the same packed panels as the INT8 kernel,
// turns each k of a quad into floats in registers (shared by the tile's 5 rows) and
// accumulates with FMAs; the per-channel scale is applied once, in the epilogue.

extension TileRow where Scalar == Float {
    /// Byte t of every lane of a packed quad, as floats.
    @inline(__always)
    init(weightsOf quad: Int32TileRow, step t: Int) {
        let bytes = quad.signedBytes(t)
        self.init(SIMD16(smallIntegers: bytes.v0), SIMD16(smallIntegers: bytes.v1),
                  SIMD16(smallIntegers: bytes.v2), SIMD16(smallIntegers: bytes.v3))
    }
}

/// One K-quad per load, fed one k at a time; x has exactly k columns, so a last partial
/// quad is a tail of fewer sub-steps (never a read past x).
private struct Int8WeightOnlyKernel: PanelKernel {
    typealias MaximumRows = TileRows5
    static var subSteps: Int { Int8PanelLayout.kGroup }
    let x: UnsafePointer<Float>
    let ldx: Int
    let panel: UnsafeRawPointer
    let k: Int
    var fullLoads: Int { k / Int8PanelLayout.kGroup }
    var tailSubSteps: Int { k % Int8PanelLayout.kGroup }
    var panelStart: UnsafeRawPointer { UnsafeRawPointer(panel) }

    @inline(__always) func load(_ index: Int) -> Int32TileRow {
        Int32TileRow(loadingQuad: panel + index &* Int8PanelLayout.quadBytes)
    }
    @inline(__always) func operand(_ load: Int32TileRow, subStep: Int) -> FloatTileRow {
        FloatTileRow(weightsOf: load, step: subStep)
    }
    @inline(__always) func accumulate(_ acc: inout FloatTileRow, row: Int, load: Int, subStep: Int, _ w: FloatTileRow) {
        acc.accumulate(x[row &* ldx &+ load &* Int8PanelLayout.kGroup &+ subStep], w)
    }
}

extension PackedInt8Matrix {
    /// y[rows, columns] = x[rows] · dequant(W)ᵀ[:, columns] + bias[columns] with FP32 activations,
    /// x [m × k], y [m × n] (all rows unless `rows` says). Nothing is quantised per call.
    /// Disjoint blocks may run on different threads.
    func multiply(_ x: UnsafePointer<Float>, m: Int, bias: UnsafePointer<Float>?, into y: UnsafeMutablePointer<Float>,
                  rows: Range<Int>? = nil, columns: Range<Int>, finished: FinishedBlock? = nil) {
        precondition(columns.lowerBound >= 0 && columns.upperBound <= n, "columns \(columns) outside 0..<\(n)")
        let (n, k, panelStride) = (self.n, self.k, self.panelStride)
        let packed = self.packed.baseAddress!
        paddedScales.withUnsafeBufferPointer { channelScales in
            panelGEMM(rows: rows ?? 0..<m, columns: columns, panelBytes: panelStride,
                      kernel: { row, panel in
                          Int8WeightOnlyKernel(x: x + row * k, ldx: k, panel: packed + panel * panelStride, k: k)
                      },
                      epilogue: { row, first, inPanel in
                          TileEpilogue(y: y + row * n + first, ldy: n, scale: .perChannel(channelScales.baseAddress! + first),
                                       bias: bias.map { $0 + first }, columns: inPanel)
                      }, finished: finished)
        }
    }

}
