// Attention's one small GEMM: tiles of up to 6 rows × 64 columns in registers, for every
// `AttentionProduct`.

#if SWIFTBERT_NATIVE_ISA && (SWIFTBERT_HOST_BF16 || SWIFTBERT_HOST_VNNI)
import SwiftBERTVNNI
#endif

/// C[rows × columns] (+)= A[rows × depth] · B[depth × columns], columns a multiple of 16, in
/// tiles of up to 6 rows × 64 columns.
@inline(__always)
func attentionGEMM<A: AttentionProduct>(_: A.Type, a: UnsafePointer<A.Scalar>, lda: Int, b: UnsafePointer<A.Scalar>,
                                                   ldb: Int, depth: Int, c: UnsafeMutablePointer<Float>, ldc: Int, rows: Int,
                                                   columns: Int, accumulate: Bool) {
    var row = 0
    while row < rows {
        let tileRows = min(6, rows - row)
        var column = 0
        while column < columns {
            let vectors = min(4, (columns - column) / 16)
            let tile = AttentionTile<A>(a: a + row * lda, lda: lda, b: b + column, ldb: ldb, depth: depth,
                                        c: c + row * ldc + column, ldc: ldc, accumulate: accumulate)
            withTileRows(tileRows, upTo: TileRows6.self, AttentionTileRows(tile: tile, vectors: vectors))
            column += 16 * vectors
        }
        row += tileRows
    }
}

/// The tile for the row count `withTileRows` gives, then for its count of vectors.
struct AttentionTileRows<A: AttentionProduct>: TileRowsBody {
    let tile: AttentionTile<A>
    let vectors: Int
    @inline(__always)
    func callAsFunction<Rows: TileRowCount>(_: Rows.Type) { withTileRows(vectors, upTo: TileRows4.self, AttentionTileVectors<A, Rows>(tile: tile)) }
}

struct AttentionTileVectors<A: AttentionProduct, Rows: TileRowCount>: TileRowsBody {
    let tile: AttentionTile<A>
    @inline(__always)
    func callAsFunction<Vectors: TileRowCount>(_: Vectors.Type) { tile.run(Rows.self, Vectors.self) }
}

/// One tile of `attentionGEMM`: `Rows` rows × `Vectors` 16-lane vectors, kept in registers over
/// the whole depth.
struct AttentionTile<A: AttentionProduct> {
    let a: UnsafePointer<A.Scalar>
    let lda: Int
    let b: UnsafePointer<A.Scalar>
    let ldb: Int
    let depth: Int
    let c: UnsafeMutablePointer<Float>
    let ldc: Int
    let accumulate: Bool

    @inline(never)
    func run<Rows: TileRowCount, Vectors: TileRowCount>(_: Rows.Type, _: Vectors.Type) {
        let rows = Rows.rows, vectors = Vectors.rows
        var acc0 = FloatTileRow(), acc1 = FloatTileRow(), acc2 = FloatTileRow()
        var acc3 = FloatTileRow(), acc4 = FloatTileRow(), acc5 = FloatTileRow()
        @inline(__always) func load(_ acc: inout FloatTileRow, _ row: Int) {
            let p = UnsafeRawPointer(c + row * ldc)
            acc.v0 = p.loadUnaligned(as: SIMD16<Float>.self)
            if vectors > 1 { acc.v1 = p.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self) }
            if vectors > 2 { acc.v2 = p.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self) }
            if vectors > 3 { acc.v3 = p.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self) }
        }
        @inline(__always) func store(_ acc: FloatTileRow, _ row: Int) {
            let p = UnsafeMutableRawPointer(c + row * ldc)
            p.storeBytes(of: acc.v0, as: SIMD16<Float>.self)
            if vectors > 1 { p.storeBytes(of: acc.v1, toByteOffset: 64, as: SIMD16<Float>.self) }
            if vectors > 2 { p.storeBytes(of: acc.v2, toByteOffset: 128, as: SIMD16<Float>.self) }
            if vectors > 3 { p.storeBytes(of: acc.v3, toByteOffset: 192, as: SIMD16<Float>.self) }
        }
        /// body on each of the tile's rows and its accumulators, unrolled.
        @inline(__always) func forEachRow(_ body: (inout FloatTileRow, Int) -> Void) {
            body(&acc0, 0)
            if rows > 1 { body(&acc1, 1) }
            if rows > 2 { body(&acc2, 2) }
            if rows > 3 { body(&acc3, 3) }
            if rows > 4 { body(&acc4, 4) }
            if rows > 5 { body(&acc5, 5) }
        }
        if accumulate { forEachRow(load) }
        for i in 0..<depth {
            let w = UnsafeRawPointer(b + i * ldb)
            let w0 = w.loadUnaligned(as: SIMD16<A.Scalar>.self)
            let w1 = vectors > 1 ? w.loadUnaligned(fromByteOffset: 64, as: SIMD16<A.Scalar>.self) : SIMD16()
            let w2 = vectors > 2 ? w.loadUnaligned(fromByteOffset: 128, as: SIMD16<A.Scalar>.self) : SIMD16()
            let w3 = vectors > 3 ? w.loadUnaligned(fromByteOffset: 192, as: SIMD16<A.Scalar>.self) : SIMD16()
            @inline(__always) func step(_ acc: inout FloatTileRow, _ row: Int) {
                let x = a[row * lda + i]
                A.step(&acc.v0, x, w0)
                if vectors > 1 { A.step(&acc.v1, x, w1) }
                if vectors > 2 { A.step(&acc.v2, x, w2) }
                if vectors > 3 { A.step(&acc.v3, x, w3) }
            }
            forEachRow(step)
        }
        forEachRow { acc, row in store(acc, row) }
    }
}
