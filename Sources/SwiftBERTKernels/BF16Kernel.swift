// The BF16 inner product: BF16 activations × BF16 weights into FP32 accumulators, a tile of
// up to 6 rows × 64 output channels (MicroKernel.swift).
//
// BF16 is the top half of an FP32: 8 exponent bits, 7 mantissa bits. Weights are rounded from
// the FP32 file when the model loads; each Linear rounds its input activations once (both
// round-to-nearest-even, as PyTorch's `.to(torch.bfloat16)`); products of two BF16 values are
// exact in FP32 and every sum is FP32, so only the two roundings differ from FP32.
//
// Two ways to run it, with the same sums (`BF16Product`):
// - vdpbf16ps (AVX512_BF16, from SwiftBERTVNNI): a row's pair of activations (k, k + 1),
//   broadcast as one 32-bit lane, times the pair's weights of 16 channels: 32 multiply-adds an
//   instruction. Per K-pair, 24 of them on 4 loads and 6 broadcasts.
// - widened: each K-pair of weights becomes FP32 in registers, the odd k by a mask and the even
//   k by a shift (1 instruction per 16 weights), and FMA adds in vdpbf16ps's order, odd k, then
//   even k. Activations are kept as rounded floats, broadcast straight from memory. Per K-pair
//   of a 4-row tile: 32 FMA and 8 widenings, so FMA runs at up to 80 % of its rate.
// Which is faster depends on the core, not the ISA: Intel's cores without AMX (measured here on
// Emerald Rapids: 1.39 vdpbf16ps a ns against 5.54 FMA) run vdpbf16ps at a quarter of FMA's
// instruction rate, half its multiply-adds; AMD's Zen 4 and Zen 5 run it at FMA's instruction
// rate, twice its multiply-adds.

import Foundation
#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
import SwiftBERTVNNI
#endif

/// How the BF16 kernels (Linear layers and attention) multiply. Every product of two BF16
/// values is exact in FP32 and both ways add the odd k's product, then the even k's, each
/// rounded to FP32, so they give the same results (vdpbf16ps also flushes denormals, which BF16
/// activations and weights of a BERT model do not reach): the choice is one of speed.
public enum BF16Product: String, Sendable, CaseIterable {
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
    /// vdpbf16ps: 32 multiply-adds an instruction.
    case dotInstruction = "vdpbf16ps (AVX512_BF16)"
    #endif
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_AVX512
    /// BF16 widened to FP32 in registers by a shift or a mask, then FMA (16 an instruction).
    case widened = "widened to FP32 in registers, then FMA (AVX-512)"
    #elseif SWIFTBERT_NATIVE_ISA
    case widened = "widened to FP32 in registers, then FMA (AVX2)"
    #else
    case widened = "widened to FP32 by shifts, then multiply and add (plain Swift; no FMA in a portable build)"
    #endif

    /// The faster one on this CPU: vdpbf16ps where the build has it and the CPU is AMD's (Zen 4
    /// and 5 run it at FMA's instruction rate); widened elsewhere (Intel's cores without AMX run
    /// it at a quarter of that). `SWIFTBERT_BF16_PRODUCT=dot` or `=widened` overrides, for
    /// measuring both on one machine.
    public static let preferred: BF16Product = {
        let all = BF16Product.allCases
        switch ProcessInfo.processInfo.environment["SWIFTBERT_BF16_PRODUCT"] {
        case "widened": return .widened
        case "dot": return all.first!  // vdpbf16ps where the build has it
        default: return KernelReport.cpuIsAMD ? all.first! : .widened
        }
    }()
}

/// Round-to-nearest-even FP32 → BF16, as PyTorch rounds (c10::BFloat16): NaN stays a quiet NaN.
enum BFloat16 {
    @inline(__always)
    static func bits(_ x: Float) -> UInt32 {
        let b = x.bitPattern
        return b & 0x7FFF_FFFF > 0x7F80_0000 ? 0x7FC0 : bits(ofNonNaN: b)
    }

