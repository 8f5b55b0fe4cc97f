// The micro-kernel framework every precision of the Linear layers plugs into.
//
// y[m × n] = x[m × k] · Wᵀ + bias, with W [n × k] (PyTorch's [out, in]) stored once in panels
// of 64 output channels, laid out so that a panel is read front to back. The output is cut
// into tiles of up to 6 rows × one panel; a tile keeps its 64 channels per row in registers
// over the whole k, and an epilogue then scales, adds the bias and stores.
//
// What a precision brings is only its inner product (`PanelKernel`): what one load of the
// panel holds, how it multiplies a row of x, and the accumulator it adds into. The tile loop,
// the row-count dispatch and the epilogue are written once, here.
//
// Index arithmetic in the kernels wraps (&+, &*): the library is built with -O, not
// -Ounchecked (a versioned dependency cannot set it), and overflow checks in the tile loop
// cost INT8 about 10 %. The bounds are the callers' preconditions.

#if canImport(SwiftBERTVNNI)  // the package's builds; the fuzzers compile the library without it
import SwiftBERTVNNI
#endif

/// A tile's row count as a type, so that each count gets its own specialised copy of a
/// kernel: rows a tile does not have then cost nothing (a `rows` argument to an inlined
/// function was instead merged back into one loop full of branches).
protocol TileRowCount {
    static var rows: Int { get }
    /// The count one below (TileRows1's is itself), for `upTo`.
    associatedtype Smaller: TileRowCount
}
enum TileRows1: TileRowCount { static var rows: Int { 1 }; typealias Smaller = TileRows1 }
enum TileRows2: TileRowCount { static var rows: Int { 2 }; typealias Smaller = TileRows1 }
enum TileRows3: TileRowCount { static var rows: Int { 3 }; typealias Smaller = TileRows2 }
enum TileRows4: TileRowCount { static var rows: Int { 4 }; typealias Smaller = TileRows3 }
enum TileRows5: TileRowCount { static var rows: Int { 5 }; typealias Smaller = TileRows4 }
enum TileRows6: TileRowCount { static var rows: Int { 6 }; typealias Smaller = TileRows5 }

extension TileRowCount {
    /// body(TileRowsN.self) for n = `count` clamped to 1...`rows`: only this count and the
    /// smaller ones are named, so only they are specialised.
    @inline(__always)
    static func upTo<Body: TileRowsBody>(_ count: Int, _ body: Body) {
        if rows == 1 || count >= rows { body(Self.self) } else { Smaller.upTo(count, body) }
    }
}

/// Code generic over a tile dimension, run by `withTileRows` with the count as a type.
protocol TileRowsBody { func callAsFunction<Rows: TileRowCount>(_: Rows.Type) }

/// body(TileRowsN.self) for n = `count` clamped to 1...`Maximum.rows`: the one dispatch from a
/// count known at run time to the code specialised for it. The bound is a type, so only the
/// counts a caller can reach are specialised (with a run-time bound, attention's vectors (at most
/// 4) and the kernels of 4 or 5 rows got copies for 6 too: a quarter of the kernels' compile time).
@inline(__always)
func withTileRows<Maximum: TileRowCount, Body: TileRowsBody>(_ count: Int, upTo _: Maximum.Type, _ body: Body) {
    Maximum.upTo(count, body)
}

/// One row of a tile's accumulators: 64 lanes (four 16-lane vectors) of Float or Int32.
protocol TileAccumulator { init() }

/// 64 lanes as four 16-lane vectors: a row of a tile's accumulators, or one step of a panel.
struct TileRow<Scalar: SIMDScalar>: TileAccumulator {
    var v0 = SIMD16<Scalar>(), v1 = SIMD16<Scalar>(), v2 = SIMD16<Scalar>(), v3 = SIMD16<Scalar>()

    init() {}

    @inline(__always)
    init(_ v0: SIMD16<Scalar>, _ v1: SIMD16<Scalar>, _ v2: SIMD16<Scalar>, _ v3: SIMD16<Scalar>) {
        (self.v0, self.v1, self.v2, self.v3) = (v0, v1, v2, v3)
    }
}
typealias FloatTileRow = TileRow<Float>
typealias Int32TileRow = TileRow<Int32>

