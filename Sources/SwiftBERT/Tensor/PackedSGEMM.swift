import Foundation

// FP32 y = x·Wᵀ + b for the encoder's Linear layers, with W repacked once at load.
//
// Why not OpenBLAS here: at BERT's row counts (16 to a few hundred tokens) its sgemm packs
// the weights again on every call, and its speed depends on the kernels it picks for the
// machine (the `OPENBLAS_CORETYPE=Haswell` these machines set gives 63-75 GFLOP/s at M=16).
// Weights never change, so they are packed once into the layout the micro-kernel reads
// front to back, and the kernel is the INT8 one's shape in floats: a tile of up to 6 rows ×
// 64 output channels held in 24 zmm accumulators over the whole K, one fused multiply-add
// per 16 products. Summation runs over k in order, as a dot product does.

/// What runs the FP32 Linear layers in this build (for benchmark reports).
#if SWIFTBERT_NATIVE_ISA
public let fp32LinearKernel = "packed FMA kernel"
#else
public let fp32LinearKernel = "OpenBLAS sgemm (portable build)"
#endif

/// A float32 weight matrix W [rows × cols] (PyTorch's [out, in]) in panels of 64 output
/// channels; inside a panel, k-major: the 64 channels' weights for k = 0, then k = 1, ...
/// Channels past `rows` are zero.
///
///     float offset of W[n, k] = (n / 64) · cols · 64 + k · 64 + n % 64
public final class PackedFloatMatrix: @unchecked Sendable {
    static let panelWidth = 64
    public let rows: Int
    public let cols: Int
    let storage: UnsafeMutablePointer<Float>
    var panelStride: Int { cols * Self.panelWidth }

    /// Packs w [rows × cols], one panel per task of `threads`.
    public init(_ w: UnsafePointer<Float>, rows: Int, cols: Int, threads: Int = 1) {
        (self.rows, self.cols) = (rows, cols)
        let width = Self.panelWidth
        let panels = (rows + width - 1) / width
        byteCount = max(1, panels * cols * width * 4)
        // Anonymous memory with huge pages where the kernel allows them: a bert-base model is
        // 100,000 pages of 4 KiB, and faulting them in one by one cost more than the packing.
        let map = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        precondition(map != MAP_FAILED && map != nil, "out of memory packing a \(rows) × \(cols) weight matrix")
        madvise(map, byteCount, Int32(MADV_HUGEPAGE))
        storage = map!.bindMemory(to: Float.self, capacity: byteCount / 4)
        let storage = storage
        parallelFor(panels, threads: threads) { panel, _ in
            let out = storage + panel * cols * width
            let channels = min(width, rows - panel * width)  // the rest stays zero (fresh pages)
            // 16 k at a time: 64 B read from each row, a 4 KiB block written, both cached.
            for k0 in stride(from: 0, to: cols, by: 16) {
                let kEnd = min(k0 + 16, cols)
                for j in 0..<channels {
                    let source = w + (panel * width + j) * cols
                    for k in k0..<kEnd { out[k * width + j] = source[k] }
                }
            }
        }
    }

    private let byteCount: Int

    deinit { munmap(storage, byteCount) }
}

/// Rows of x per micro-kernel tile: 6 rows × 4 vectors = 24 accumulators, with the 4 weight
/// vectors and a broadcast, in the 32 zmm registers.
let sgemmTileRows = 6

/// 64 lanes of floats: one row of a tile's accumulators, or one k of a panel.
struct Float32TileRow {
    var v0 = SIMD16<Float>(), v1 = SIMD16<Float>(), v2 = SIMD16<Float>(), v3 = SIMD16<Float>()

    @inline(__always)
    mutating func accumulate(_ a: Float, _ w: UnsafePointer<Float>) {
        let broadcast = SIMD16<Float>(repeating: a)
        let raw = UnsafeRawPointer(w)
        v0.addProduct(broadcast, raw.load(fromByteOffset: 0, as: SIMD16<Float>.self))
        v1.addProduct(broadcast, raw.load(fromByteOffset: 64, as: SIMD16<Float>.self))
        v2.addProduct(broadcast, raw.load(fromByteOffset: 128, as: SIMD16<Float>.self))
        v3.addProduct(broadcast, raw.load(fromByteOffset: 192, as: SIMD16<Float>.self))
    }

