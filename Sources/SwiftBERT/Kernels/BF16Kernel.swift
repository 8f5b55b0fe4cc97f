// The BF16 inner product: BF16 activations × BF16 weights into FP32 accumulators, a tile of up
// to 6 rows × 64 output channels (MicroKernel.swift).
//
// BF16 is the top half of an FP32: 8 exponent bits, 7 mantissa bits. Weights are rounded from
// the FP32 file when the model loads; each Linear rounds its input activations once (both
// round-to-nearest-even, as PyTorch's `.to(torch.bfloat16)`); products of two BF16 values are
// exact in FP32 and every sum is FP32, so only the two roundings differ from FP32.
//
// With AVX512_BF16, SwiftBERTVNNI gives vdpbf16ps: a row's pair of activations (k, k + 1),
// broadcast as one 32-bit lane, times the pair's weights of 16 channels, added into 16 floats:
// 32 multiply-adds per instruction, twice FP32's FMA. Per K-pair, a 6-row tile runs 24
// vdpbf16ps on 4 loads and 6 broadcasts: 24 accumulators + 4 weights + 1 broadcast registers.
//
// Without it (other CPUs, portable builds), BF16 becomes FP32 by a shift (the even k of a pair)
// or a mask (the odd k), and FMA accumulates, in the instruction's order: odd k, then even k.

import Foundation
#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
import SwiftBERTVNNI
#endif

/// Which BF16 micro-kernel this build runs (for benchmark reports).
#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
let bf16Kernel = "vdpbf16ps (AVX512_BF16)"
#elseif SWIFTBERT_NATIVE_ISA
let bf16Kernel = "widened to FP32 by shifts, then FMA (plain Swift)"
#else
let bf16Kernel = "widened to FP32 by shifts, then multiply and add (plain Swift; no FMA in a portable build)"
#endif

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

    /// x[0..<count] as pairs, the last odd element paired with zero: one row of activations.
    @inline(__always)
    static func roundPairs(_ x: UnsafePointer<Float>, count: Int, into out: UnsafeMutablePointer<UInt32>) {
        for i in 0..<(count / 2) { out[i] = pair(x[2 * i], x[2 * i + 1]) }
        if count % 2 == 1 { out[count / 2] = bits(x[count - 1]) }
    }

    @inline(__always)
    static func float(low pair: UInt32) -> Float { Float(bitPattern: pair << 16) }
    @inline(__always)
    static func float(high pair: UInt32) -> Float { Float(bitPattern: pair & 0xFFFF_0000) }

    /// x rounded to BF16 and back (for references and accuracy checks).
    static func rounded(_ x: Float) -> Float { float(low: bits(x)) }
}

/// The packed BF16 layout: output channels in panels of 64; inside a panel the input dimension
/// in pairs (k, k + 1), one 32-bit lane per channel and pair, even k in the low half. One
/// K-pair of a panel is 256 bytes (64 lanes), read as 4 vectors; k is padded with a zero weight
/// to whole pairs, n with zero channels to whole panels.
///
///     lane of W[c, i] = (c / 64) · kPairs · 64 + (i / 2) · 64 + c % 64, half i % 2
final class PackedBF16Matrix: @unchecked Sendable {
    /// Output channels.
    let n: Int
    /// Input features.
    let k: Int
    var kPairs: Int { (k + 1) / 2 }
    /// Lanes per panel.
    var panelStride: Int { kPairs * panelWidth }
    let lanes: UnsafeMutablePointer<UInt32>
    private let laneCount: Int