/// The inner product of one precision, for one tile: rows of its input (x, or x quantised)
/// against one packed panel of weights. Values are made per tile and hold plain pointers.
extension PanelKernel {
    static var tileRows: Int { MaximumRows.rows }
}

protocol PanelKernel {
    associatedtype Accumulator: TileAccumulator
    /// What one load from the panel gives, shared by every row of the tile.
    associatedtype Load
    /// The weights of one sub-step of a load, in the form `accumulate` multiplies.
    associatedtype Operand
    /// The most rows a tile can have: accumulators, weights and a broadcast fill the 32 registers.
    associatedtype MaximumRows: TileRowCount
    /// Sub-steps per load (1 to 4): 4 when a load holds 4 k per channel fed one at a time.
    static var subSteps: Int { get }
    /// Where the kernel's panel starts (for prefetching the next one).
    var panelStart: UnsafeRawPointer { get }
    /// Full loads over the whole k, then the sub-steps of a last, partial load (0: none).
    var fullLoads: Int { get }
    var tailSubSteps: Int { get }
    func load(_ index: Int) -> Load
    func operand(_ load: Load, subStep: Int) -> Operand
    /// acc += (row `row` of the input at this load and sub-step) · w, lane by lane.
    func accumulate(_ acc: inout Accumulator, row: Int, load: Int, subStep: Int, _ w: Operand)
}

/// How a tile's accumulators become output floats, for the columns of a panel that are
/// written. All pointers are at the panel's first channel.
struct TileEpilogue {
    enum Scale {
        /// y = acc + bias (float accumulators: FP32).
        case none
        /// y = acc · channel[j] + bias (float accumulators, INT8 weights).
        case perChannel(UnsafePointer<Float>)
        /// y = Float(acc − offset[j]) · (token[row] · channel[j]) + bias (Int32 accumulators: INT8
        /// weights and activations; the offset removes the +128 shift of the activations exactly).
        case perTokenAndChannel(token: UnsafePointer<Float>, channel: UnsafePointer<Float>, offset: UnsafePointer<Int32>)
    }

    let y: UnsafeMutablePointer<Float>
    let ldy: Int
    let scale: Scale
    let bias: UnsafePointer<Float>?
    /// Columns written, relative to the panel's first channel (a partial panel writes fewer).
    let columns: Range<Int>

    @inline(__always)
    func store<A: TileAccumulator>(_ acc: A, row: Int) {
        if columns == 0..<panelWidth {
            storeWholePanel(acc, row: row)
            return
        }
        // From a stack copy, so one plain loop (which LLVM vectorises) converts, scales, adds
        // the bias and handles a partial panel. Typed pointers, not `lanes.load`: its bounds
        // and alignment checks stay in -O builds and cost the loop its vectorisation.
        withUnsafeBytes(of: acc) { lanes in
            let out = y + row &* ldy
            let floats = lanes.baseAddress!.assumingMemoryBound(to: Float.self)
            let ints = lanes.baseAddress!.assumingMemoryBound(to: Int32.self)
            @inline(__always) func float(_ j: Int) -> Float { floats[j] }
            @inline(__always) func int(_ j: Int) -> Int32 { ints[j] }
            @inline(__always) func write(_ value: (Int) -> Float) {
                if let bias {
                    for j in columns { out[j] = value(j) + bias[j] }
                } else {
                    for j in columns { out[j] = value(j) }
                }
            }
            switch scale {
            case .none: write { float($0) }
            case .perChannel(let channel): write { float($0) * channel[$0] }
            case let .perTokenAndChannel(token, channel, offset):
                let rowScale = token[row]
                write { Float(int($0) &- offset[$0]) * (rowScale * channel[$0]) }
            }
        }
    }
}