    /// y[j] = self[j] + bias[j] for j in `columns` (relative to the panel's first channel).
    @inline(__always)
    func store(to y: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>, columns: Range<Int>) {
        withUnsafeBytes(of: self) { lanes in
            for j in columns { y[j] = lanes.load(fromByteOffset: j * 4, as: Float.self) + bias[j] }
        }
    }
}

enum TileRows6: TileRowCount { static var rows: Int { 6 } }

/// One tile: `Rows.rows` rows of x (stride `ldx`) times one packed panel, plus the bias.
@inline(never)
private func sgemmTile<Rows: TileRowCount>(_: Rows.Type, x: UnsafePointer<Float>, ldx: Int, k: Int,
                                           panel: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                                           y: UnsafeMutablePointer<Float>, ldy: Int, columns: Range<Int>) {
    let rows = Rows.rows
    let x0 = x, x1 = x0 + ldx, x2 = x1 + ldx, x3 = x2 + ldx, x4 = x3 + ldx, x5 = x4 + ldx
    var acc0 = Float32TileRow(), acc1 = Float32TileRow(), acc2 = Float32TileRow()
    var acc3 = Float32TileRow(), acc4 = Float32TileRow(), acc5 = Float32TileRow()
    for i in 0..<k {
        let w = panel + i * PackedFloatMatrix.panelWidth
        acc0.accumulate(x0[i], w)
        if rows > 1 { acc1.accumulate(x1[i], w) }
        if rows > 2 { acc2.accumulate(x2[i], w) }
        if rows > 3 { acc3.accumulate(x3[i], w) }
        if rows > 4 { acc4.accumulate(x4[i], w) }
        if rows > 5 { acc5.accumulate(x5[i], w) }
    }
    acc0.store(to: y, bias: bias, columns: columns)
    if rows > 1 { acc1.store(to: y + ldy, bias: bias, columns: columns) }
    if rows > 2 { acc2.store(to: y + 2 * ldy, bias: bias, columns: columns) }
    if rows > 3 { acc3.store(to: y + 3 * ldy, bias: bias, columns: columns) }
    if rows > 4 { acc4.store(to: y + 4 * ldy, bias: bias, columns: columns) }
    if rows > 5 { acc5.store(to: y + 5 * ldy, bias: bias, columns: columns) }
}

/// y[:, columns] = x[m × K] · W[columns]ᵀ + bias[columns], y [m × W.rows] row-major.
/// Disjoint column ranges may run on different threads.
public func packedSGEMM(_ x: UnsafePointer<Float>, m: Int, weights: PackedFloatMatrix, bias: UnsafePointer<Float>,
                 output y: UnsafeMutablePointer<Float>, columns: Range<Int>) {
    guard m > 0, !columns.isEmpty else { return }
    let width = PackedFloatMatrix.panelWidth, k = weights.cols, n = weights.rows
    forEachPanelTile(rows: m, tileRows: sgemmTileRows, columns: columns, panelWidth: width,
                     panelBytes: weights.panelStride * 4) { row, rows, panel, inPanel in
        let first = panel * width
        let (xs, w, b, out) = (x + row * k, weights.storage + panel * weights.panelStride, bias + first, y + row * n + first)
        switch rows {
        case 6: sgemmTile(TileRows6.self, x: xs, ldx: k, k: k, panel: w, bias: b, y: out, ldy: n, columns: inPanel)
        case 5: sgemmTile(TileRows5.self, x: xs, ldx: k, k: k, panel: w, bias: b, y: out, ldy: n, columns: inPanel)
        case 4: sgemmTile(TileRows4.self, x: xs, ldx: k, k: k, panel: w, bias: b, y: out, ldy: n, columns: inPanel)
        case 3: sgemmTile(TileRows3.self, x: xs, ldx: k, k: k, panel: w, bias: b, y: out, ldy: n, columns: inPanel)
        case 2: sgemmTile(TileRows2.self, x: xs, ldx: k, k: k, panel: w, bias: b, y: out, ldy: n, columns: inPanel)
        default: sgemmTile(TileRows1.self, x: xs, ldx: k, k: k, panel: w, bias: b, y: out, ldy: n, columns: inPanel)
        }
    }
}