    /// Rounds and packs w [n × k] (row-major float), one panel per task of `threads`.
    init(_ w: UnsafePointer<Float>, n: Int, k: Int, threads: Int = 1) {
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
    func row(_ c: Int, into out: UnsafeMutablePointer<Float>) {
        let panel = lanes + (c / panelWidth) * panelStride + c % panelWidth
        for i in 0..<k {
            let pair = panel[(i / 2) * panelWidth]
            out[i] = i % 2 == 0 ? BFloat16.float(low: pair) : BFloat16.float(high: pair)
        }
    }

    /// y[rows, columns] = activations · Wᵀ[rows, columns] + bias[columns], y [m × n] row-major,
    /// from activations already rounded (all rows unless `rows` says). Disjoint blocks may run
    /// on different threads.
    func multiply(_ activations: BF16Activations, bias: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                  rows: Range<Int>? = nil, columns: Range<Int>, finished: FinishedBlock? = nil) {
        precondition(activations.k == k, "activations have \(activations.k) features, weights \(k)")
        precondition(columns.lowerBound >= 0 && columns.upperBound <= n, "columns \(columns) outside 0..<\(n)")
        let (n, kPairs, panelStride, lanes) = (self.n, self.kPairs, self.panelStride, self.lanes)
        panelGEMM(rows: rows ?? 0..<activations.m, columns: columns, panelBytes: panelStride * 4,
                  kernel: { row, panel in
                      BF16Kernel(activations: activations.pairs + row * kPairs, lda: kPairs,
                                 panel: lanes + panel * panelStride, kPairs: kPairs)
                  },
                  epilogue: { row, first, inPanel in
                      TileEpilogue(y: y + row * n + first, ldy: n, scale: .none, bias: bias + first, columns: inPanel)
                  }, finished: finished)
    }
}

/// The activations of one BF16 Linear call, rounded once and shared by every column block:
/// per row, kPairs lanes of two BF16 values (a last odd k pairs with zero). Owned by the forward
/// pass's scratch; it only allocates when a call needs more room than any before it.
final class BF16Activations: @unchecked Sendable {
    private(set) var m = 0
    private(set) var k = 0
    private(set) var pairs: UnsafeMutablePointer<UInt32>
    private var capacity = 1

    init() { pairs = .allocate(capacity: capacity) }
    deinit { pairs.deallocate() }

    /// Rounds x [m × k] to BF16, row by row (rows split across `threads`).
    func round(_ x: UnsafePointer<Float>, m: Int, k: Int, threads: Int = 1) {
        precondition(m >= 0 && k > 0, "BF16 activations need m ≥ 0 and k > 0")
        let kPairs = (k + 1) / 2
        if m * kPairs > capacity {
            pairs.deallocate()
            capacity = m * kPairs
            pairs = .allocate(capacity: capacity)
        }
        (self.m, self.k) = (m, k)
        let pairs = pairs
        parallelRows(m, columns: k, threads: threads) { rows in
            for row in rows { BFloat16.roundPairs(x + row * k, count: k, into: pairs + row * kPairs) }
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
#else
extension TileRow where Scalar == Float {
    /// The odd (sub-step 0) or even (sub-step 1) k of a K-pair of weights, as floats.
    @inline(__always)
    init(weightsOf pair: TileRow<UInt32>, subStep: Int) {
        @inline(__always) func float(_ v: SIMD16<UInt32>) -> SIMD16<Float> {
            unsafeBitCast(subStep == 0 ? v & 0xFFFF_0000 : v &<< 16, to: SIMD16<Float>.self)
        }
        self.init(float(pair.v0), float(pair.v1), float(pair.v2), float(pair.v3))
    }
}
#endif

/// BF16: one K-pair per load; with vdpbf16ps one sub-step, without it two (odd k, then even k).
private struct BF16Kernel: PanelKernel {
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
    static var tileRows: Int { 6 }
    static var subSteps: Int { 1 }
    #else
    static var tileRows: Int { 5 }  // 20 accumulators + 4 packed + 4 widened weights + 1 broadcast
    static var subSteps: Int { 2 }
    #endif
    let activations: UnsafePointer<UInt32>
    let lda: Int
    let panel: UnsafePointer<UInt32>
    let kPairs: Int
    var fullLoads: Int { kPairs }
    var tailSubSteps: Int { 0 }  // an odd k is padded with a zero weight and a zero activation

    @inline(__always) func load(_ index: Int) -> TileRow<UInt32> { TileRow(loadingPair: panel + index * panelWidth) }

    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_BF16
    @inline(__always) func operand(_ load: TileRow<UInt32>, subStep: Int) -> TileRow<UInt32> { load }
    @inline(__always) func accumulate(_ acc: inout FloatTileRow, row: Int, load: Int, subStep: Int, _ w: TileRow<UInt32>) {
        acc.accumulate(pair: activations[row * lda + load], w)
    }
    #else
    @inline(__always) func operand(_ load: TileRow<UInt32>, subStep: Int) -> FloatTileRow {
        FloatTileRow(weightsOf: load, subStep: subStep)
    }
    @inline(__always) func accumulate(_ acc: inout FloatTileRow, row: Int, load: Int, subStep: Int, _ w: FloatTileRow) {
        let pair = activations[row * lda + load]
        acc.accumulate(subStep == 0 ? BFloat16.float(high: pair) : BFloat16.float(low: pair), w)
    }
    #endif
}
