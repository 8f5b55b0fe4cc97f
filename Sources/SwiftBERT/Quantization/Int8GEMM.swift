import Dispatch

/// Caller-owned scratch for INT8 GEMM: the activations of one call, quantised per row.
/// Reuse one per thread of the caller; it only allocates when a call needs more room than
/// any before it. After `quantizeRows`, several threads may read it at once (int8GEMM on
/// disjoint column ranges).
public final class Int8Workspace: @unchecked Sendable {
    /// Rows and columns (K) of the activations last quantised into it.
    public private(set) var rows = 0
    public private(set) var cols = 0
    /// Row stride of `quantized`: K padded to whole quads.
    private(set) var stride = 0
    /// Activations as unsigned bytes q + 128, q = round(x · 127 / max|row|); padding k are 128 (q = 0).
    private(set) var quantized: UnsafeMutablePointer<UInt8>
    /// Per row: x ≈ q · rowScales[row].
    private(set) var rowScales: UnsafeMutablePointer<Float>
    private var byteCapacity: Int
    private var rowCapacity: Int

    /// Optionally sized up front for the largest call (rows × cols activations).
    public init(rows: Int = 0, cols: Int = 0) {
        byteCapacity = max(1, rows * Int8PanelLayout.paddedCols(cols))
        rowCapacity = max(1, rows)
        quantized = .allocate(capacity: byteCapacity)
        rowScales = .allocate(capacity: rowCapacity)
    }

    deinit {
        quantized.deallocate()
        rowScales.deallocate()
    }

    /// Makes room for rows × cols activations and records the shape.
    func prepare(rows: Int, cols: Int) {
        let stride = Int8PanelLayout.paddedCols(cols)
        if rows * stride > byteCapacity {
            quantized.deallocate()
            byteCapacity = rows * stride
            quantized = .allocate(capacity: byteCapacity)
        }
        if rows > rowCapacity {
            rowScales.deallocate()
            rowCapacity = rows
            rowScales = .allocate(capacity: rowCapacity)
        }
        (self.rows, self.cols, self.stride) = (rows, cols, stride)
    }
}

/// Quantises activations x[m, k] per row (per token) into the workspace, once per call;
/// the result serves every column block of `int8GEMM`.
public func quantizeRows(_ x: UnsafePointer<Float>, m: Int, k: Int, into workspace: Int8Workspace) {
    precondition(m >= 0 && k > 0, "quantizeRows needs m ≥ 0 and k > 0")
    workspace.prepare(rows: m, cols: k)
    quantizeRows(x, rows: 0..<m, into: workspace)
}

/// Quantises rows `rows` of x into an already prepared workspace (lets threads share the work).
func quantizeRows(_ x: UnsafePointer<Float>, rows: Range<Int>, into workspace: Int8Workspace) {
    let k = workspace.cols, stride = workspace.stride
    for row in rows {
        let input = x + row * k
        let output = workspace.quantized + row * stride
        let maxAbs = SymmetricInt8.maxAbs(input, count: k)
        let reciprocal = SymmetricInt8.reciprocalScale(maxAbs: maxAbs)
        workspace.rowScales[row] = maxAbs / 127
        for i in 0..<k {
            output[i] = UInt8(truncatingIfNeeded: SymmetricInt8.quantize(input[i], reciprocal: reciprocal) &+ 128)
        }
        for i in k..<stride { output[i] = 128 }
    }
}