    /// The rounding alone, for a float's bits known not to be NaN (attention's probabilities):
    /// without the NaN case a loop over it vectorises where one over `bits` stayed scalar.
    @inline(__always)
    static func bits(ofNonNaN b: UInt32) -> UInt32 { (b &+ 0x7FFF &+ ((b &>> 16) & 1)) &>> 16 }

    /// Two floats as one 32-bit lane: `even` in the low half, `odd` in the high half.
    @inline(__always)
    static func pair(_ even: Float, _ odd: Float) -> UInt32 { bits(even) | bits(odd) << 16 }

    /// `bits` on 16 lanes: the same rounding, NaN as the quiet NaN. The NaN lanes are chosen by
    /// a mask made in integers (all ones where 0x7F80_0000 − |b| wraps): `replacing(with:where:)`
    /// went lane by lane.
    @inline(__always)
    static func bits(_ b: SIMD16<UInt32>) -> SIMD16<UInt32> {
        let rounded = (b &+ 0x7FFF &+ ((b &>> 16) & 1)) &>> 16
        let nan = 0 &- ((0x7F80_0000 &- (b & 0x7FFF_FFFF)) &>> 31)
        return rounded & ~nan | 0x7FC0 & nan
    }

    /// 16 pairs from 32 floats: lane i = bits(x[2i]) | bits(x[2i + 1]) << 16.
    @inline(__always)
    static func pairs(_ x: UnsafePointer<Float>) -> SIMD16<UInt32> {
        let raw = UnsafeRawPointer(x)
        let a = bits(raw.loadUnaligned(as: SIMD16<UInt32>.self))
        let b = bits(raw.loadUnaligned(fromByteOffset: 64, as: SIMD16<UInt32>.self))
        // Lane by lane, so LLVM sees two-source shuffles (vpermt2d).
        let even = SIMD16(a[0], a[2], a[4], a[6], a[8], a[10], a[12], a[14], b[0], b[2], b[4], b[6], b[8], b[10], b[12], b[14])
        let odd = SIMD16(a[1], a[3], a[5], a[7], a[9], a[11], a[13], a[15], b[1], b[3], b[5], b[7], b[9], b[11], b[13], b[15])
        return even | odd &<< 16
    }

    /// x[0..<count] as pairs, the last odd element paired with zero: one row of activations, or
    /// of attention's queries. Written in 16-pair vectors: LLVM left a 32-wide head's rows on the
    /// scalar loop.
    @inline(__always)
    static func roundPairs(_ x: UnsafePointer<Float>, count: Int, into out: UnsafeMutablePointer<UInt32>) {
        var i = 0
        while i &+ 16 <= count / 2 {
            UnsafeMutableRawPointer(out + i).storeBytes(of: pairs(x + 2 &* i), as: SIMD16<UInt32>.self)
            i &+= 16
        }
        while i < count / 2 { out[i] = pair(x[2 &* i], x[2 &* i &+ 1]); i &+= 1 }
        if count % 2 == 1 { out[count / 2] = bits(x[count - 1]) }
    }

    @inline(__always)
    static func float(low pair: UInt32) -> Float { Float(bitPattern: pair << 16) }
    @inline(__always)
    static func float(high pair: UInt32) -> Float { Float(bitPattern: pair & 0xFFFF_0000) }

    /// x rounded to BF16 and back: the widened product's activations, and references.
    @inline(__always)
    static func rounded(_ x: Float) -> Float { float(low: bits(x)) }
}