extension TileEpilogue {
    /// `store` of a row of all 64 channels, on 16-lane vectors: left to LLVM, the loop ran on
    /// 8-lane ones behind run-time overlap checks, and in INT8 tiles at k = 384 (MiniLM's QKV and
    /// feed-forward in) the epilogue was a sixth of the tile's time. The same operations in the
    /// same order, so the same floats.
    @inline(__always)
    private func storeWholePanel<A: TileAccumulator>(_ acc: A, row: Int) {
        withUnsafeBytes(of: acc) { lanes in
            let lanes = lanes.baseAddress!, out = UnsafeMutableRawPointer(y + row &* ldy)
            @inline(__always) func vector<T: SIMDScalar>(_ p: UnsafePointer<T>, _ v: Int) -> SIMD16<T> {
                UnsafeRawPointer(p + 16 &* v).loadUnaligned(as: SIMD16<T>.self)
            }
            @inline(__always) func write(_ v: Int, _ value: SIMD16<Float>) {
                let result = bias.map { value + vector($0, v) } ?? value
                out.storeBytes(of: result, toByteOffset: 64 &* v, as: SIMD16<Float>.self)
            }
            @inline(__always) func accumulated<T: SIMDScalar>(_ v: Int, as _: T.Type) -> SIMD16<T> {
                lanes.loadUnaligned(fromByteOffset: 64 &* v, as: SIMD16<T>.self)
            }
            switch scale {
            case .none:
                for v in 0..<4 { write(v, accumulated(v, as: Float.self)) }
            case .perChannel(let channel):
                for v in 0..<4 { write(v, accumulated(v, as: Float.self) * vector(channel, v)) }
            case let .perTokenAndChannel(token, channel, offset):
                let rowScale = SIMD16<Float>(repeating: token[row])
                for v in 0..<4 {
                    write(v, integersAsFloats(accumulated(v, as: Int32.self) &- vector(offset, v)) * (rowScale * vector(channel, v)))
                }
            }
        }
    }
}

/// `kernel` that also prefetches, one cache line per load of its panel: from `start`, one every
/// `stride` bytes. A kernel type of its own, so that tiles without a prefetch keep a loop with
/// none in it (an idle prefetch in the loop cost the FP32 tile 3 %).
struct PrefetchingKernel<K: PanelKernel>: PanelKernel {
    let kernel: K
    let start: UnsafeRawPointer
    let stride: Int
    typealias MaximumRows = K.MaximumRows
    static var subSteps: Int { K.subSteps }
    var panelStart: UnsafeRawPointer { kernel.panelStart }
    var fullLoads: Int { kernel.fullLoads }
    var tailSubSteps: Int { kernel.tailSubSteps }

    @inline(__always) func load(_ index: Int) -> K.Load {
        #if canImport(SwiftBERTVNNI)
        prefetchToL2(start + index &* stride)
        #endif
        return kernel.load(index)
    }
    @inline(__always) func operand(_ load: K.Load, subStep: Int) -> K.Operand { kernel.operand(load, subStep: subStep) }
    @inline(__always) func accumulate(_ acc: inout K.Accumulator, row: Int, load: Int, subStep: Int, _ w: K.Operand) {
        kernel.accumulate(&acc, row: row, load: load, subStep: subStep, w)
    }
}

/// The accumulators of one tile and its steps: a struct with mutating methods rather than local
/// variables captured by nested functions, which in the largest tiles (FP32's 6 rows, the
/// weight-only kernel's 4 sub-steps, once a prefetch was in them) the optimiser left under
/// run-time exclusivity checks (`swift_beginAccess`).
private struct TileAccumulators<K: PanelKernel, Rows: TileRowCount> {
    var acc0 = K.Accumulator(), acc1 = K.Accumulator(), acc2 = K.Accumulator()
    var acc3 = K.Accumulator(), acc4 = K.Accumulator(), acc5 = K.Accumulator()

    @inline(__always)
    mutating func step(_ kernel: K, _ loaded: K.Load, load index: Int, subStep: Int) {
        let rows = Rows.rows
        let w = kernel.operand(loaded, subStep: subStep)
        kernel.accumulate(&acc0, row: 0, load: index, subStep: subStep, w)
        if rows > 1 { kernel.accumulate(&acc1, row: 1, load: index, subStep: subStep, w) }
        if rows > 2 { kernel.accumulate(&acc2, row: 2, load: index, subStep: subStep, w) }
        if rows > 3 { kernel.accumulate(&acc3, row: 3, load: index, subStep: subStep, w) }
        if rows > 4 { kernel.accumulate(&acc4, row: 4, load: index, subStep: subStep, w) }
        if rows > 5 { kernel.accumulate(&acc5, row: 5, load: index, subStep: subStep, w) }
    }