/// y[:, n] = dequant(activations · Wᵀ)[:, n] + bias[n] for n in `columns` (all by default),
/// from activations already quantised into `workspace`. y is [m, weights.rows] row-major.
/// Disjoint column ranges may run on different threads with the same workspace.
public func int8GEMM(_ workspace: Int8Workspace, weights: PackedInt8Matrix, bias: UnsafePointer<Float>?,
                     output y: UnsafeMutablePointer<Float>, columns: Range<Int>? = nil) {
    let columns = columns ?? 0..<weights.rows
    precondition(workspace.cols == weights.cols, "activations have \(workspace.cols) features, weights \(weights.cols)")
    precondition(columns.lowerBound >= 0 && columns.upperBound <= weights.rows, "columns \(columns) outside 0..<\(weights.rows)")
    let m = workspace.rows
    guard m > 0, !columns.isEmpty else { return }
    let packed = weights.packed.baseAddress!
    weights.paddedScales.withUnsafeBufferPointer { columnScales in
        weights.shiftCorrections.withUnsafeBufferPointer { corrections in
            forEachPanelTile(rows: m, tileRows: int8TileRows, columns: columns, panelWidth: Int8PanelLayout.panelWidth,
                             panelBytes: weights.panelStride) { row, rows, panel, inPanel in
                let first = panel * Int8PanelLayout.panelWidth
                let epilogue = Int8TileEpilogue(
                    y: y + row * weights.rows + first, ldy: weights.rows, rowScales: workspace.rowScales + row,
                    columnScales: columnScales.baseAddress! + first, corrections: corrections.baseAddress! + first,
                    bias: bias.map { $0 + first }, columns: inPanel)
                int8TileKernel(rows: rows, activations: workspace.quantized + row * workspace.stride,
                               lda: workspace.stride, panel: packed + panel * weights.panelStride,
                               kQuads: weights.kQuads, epilogue: epilogue)
            }
        }
    }
}

/// y[m, N] = dequant(quant(x[m, K]) · Wᵀ) + bias: a Linear layer with INT8 weights and
/// activations quantised per row on the fly. `columns` restricts the output channels
/// computed (for callers that split N themselves; they should call `quantizeRows` once and
/// `int8GEMM` per block instead of this, which quantises on every call).
public func int8Linear(_ x: UnsafePointer<Float>, m: Int, weights: PackedInt8Matrix, bias: UnsafePointer<Float>?,
                       output y: UnsafeMutablePointer<Float>, columns: Range<Int>? = nil, workspace: Int8Workspace) {
    quantizeRows(x, m: m, k: weights.cols, into: workspace)
    int8GEMM(workspace, weights: weights, bias: bias, output: y, columns: columns)
}

/// `int8Linear` on `threads` threads: rows are quantised in parallel, then the output
/// channels are split into whole panels, one contiguous block per thread.
public func int8LinearThreaded(_ x: UnsafePointer<Float>, m: Int, weights: PackedInt8Matrix, bias: UnsafePointer<Float>?,
                               output y: UnsafeMutablePointer<Float>, workspace: Int8Workspace, threads: Int) {
    let parts = Int8PanelLayout.usefulThreads(rows: weights.rows, threads: threads)
    guard parts > 1 else {
        return int8Linear(x, m: m, weights: weights, bias: bias, output: y, workspace: workspace)
    }
    workspace.prepare(rows: m, cols: weights.cols)
    DispatchQueue.concurrentPerform(iterations: parts) { part in
        quantizeRows(x, rows: (m * part / parts)..<(m * (part + 1) / parts), into: workspace)
    }
    DispatchQueue.concurrentPerform(iterations: parts) { part in
        let columns = Int8PanelLayout.threadBlock(part, of: parts, rows: weights.rows)
        int8GEMM(workspace, weights: weights, bias: bias, output: y, columns: columns)
    }
}

extension Int8PanelLayout {
    /// How many threads can get at least one whole panel of 0..<rows.
    static func usefulThreads(rows: Int, threads: Int) -> Int {
        max(1, min(threads, panels(rows: rows)))
    }

    /// Thread `part` of `parts`'s share of 0..<rows: a contiguous run of whole panels.
    static func threadBlock(_ part: Int, of parts: Int, rows: Int) -> Range<Int> {
        let panelCount = panels(rows: rows)
        return min(rows, panelCount * part / parts * panelWidth) ..< min(rows, panelCount * (part + 1) / parts * panelWidth)
    }
}