/// The packed BF16 layout: output channels in panels of 64; inside a panel the input dimension
/// in pairs (k, k + 1), one 32-bit lane per channel and pair, even k in the low half. One
/// K-pair of a panel is 256 bytes (64 lanes), read as 4 vectors; k is padded with a zero weight
/// to whole pairs, n with zero channels to whole panels.
///
///     lane of W[c, i] = (c / 64) · kPairs · 64 + (i / 2) · 64 + c % 64, half i % 2
public final class PackedBF16Matrix: @unchecked Sendable {
    /// Output channels.
    public let n: Int
    /// Input features.
    public let k: Int
    var kPairs: Int { (k + 1) / 2 }
    /// Lanes per panel.
    var panelStride: Int { kPairs * panelWidth }
    let lanes: UnsafeMutablePointer<UInt32>
    private let laneCount: Int

    /// Rounds and packs w [n × k] (row-major float), one panel per task of `threads`.
    public init(_ w: UnsafePointer<Float>, n: Int, k: Int, threads: Int = 1) {
        (self.n, self.k) = (n, k)
        let kPairs = (k + 1) / 2
        let panels = (n + panelWidth - 1) / panelWidth
        laneCount = max(1, panels * kPairs * panelWidth)
        lanes = mapPackedWeights(byteCount: laneCount * 4, n: n, k: k).bindMemory(to: UInt32.self, capacity: laneCount)
        let lanes = lanes  // fresh pages are zero: the padding
        parallelFor(panels, threads: threads) { panel, _ in
            let out = lanes + panel * kPairs * panelWidth
            for j in 0..<min(panelWidth, n - panel * panelWidth) {
                let source = w + (panel * panelWidth + j) * k
                for pair in 0..<(k / 2) { out[pair * panelWidth + j] = BFloat16.pair(source[2 * pair], source[2 * pair + 1]) }
                if k % 2 == 1 { out[(kPairs - 1) * panelWidth + j] = BFloat16.bits(source[k - 1]) }
            }
        }
    }

    deinit { munmap(lanes, laneCount * 4) }

    /// Row c as floats (its BF16 values widened).
    public func row(_ c: Int, into out: UnsafeMutablePointer<Float>) {
        let panel = lanes + (c / panelWidth) * panelStride + c % panelWidth
        for i in 0..<k {
            let pair = panel[(i / 2) * panelWidth]
            out[i] = i % 2 == 0 ? BFloat16.float(low: pair) : BFloat16.float(high: pair)
        }
    }

    /// y[rows, columns] = activations · Wᵀ[rows, columns] + bias[columns], y [m × n] row-major,
    /// from activations already rounded (all rows unless `rows` says), by the activations'
    /// `product`. Disjoint blocks may run on different threads.
    func multiply(_ activations: BF16Activations, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                  rows: Range<Int>? = nil, columns: Range<Int>, finished: FinishedBlock? = nil) {
        precondition(activations.k == k, "activations have \(activations.k) features, weights \(k)")
        precondition(columns.lowerBound >= 0 && columns.upperBound <= n, "columns \(columns) outside 0..<\(n)")
        let (n, kPairs, panelStride, lanes) = (self.n, self.kPairs, self.panelStride, self.lanes)
        let rows = rows ?? 0..<activations.m
        if let tiles = activations.tiles {
            multiply(on: tiles, activations, bias: bias, into: y, rows: rows, columns: columns, finished: finished)
            return
        }
        @inline(__always) func epilogue(_ row: Int, _ first: Int, _ inPanel: Range<Int>) -> TileEpilogue {
            TileEpilogue(y: y + row * n + first, ldy: n, scale: .none, bias: bias + first, columns: inPanel)
        }
        switch activations.product {
        #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
        case .dotInstruction:
            let pairs = activations.pairs
            panelGEMM(rows: rows, columns: columns, panelBytes: panelStride * 4,
                      kernel: { row, panel in
                          BF16DotKernel(activations: pairs + row * kPairs, lda: kPairs, panel: lanes + panel * panelStride, kPairs: kPairs)
                      }, epilogue: epilogue, finished: finished)
        #endif
        case .widened:
            let floats = activations.floats
            panelGEMM(rows: rows, columns: columns, panelBytes: panelStride * 4,
                      kernel: { row, panel in
                          WidenedBF16Kernel(x: floats + row * 2 * kPairs, ldx: 2 * kPairs, panel: lanes + panel * panelStride, kPairs: kPairs)
                      }, epilogue: epilogue, finished: finished)
        }
    }
}