    @inline(__always)
    mutating func run(_ kernel: K, load index: Int, subSteps: Int) {
        let loaded = kernel.load(index)
        // Unrolled by hand (at most 4 sub-steps): constant sub-steps give constant shifts in
        // the INT8 kernels; a loop here cost 30 % more instructions in the INT8 tile.
        step(kernel, loaded, load: index, subStep: 0)
        if subSteps > 1 { step(kernel, loaded, load: index, subStep: 1) }
        if subSteps > 2 { step(kernel, loaded, load: index, subStep: 2) }
        if subSteps > 3 { step(kernel, loaded, load: index, subStep: 3) }
    }
}

/// One tile: `Rows.rows` rows of the kernel's input times one panel, then the epilogue.
@inline(never)
private func panelTile<K: PanelKernel, Rows: TileRowCount>(_ kernel: K, _: Rows.Type, _ epilogue: TileEpilogue) {
    let rows = Rows.rows
    var tile = TileAccumulators<K, Rows>()
    for index in 0..<kernel.fullLoads { tile.run(kernel, load: index, subSteps: K.subSteps) }
    if kernel.tailSubSteps > 0 { tile.run(kernel, load: kernel.fullLoads, subSteps: kernel.tailSubSteps) }
    epilogue.store(tile.acc0, row: 0)
    if rows > 1 { epilogue.store(tile.acc1, row: 1) }
    if rows > 2 { epilogue.store(tile.acc2, row: 2) }
    if rows > 3 { epilogue.store(tile.acc3, row: 3) }
    if rows > 4 { epilogue.store(tile.acc4, row: 4) }
    if rows > 5 { epilogue.store(tile.acc5, row: 5) }
}

/// Runs the tile specialised for `rows` (1...K.tileRows).
@inline(__always)
private func panelTile<K: PanelKernel>(_ kernel: K, rows: Int, _ epilogue: TileEpilogue) {
    withTileRows(rows, upTo: K.MaximumRows.self, PanelTile(kernel: kernel, epilogue: epilogue))
}

/// `panelTile` for the row count `withTileRows` gives.
private struct PanelTile<K: PanelKernel>: TileRowsBody {
    let kernel: K
    let epilogue: TileEpilogue
    @inline(__always)
    func callAsFunction<Rows: TileRowCount>(_ rows: Rows.Type) { panelTile(kernel, rows, epilogue) }
}

