// Attention's two products on AMX tiles in BF16: Q·Kᵀ and P·V (Attention.swift's fused loop,
// its online softmax in FP32 unchanged). The operands are packed as `BF16Attention` packs them,
// which is already the tiles' layout: Kᵀ as rows of key lanes per pair of d, V as rows of
// channel lanes per pair of keys, queries and probabilities as rows of pairs.

import SwiftBERTAMX

/// Which tiles a generic arithmetic runs on, as a type: the choice is made once per call of
/// `multiHeadAttention`, not per product.
protocol TileUnit {
    static var backend: TileBackend { get }
}

/// The CPU's tiles.
enum HardwareTiles: TileUnit {
    static var backend: TileBackend { .hardware }
}

/// The tile emulator in plain C.
enum EmulatedTiles: TileUnit {
    static var backend: TileBackend { .emulator }
}

/// BF16 attention with both products on `Unit`'s tiles (tdpbf16ps): BF16Attention's rounding and
/// packing, FP32 accumulation in the tiles' order of additions.
enum TileBF16Attention<Unit: TileUnit>: AttentionArithmetic {
    typealias Scalar = UInt32

    /// The vector step, for the protocol; the products below never call it.
    @inline(__always)
    static func step(_ acc: inout SIMD16<Float>, _ x: UInt32, _ w: SIMD16<UInt32>) { BF16Attention.step(&acc, x, w) }

    @inline(__always)
    static func withPackedKeysAndValues(k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, n: Int,
                                        _ scratch: AttentionScratch,
                                        _ body: (UnsafePointer<UInt32>, UnsafePointer<UInt32>) -> Void) {
        BF16Attention.withPackedKeysAndValues(k: k, v: v, ld: ld, n: n, scratch, body)
    }

    @inline(__always)
    static func queries(_ q: UnsafePointer<Float>, ld: Int, rows: Int, _ scratch: AttentionScratch) -> (UnsafePointer<UInt32>, Int, Int) {
        BF16Attention.queries(q, ld: ld, rows: rows, scratch)
    }

    @inline(__always)
    static func probabilities(_ p: UnsafePointer<Float>, ld: Int, rows: Int, cols: Int, _ scratch: AttentionScratch) -> (UnsafePointer<UInt32>, Int, Int) {
        BF16Attention.probabilities(p, ld: ld, rows: rows, cols: cols, scratch)
    }

    @inline(__always) static func valueRow(_ k0: Int) -> Int { BF16Attention.valueRow(k0) }

    @inline(__always)
    static func product(a: UnsafePointer<UInt32>, lda: Int, b: UnsafePointer<UInt32>, ldb: Int, depth: Int,
                        c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int, columns: Int, accumulate: Bool) {
        Unit.backend.bf16GEMM(a, lda * 4, Int32(rows), b, ldb * 4, TileBackend.contiguousPanels, Int32(columns), Int32(depth),
                              c, ldc * 4, accumulate ? 1 : 0)
    }
}