/// The activations of one BF16 Linear call, rounded once and shared by every column block, in
/// the form `product` multiplies: per row, kPairs lanes of two BF16 values (`pairs`, for
/// vdpbf16ps), or 2 · kPairs floats holding the rounded values (`floats`, widened); a last odd
/// k pairs with zero. Owned by the forward pass's scratch; it only allocates when a call needs
/// more room than any before it.
public final class BF16Activations: @unchecked Sendable {
    let product: BF16Product
    /// The tile backend the Linear layers run on, or nil for the vector kernels (`product`).
    /// Tiles read the pairs form.
    public let tiles: TileBackend?
    private(set) var m = 0
    private(set) var k = 0
    private var storage: UnsafeMutableRawPointer
    private var capacity = 8  // bytes

    public init(product: BF16Product = .preferred, tiles: TileBackend? = TileBackend.preferred) {
        (self.product, self.tiles) = (product, tiles)
        storage = .allocate(byteCount: capacity, alignment: 64)
    }
    deinit { storage.deallocate() }

    /// The rows as BF16 pairs (the vdpbf16ps form).
    var pairs: UnsafeMutablePointer<UInt32> { storage.assumingMemoryBound(to: UInt32.self) }
    /// The rows as rounded floats (the widened form).
    var floats: UnsafeMutablePointer<Float> { storage.assumingMemoryBound(to: Float.self) }

    /// Rounds x [m × k] to BF16, row by row (rows split across `threads`).
    public func round(_ x: UnsafePointer<Float>, m: Int, k: Int, threads: Int = 1) {
        precondition(m >= 0 && k > 0, "BF16 activations need m ≥ 0 and k > 0")
        let kPairs = (k + 1) / 2
        let widened = product == .widened && tiles == nil
        let bytes = m * kPairs * (widened ? 8 : 4)
        if bytes > capacity {
            storage.deallocate()
            capacity = bytes
            storage = .allocate(byteCount: capacity, alignment: 64)
        }
        (self.m, self.k) = (m, k)
        if widened {
            storage.bindMemory(to: Float.self, capacity: capacity / 4)
            let floats = floats
            parallelRows(m, columns: k, threads: threads) { rows in
                for row in rows {
                    let (source, out) = (x + row * k, floats + row * 2 * kPairs)
                    for i in 0..<k { out[i] = BFloat16.rounded(source[i]) }
                    if k % 2 == 1 { out[k] = 0 }
                }
            }
        } else {
            storage.bindMemory(to: UInt32.self, capacity: capacity / 4)
            let pairs = pairs
            parallelRows(m, columns: k, threads: threads) { rows in
                for row in rows { BFloat16.roundPairs(x + row * k, count: k, into: pairs + row * kPairs) }
            }
        }
    }
}

extension TileRow where Scalar == UInt32 {
    /// One K-pair of a panel: 256 bytes, 2 BF16 for each of 64 channels.
    @inline(__always)
    init(loadingPair p: UnsafePointer<UInt32>) {
        let raw = UnsafeRawPointer(p)
        self.init(raw.load(fromByteOffset: 0, as: SIMD16<UInt32>.self), raw.load(fromByteOffset: 64, as: SIMD16<UInt32>.self),
                  raw.load(fromByteOffset: 128, as: SIMD16<UInt32>.self), raw.load(fromByteOffset: 192, as: SIMD16<UInt32>.self))
    }
}

