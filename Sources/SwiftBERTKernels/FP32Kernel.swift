import Foundation

// FP32 y = x·Wᵀ + b for the encoder's Linear layers, with W repacked once at load.
//
// Why not OpenBLAS here: at BERT's row counts (16 to a few hundred tokens) its sgemm packs
// the weights again on every call, and its speed depends on the kernels it picks for the
// machine (the `OPENBLAS_CORETYPE=Haswell` these machines set gives 63-75 GFLOP/s at M=16).
// Weights never change, so they are packed once into the layout the micro-kernel reads
// front to back (MicroKernel.swift): a tile of up to 6 rows × 64 output channels held in 24
// zmm accumulators over the whole k, one fused multiply-add per 16 products. Summation runs
// over k in order, as a dot product does.

/// A float32 weight matrix W [n × k] (PyTorch's [out, in]) in panels of 64 output channels;
/// inside a panel, k-major: the 64 channels' weights for k = 0, then k = 1, ... Channels past
/// n are zero.
///
///     float offset of W[c, i] = (c / 64) · k · 64 + i · 64 + c % 64
public final class PackedFloatMatrix: @unchecked Sendable {
    /// Output channels.
    public let n: Int
    /// Input features.
    public let k: Int
    let storage: UnsafeMutablePointer<Float>
    var panelStride: Int { k * panelWidth }

    /// Packs w [n × k], one panel per task of `threads`.
    public init(_ w: UnsafePointer<Float>, n: Int, k: Int, threads: Int = 1) {
        (self.n, self.k) = (n, k)
        let width = panelWidth
        let panels = (n + width - 1) / width
        byteCount = max(1, panels * k * width * 4)
        storage = mapPackedWeights(byteCount: byteCount, n: n, k: k).bindMemory(to: Float.self, capacity: byteCount / 4)
        let storage = storage
        parallelFor(panels, threads: threads) { panel, _ in
            let out = storage + panel * k * width
            let channels = min(width, n - panel * width)  // the rest stays zero (fresh pages)
            // 16 k at a time: 64 B read from each row, a 4 KiB block written, both cached.
            for i0 in stride(from: 0, to: k, by: 16) {
                let iEnd = min(i0 + 16, k)
                for j in 0..<channels {
                    let source = w + (panel * width + j) * k
                    for i in i0..<iEnd { out[i * width + j] = source[i] }
                }
            }
        }
    }

    private let byteCount: Int

    deinit { munmap(storage, byteCount) }

    /// Row c (an embedding lookup) read back from the panels.
    public func row(_ c: Int, into out: UnsafeMutablePointer<Float>) {
        let panel = storage + (c / panelWidth) * panelStride + c % panelWidth
        for i in 0..<k { out[i] = panel[i * panelWidth] }
    }

    /// y[rows, columns] = x[rows] · Wᵀ[:, columns] + bias[columns], x [m × k], y [m × n]
    /// row-major (all rows unless `rows` says). Disjoint blocks may run on different threads.
    func multiply(_ x: UnsafePointer<Float>, m: Int, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                  rows: Range<Int>? = nil, columns: Range<Int>, finished: FinishedBlock? = nil) {
        let (n, k) = (self.n, self.k)
        panelGEMM(rows: rows ?? 0..<m, columns: columns, panelBytes: panelStride * 4,
                  kernel: { row, panel in FP32Kernel(x: x + row * k, ldx: k, panel: storage + panel * panelStride, k: k) },
                  epilogue: { row, first, inPanel in
                      TileEpilogue(y: y + row * n + first, ldy: n, scale: .none, bias: bias + first, columns: inPanel)
                  }, finished: finished)
    }
}

extension TileRow where Scalar == Float {
    /// self += a · w lane-wise. `accumulateProduct` is one vfmadd per vector in the native build;
    /// `+` and `*` on SIMD16<Float> there were lane loops that LLVM re-vectorised only partly (20×
    /// slower). The portable build has no FMA, and uses them (Kernels/MultiplyAdd.swift).
    @inline(__always)
    mutating func accumulate(_ a: Float, _ w: FloatTileRow) {
        let broadcast = SIMD16<Float>(repeating: a)
        v0.accumulateProduct(broadcast, w.v0)
        v1.accumulateProduct(broadcast, w.v1)
        v2.accumulateProduct(broadcast, w.v2)
        v3.accumulateProduct(broadcast, w.v3)
    }

    /// self += a · w for 64 floats at w: the loads fold into the multiply-adds.
    @inline(__always)
    mutating func accumulate(_ a: Float, loading w: UnsafePointer<Float>) {
        let broadcast = SIMD16<Float>(repeating: a)
        let raw = UnsafeRawPointer(w)
        v0.accumulateProduct(broadcast, raw.load(fromByteOffset: 0, as: SIMD16<Float>.self))
        v1.accumulateProduct(broadcast, raw.load(fromByteOffset: 64, as: SIMD16<Float>.self))
        v2.accumulateProduct(broadcast, raw.load(fromByteOffset: 128, as: SIMD16<Float>.self))
        v3.accumulateProduct(broadcast, raw.load(fromByteOffset: 192, as: SIMD16<Float>.self))
    }
}

/// FP32: one k of the panel per load, one FMA per 16 products.
private struct FP32Kernel: PanelKernel {
    typealias MaximumRows = TileRows6
    static var subSteps: Int { 1 }
    let x: UnsafePointer<Float>
    let ldx: Int
    let panel: UnsafePointer<Float>
    let k: Int
    var fullLoads: Int { k }
    var tailSubSteps: Int { 0 }
    var panelStart: UnsafeRawPointer { UnsafeRawPointer(panel) }

    @inline(__always) func load(_ index: Int) -> UnsafePointer<Float> { panel + index &* panelWidth }
    @inline(__always) func operand(_ load: UnsafePointer<Float>, subStep: Int) -> UnsafePointer<Float> { load }
    @inline(__always) func accumulate(_ acc: inout FloatTileRow, row: Int, load: Int, subStep: Int, _ w: UnsafePointer<Float>) {
        acc.accumulate(x[row &* ldx &+ load], loading: w)
    }
}

/// Zeroed anonymous memory for packed weights (release with munmap), with huge pages where the
/// kernel allows them: a bert-base model is 100,000 pages of 4 KiB, and faulting them in one by
/// one cost more than the packing.
func mapPackedWeights(byteCount: Int, n: Int, k: Int) -> UnsafeMutableRawPointer {
    let map = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    precondition(map != MAP_FAILED && map != nil, "out of memory packing a \(n) × \(k) weight matrix")
    madvise(map, byteCount, Int32(MADV_HUGEPAGE))
    return map!
}
