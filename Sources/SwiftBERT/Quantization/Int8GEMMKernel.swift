// The INT8 micro-kernel: a tile of up to 5 rows × 64 output channels, accumulated in
// registers over the whole K, then dequantised and stored in one pass.
//
// Why this shape of code: plain Swift cannot call VNNI intrinsics, and LLVM does not turn
// byte-wise 4-way dot products written in Swift into vpdpbusd. What it does reliably is
// lower `acc &+= broadcast(a) &* w` on SIMD16<Int32>, when `a` is known to fit in 16 bits
// unsigned and `w` in 16 bits signed, to one vpdpwssd (16 multiply-adds per instruction;
// with a signed `a` it uses vpmulld + vpaddd, 40 % slower). So activations are fed as
// unsigned bytes (q + 128, corrected in the epilogue) and weights are sign-extended out of
// their packed bytes with two shifts, shared by all rows of the tile. 5 rows × 4 vectors =
// 20 accumulators, plus 4 raw and 4 extracted weight vectors and a broadcast, fit in the 32
// zmm registers.
// Check the assembly when changing anything here: the 5-row loop should be 80 vpdpwssd,
// 28 shifts, 20 broadcasts and 4 loads per K-quad, with no stack traffic (docs/int8-gemm.md).
// With AVX-512 VNNI, SwiftBERTVNNI gives the one instruction LLVM will not emit, vpdpbusd,
// and the `int8Tile` compiled under SWIFTBERT_VNNI replaces this kernel.

#if SWIFTBERT_VNNI
import SwiftBERTVNNI
#endif

/// Which INT8 micro-kernel this build runs (for benchmark reports).
#if SWIFTBERT_VNNI
public let int8Kernel = "vpdpbusd (AVX-512 VNNI)"
#else
public let int8Kernel = "vpdpwssd (plain Swift)"
#endif

/// Rows of activations per micro-kernel tile.
let int8TileRows = 5

/// 64 Int32 lanes: one row of a tile's accumulators, or one K-quad of a weight panel.
struct Int32TileRow {
    var v0 = SIMD16<Int32>(), v1 = SIMD16<Int32>(), v2 = SIMD16<Int32>(), v3 = SIMD16<Int32>()

    init() {}

    init(v0: SIMD16<Int32>, v1: SIMD16<Int32>, v2: SIMD16<Int32>, v3: SIMD16<Int32>) {
        (self.v0, self.v1, self.v2, self.v3) = (v0, v1, v2, v3)
    }

    /// One K-quad of a panel: 256 bytes, 4 k for each of 64 channels.
    @inline(__always)
    init(loadingQuad p: UnsafeRawPointer) {
        v0 = p.loadUnaligned(fromByteOffset: 0, as: SIMD16<Int32>.self)
        v1 = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Int32>.self)
        v2 = p.loadUnaligned(fromByteOffset: 128, as: SIMD16<Int32>.self)
        v3 = p.loadUnaligned(fromByteOffset: 192, as: SIMD16<Int32>.self)
    }

    /// The weights of K-step t (0...3) of a quad: byte t of every lane, sign-extended.
    @inline(__always)
    func signedBytes(_ t: Int) -> Int32TileRow {
        let left = Int32(24 - 8 * t)
        return Int32TileRow(v0: (v0 &<< left) &>> 24, v1: (v1 &<< left) &>> 24,
                            v2: (v2 &<< left) &>> 24, v3: (v3 &<< left) &>> 24)
    }

    /// self += a · w lane-wise. `a` being an unsigned byte is what lets LLVM use vpdpwssd.
    @inline(__always)
    mutating func accumulate(_ a: UInt8, _ w: Int32TileRow) {
        let broadcast = SIMD16<Int32>(repeating: Int32(a))
        v0 &+= broadcast &* w.v0
        v1 &+= broadcast &* w.v1
        v2 &+= broadcast &* w.v2
        v3 &+= broadcast &* w.v3
    }
}

/// Where and how a tile's accumulators become output floats:
/// y[r, n] = Float(acc − 128·Σw[n]) · (rowScale[r] · scale[n]) + bias[n].
/// All pointers are at the panel's first channel; only `columns` (relative to it) are written.
struct Int8TileEpilogue {
    let y: UnsafeMutablePointer<Float>
    let ldy: Int
    let rowScales: UnsafePointer<Float>
    let columnScales: UnsafePointer<Float>
    let corrections: UnsafePointer<Int32>
    let bias: UnsafePointer<Float>?
    let columns: Range<Int>

    /// Stores the first `rows` (1...5) of a tile's accumulators.
    @inline(__always)
    func store(_ acc0: Int32TileRow, _ acc1: Int32TileRow, _ acc2: Int32TileRow, _ acc3: Int32TileRow,
               _ acc4: Int32TileRow, rows: Int) {
        store(acc0, row: 0)
        if rows > 1 { store(acc1, row: 1) }
        if rows > 2 { store(acc2, row: 2) }
        if rows > 3 { store(acc3, row: 3) }
        if rows > 4 { store(acc4, row: 4) }
    }

    @inline(__always)
    func store(_ acc: Int32TileRow, row: Int) {
        // From a stack copy, so one plain loop (which LLVM vectorises) converts, scales,
        // adds the bias and handles a partial panel.
        withUnsafeBytes(of: acc) { lanes in
            let rowScale = rowScales[row]
            let out = y + row * ldy
            @inline(__always) func lane(_ j: Int) -> Int32 { lanes.load(fromByteOffset: j * 4, as: Int32.self) }
            if let bias {
                for j in columns {
                    out[j] = Float(lane(j) &- corrections[j]) * (rowScale * columnScales[j]) + bias[j]
                }
            } else {
                for j in columns {
                    out[j] = Float(lane(j) &- corrections[j]) * (rowScale * columnScales[j])
                }
            }
        }
    }
}