/// Covers y[rows, columns] tile by tile, in one of two orders.
/// - Panel by panel, each serving every row tile before the next one: for calls of a few rows
///   (`streamingRows`), whose weights come from memory once, and for panels that fit L1
///   (`l1PanelBytes`, `l1PanelRows`). While a panel's tiles run, they prefetch the next panel
///   into L2, each tile its share, a line per load, so that memory streams during the arithmetic
///   rather than between panels.
/// - Otherwise blocks of panels of about 512 KiB of packed weights (half a Zen L2) outermost, so
///   a block stays cached while every row tile runs across it; then row tiles of up to
///   `K.tileRows`; then the block's panels. The block's last tiles prefetch the next block.
/// `kernel` makes the kernel for a tile (its first row and its panel); `epilogue` says where
/// and how it stores (its first row, the panel's first channel, the columns of the panel to
/// write). `finished`, if any, gets each block of y as soon as it is complete (its rows and
/// columns): a row tile across a block of panels, or a panel down every row.
@inline(__always)
func panelGEMM<K: PanelKernel>(rows range: Range<Int>, columns: Range<Int>, panelBytes: Int,
                               kernel: (_ row: Int, _ panel: Int) -> K,
                               epilogue: (_ row: Int, _ firstChannel: Int, _ inPanel: Range<Int>) -> TileEpilogue,
                               finished: FinishedBlock? = nil) {
    guard !range.isEmpty, !columns.isEmpty else { return }
    let panels = (columns.lowerBound / panelWidth)..<((columns.upperBound + panelWidth - 1) / panelWidth)
    @inline(__always) func written(_ first: Int, _ end: Int) -> Range<Int> { columnsWritten(by: first..<end, of: columns) }
    /// The tile of `rows` rows from `row` on, in `panel`, prefetching the `share` bytes at `next`.
    @inline(__always) func tile(_ row: Int, _ rows: Int, _ panel: Int, prefetching next: UnsafeRawPointer? = nil, share: Int = 0) {
        let first = panel * panelWidth, inY = written(panel, panel + 1), kernel = kernel(row, panel)
        let epilogue = epilogue(row, first, (inY.lowerBound - first)..<(inY.upperBound - first))
        if let next {
            let loads = kernel.fullLoads + (kernel.tailSubSteps > 0 ? 1 : 0)
            panelTile(PrefetchingKernel(kernel: kernel, start: next, stride: (share + loads - 1) / loads), rows: rows, epilogue)
        } else {
            panelTile(kernel, rows: rows, epilogue)
        }
    }
    if range.count <= streamingRows || (panelBytes <= l1PanelBytes && range.count <= l1PanelRows) {
        let tiles = (range.count + K.tileRows - 1) / K.tileRows, share = (panelBytes + tiles - 1) / tiles
        for panel in panels {
            let next = panel + 1 < panels.upperBound ? kernel(range.lowerBound, panel + 1).panelStart : nil
            var (row, tileIndex) = (range.lowerBound, 0)
            while row < range.upperBound {
                let rows = min(K.tileRows, range.upperBound - row)
                tile(row, rows, panel, prefetching: next.map { $0 + tileIndex * share }, share: share)
                row += rows
                tileIndex += 1
            }
            finished?(range, written(panel, panel + 1))
        }
        return
    }
    let perBlock = max(1, l2PanelGroupBytes / panelBytes)
    let first = kernel(range.lowerBound, panels.lowerBound)
    let cacheLine = 64, bytesPerTile = (first.fullLoads + (first.tailSubSteps > 0 ? 1 : 0)) * cacheLine
    let rowTiles = (range.count + K.tileRows - 1) / K.tileRows
    for blockStart in stride(from: panels.lowerBound, to: panels.upperBound, by: perBlock) {
        let blockEnd = min(blockStart + perBlock, panels.upperBound)
        let blockColumns = written(blockStart, blockEnd)
        // The block's last tiles prefetch the next block, a line per load, so that its first
        // row tile does not wait on memory for every line; not earlier, or the rows' outputs
        // pushed it out of L2 again before its turn (b32x128).
        let next = blockEnd < panels.upperBound ? kernel(range.lowerBound, blockEnd).panelStart : nil
        let nextBytes = (min(blockEnd + perBlock, panels.upperBound) - blockEnd) * panelBytes
        let tiles = rowTiles * (blockEnd - blockStart)
        let firstPrefetching = tiles - min(tiles, (nextBytes + bytesPerTile - 1) / bytesPerTile)
        var (row, tileIndex) = (range.lowerBound, 0)
        while row < range.upperBound {
            let rows = min(K.tileRows, range.upperBound - row)
            for panel in blockStart..<blockEnd {
                if let next, tileIndex >= firstPrefetching {
                    tile(row, rows, panel, prefetching: next + (tileIndex - firstPrefetching) * bytesPerTile, share: bytesPerTile)
                } else {
                    tile(row, rows, panel)
                }
                tileIndex += 1
            }
            finished?(row..<(row + rows), blockColumns)
            row += rows
        }
    }
}

/// The columns of y that `panels` write, of a call's `columns`: a partial first or last panel
/// writes only its share.
@inline(__always)
func columnsWritten(by panels: Range<Int>, of columns: Range<Int>) -> Range<Int> {
    max(columns.lowerBound, panels.lowerBound * panelWidth)..<min(columns.upperBound, panels.upperBound * panelWidth)
}

/// Called with a block of the output once it is complete (its rows and its columns), while it
/// is still in cache: what a Linear layer's activation runs on.
public typealias FinishedBlock = (_ rows: Range<Int>, _ columns: Range<Int>) -> Void