#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
extension TileRow where Scalar == Float {
    /// self += pair.odd · w.odd + pair.even · w.even lane-wise: four vdpbf16ps.
    @inline(__always)
    mutating func accumulate(pair: UInt32, _ w: TileRow<UInt32>) {
        let broadcast = SIMD16<UInt32>(repeating: pair)
        v0 = dotBF16Pairs(v0, broadcast, w.v0)
        v1 = dotBF16Pairs(v1, broadcast, w.v1)
        v2 = dotBF16Pairs(v2, broadcast, w.v2)
        v3 = dotBF16Pairs(v3, broadcast, w.v3)
    }
}

/// vdpbf16ps: one K-pair per load, one sub-step; 24 accumulators + 4 weights + 1 broadcast.
private struct BF16DotKernel: PanelKernel {
    typealias MaximumRows = TileRows6
    static var subSteps: Int { 1 }
    let activations: UnsafePointer<UInt32>
    let lda: Int
    let panel: UnsafePointer<UInt32>
    let kPairs: Int
    var fullLoads: Int { kPairs }
    var tailSubSteps: Int { 0 }  // an odd k is padded with a zero weight and a zero activation
    var panelStart: UnsafeRawPointer { UnsafeRawPointer(panel) }

    @inline(__always) func load(_ index: Int) -> TileRow<UInt32> { TileRow(loadingPair: panel + index &* panelWidth) }
    @inline(__always) func operand(_ load: TileRow<UInt32>, subStep: Int) -> TileRow<UInt32> { load }
    @inline(__always) func accumulate(_ acc: inout FloatTileRow, row: Int, load: Int, subStep: Int, _ w: TileRow<UInt32>) {
        acc.accumulate(pair: activations[row &* lda &+ load], w)
    }
}
#endif

extension TileRow where Scalar == Float {
    /// The odd (sub-step 0) or even (sub-step 1) k of the K-pair of weights at p, as floats.
    @inline(__always)
    init(widening p: UnsafePointer<UInt32>, subStep: Int) {
        let pair = TileRow<UInt32>(loadingPair: p)
        @inline(__always) func float(_ v: SIMD16<UInt32>) -> SIMD16<Float> {
            unsafeBitCast(subStep == 0 ? v & 0xFFFF_0000 : v &<< 16, to: SIMD16<Float>.self)
        }
        self.init(float(pair.v0), float(pair.v1), float(pair.v2), float(pair.v3))
    }
}

/// Widened: two sub-steps per K-pair, odd k then even k. 4 rows: LLVM loads the pair's 4
/// weight vectors once and broadcasts both activations of every row ahead, so a tile holds
/// 16 accumulators, 8 broadcasts, 4 packed and 2 widened weights and the mask. With 6 rows
/// (24 accumulators, 12 broadcasts) it spilled accumulators to the stack every K-pair, and
/// MiniLM's BF16 pass at 1x128 took 32.6 ms against 27.2.
private struct WidenedBF16Kernel: PanelKernel {
    typealias MaximumRows = TileRows4
    static var subSteps: Int { 2 }
    /// Rounded activations, 2 · kPairs floats a row.
    let x: UnsafePointer<Float>
    let ldx: Int
    let panel: UnsafePointer<UInt32>
    let kPairs: Int
    var fullLoads: Int { kPairs }
    var tailSubSteps: Int { 0 }  // an odd k is padded with a zero weight and a zero activation
    var panelStart: UnsafeRawPointer { UnsafeRawPointer(panel) }

    @inline(__always) func load(_ index: Int) -> UnsafePointer<UInt32> { panel + index &* panelWidth }
    @inline(__always) func operand(_ load: UnsafePointer<UInt32>, subStep: Int) -> FloatTileRow {
        FloatTileRow(widening: load, subStep: subStep)
    }
    @inline(__always) func accumulate(_ acc: inout FloatTileRow, row: Int, load: Int, subStep: Int, _ w: FloatTileRow) {
        acc.accumulate(x[row &* ldx &+ 2 &* load &+ (1 &- subStep)], w)
    }
}