/// A tile's row count as a type, so that each count gets its own specialised copy of the
/// kernel (rows a tile does not have then cost nothing; a `rows` argument to an inlined
/// function was instead merged back into one loop full of branches).
protocol TileRowCount { static var rows: Int { get } }
enum TileRows1: TileRowCount { static var rows: Int { 1 } }
enum TileRows2: TileRowCount { static var rows: Int { 2 } }
enum TileRows3: TileRowCount { static var rows: Int { 3 } }
enum TileRows4: TileRowCount { static var rows: Int { 4 } }
enum TileRows5: TileRowCount { static var rows: Int { 5 } }

#if SWIFTBERT_VNNI
/// One tile: `Rows.rows` (1...5) rows of u8 activations (stride `lda`, K padded to whole
/// quads) times one packed 64-channel panel, then the epilogue. With vpdpbusd: a K-quad's 4
/// activation bytes of a row, broadcast as one Int32, times the quad's 4 signed bytes per
/// channel, one instruction per 16 channels: 20 vpdpbusd and 5 broadcasts per K-quad.
@inline(never)
private func int8Tile<Rows: TileRowCount>(_: Rows.Type, activations a0: UnsafePointer<UInt8>, lda: Int,
                                          panel: UnsafeRawPointer, kQuads: Int, epilogue: Int8TileEpilogue) {
    let rows = Rows.rows
    let a = UnsafeRawPointer(a0)
    var acc0 = Int32TileRow(), acc1 = Int32TileRow(), acc2 = Int32TileRow()
    var acc3 = Int32TileRow(), acc4 = Int32TileRow()
    @inline(__always) func accumulate(_ acc: inout Int32TileRow, _ row: Int, _ quad: Int, _ w: Int32TileRow) {
        let bytes = SIMD16<Int32>(repeating: a.loadUnaligned(fromByteOffset: row * lda + quad * 4, as: Int32.self))
        acc.v0 = dotBytes(acc.v0, unsigned: bytes, signed: w.v0)
        acc.v1 = dotBytes(acc.v1, unsigned: bytes, signed: w.v1)
        acc.v2 = dotBytes(acc.v2, unsigned: bytes, signed: w.v2)
        acc.v3 = dotBytes(acc.v3, unsigned: bytes, signed: w.v3)
    }
    for quad in 0..<kQuads {
        let w = Int32TileRow(loadingQuad: panel + quad * Int8PanelLayout.quadBytes)
        accumulate(&acc0, 0, quad, w)
        if rows > 1 { accumulate(&acc1, 1, quad, w) }
        if rows > 2 { accumulate(&acc2, 2, quad, w) }
        if rows > 3 { accumulate(&acc3, 3, quad, w) }
        if rows > 4 { accumulate(&acc4, 4, quad, w) }
    }
    epilogue.store(acc0, acc1, acc2, acc3, acc4, rows: rows)
}

#else
/// One tile, as above, with vpdpwssd (see the top of the file).
@inline(never)
private func int8Tile<Rows: TileRowCount>(_: Rows.Type, activations a0: UnsafePointer<UInt8>, lda: Int,
                                          panel: UnsafeRawPointer, kQuads: Int, epilogue: Int8TileEpilogue) {
    let rows = Rows.rows
    let a1 = a0 + lda, a2 = a1 + lda, a3 = a2 + lda, a4 = a3 + lda
    var acc0 = Int32TileRow(), acc1 = Int32TileRow(), acc2 = Int32TileRow()
    var acc3 = Int32TileRow(), acc4 = Int32TileRow()
    for quad in 0..<kQuads {
        let packed = Int32TileRow(loadingQuad: panel + quad * Int8PanelLayout.quadBytes)
        @inline(__always) func step(_ t: Int) {
            let w = packed.signedBytes(t)
            let k = quad * Int8PanelLayout.kGroup + t
            acc0.accumulate(a0[k], w)
            if rows > 1 { acc1.accumulate(a1[k], w) }
            if rows > 2 { acc2.accumulate(a2[k], w) }
            if rows > 3 { acc3.accumulate(a3[k], w) }
            if rows > 4 { acc4.accumulate(a4[k], w) }
        }
        step(0); step(1); step(2); step(3)
    }
    epilogue.store(acc0, acc1, acc2, acc3, acc4, rows: rows)
}

#endif

/// Runs the tile kernel specialised for `rows` (1...5).
func int8TileKernel(rows: Int, activations: UnsafePointer<UInt8>, lda: Int,
                    panel: UnsafeRawPointer, kQuads: Int, epilogue: Int8TileEpilogue) {
    switch rows {
    case 5: int8Tile(TileRows5.self, activations: activations, lda: lda, panel: panel, kQuads: kQuads, epilogue: epilogue)
    case 4: int8Tile(TileRows4.self, activations: activations, lda: lda, panel: panel, kQuads: kQuads, epilogue: epilogue)
    case 3: int8Tile(TileRows3.self, activations: activations, lda: lda, panel: panel, kQuads: kQuads, epilogue: epilogue)
    case 2: int8Tile(TileRows2.self, activations: activations, lda: lda, panel: panel, kQuads: kQuads, epilogue: epilogue)
    default: int8Tile(TileRows1.self, activations: activations, lda: lda, panel: panel, kQuads: kQuads, epilogue: epilogue)
    }
}
