// The INT8 inner product: u8 activations (q + 128) × s8 weights into Int32 accumulators, a
// tile of up to 6 rows (VNNI) or 5 rows × 64 output channels (MicroKernel.swift).
//
// With AVX-512 VNNI, SwiftBERTVNNI gives vpdpbusd: a K-quad's 4 activation bytes of a row,
// broadcast as one Int32, times the quad's 4 signed bytes per channel, one instruction per 16
// channels (24 vpdpbusd, 6 broadcasts and 4 loads per K-quad, in 29 registers).
//
// Without it, plain Swift cannot call VNNI intrinsics, and LLVM does not turn byte-wise 4-way
// dot products into vpdpbusd. What it does reliably is lower `acc &+= broadcast(a) &* w` on
// SIMD16<Int32>, when `a` is known to fit in 16 bits unsigned and `w` in 16 bits signed, to
// one vpdpwssd (16 multiply-adds per instruction; with a signed `a` it uses vpmulld + vpaddd,
// 40 % slower). So activations are fed as unsigned bytes (q + 128, corrected in the epilogue)
// and weights are sign-extended out of their packed bytes with two shifts, shared by all rows
// of the tile. 5 rows × 4 vectors = 20 accumulators, plus 4 raw and 4 extracted weight
// vectors and a broadcast, fit in the 32 zmm registers.
// Check the assembly when changing anything here: the 5-row loop should be 80 vpdpwssd,
// 28 shifts, 20 broadcasts and 4 loads per K-quad, with no stack traffic (docs/int8-gemm.md).

#if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
import SwiftBERTVNNI
#endif

extension TileRow where Scalar == Int32 {
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
        return Int32TileRow((v0 &<< left) &>> 24, (v1 &<< left) &>> 24, (v2 &<< left) &>> 24, (v3 &<< left) &>> 24)
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

    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
    /// self += Σ(t=0..3) u8(bytes.byte t) · s8(w.byte t) lane-wise: four vpdpbusd.
    @inline(__always)
    mutating func accumulate(quad bytes: Int32, _ w: Int32TileRow) {
        let broadcast = SIMD16<Int32>(repeating: bytes)
        v0 = dotBytes(v0, unsigned: broadcast, signed: w.v0)
        v1 = dotBytes(v1, unsigned: broadcast, signed: w.v1)
        v2 = dotBytes(v2, unsigned: broadcast, signed: w.v2)
        v3 = dotBytes(v3, unsigned: broadcast, signed: w.v3)
    }
    #endif
}

/// INT8 weights and activations: one K-quad per load; with VNNI one sub-step per quad, without
/// it four (one k at a time).
private struct Int8Kernel: PanelKernel {
    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
    typealias MaximumRows = TileRows6
    static var subSteps: Int { 1 }
    #else
    typealias MaximumRows = TileRows5
    static var subSteps: Int { 4 }
    #endif
    let activations: UnsafePointer<UInt8>
    let lda: Int
    let panel: UnsafeRawPointer
    let kQuads: Int
    var fullLoads: Int { kQuads }
    var tailSubSteps: Int { 0 }  // activations are padded to whole quads with zeros
    var panelStart: UnsafeRawPointer { UnsafeRawPointer(panel) }

    @inline(__always) func load(_ index: Int) -> Int32TileRow {
        Int32TileRow(loadingQuad: panel + index &* Int8PanelLayout.quadBytes)
    }

    #if SWIFTBERT_NATIVE_ISA && SWIFTBERT_HOST_VNNI
    @inline(__always) func operand(_ load: Int32TileRow, subStep: Int) -> Int32TileRow { load }
    @inline(__always) func accumulate(_ acc: inout Int32TileRow, row: Int, load: Int, subStep: Int, _ w: Int32TileRow) {
        acc.accumulate(quad: UnsafeRawPointer(activations).loadUnaligned(fromByteOffset: row &* lda &+ load &* 4, as: Int32.self), w)
    }
    #else
    @inline(__always) func operand(_ load: Int32TileRow, subStep: Int) -> Int32TileRow { load.signedBytes(subStep) }
    @inline(__always) func accumulate(_ acc: inout Int32TileRow, row: Int, load: Int, subStep: Int, _ w: Int32TileRow) {
        acc.accumulate(activations[row &* lda &+ load &* Int8PanelLayout.kGroup &+ subStep], w)
    }
    #endif
}

extension PackedInt8Matrix {
    /// y[rows, columns] = dequant(activations · Wᵀ)[rows, columns] + bias[columns], y [m × n]
    /// row-major, from activations already quantised (all rows unless `rows` says). Disjoint
    /// blocks may run on different threads with the same activations.
    func multiply(_ activations: Int8Activations, bias: UnsafePointer<Float>?, into y: UnsafeMutablePointer<Float>,
                  rows: Range<Int>? = nil, columns: Range<Int>, finished: FinishedBlock? = nil) {
        precondition(activations.k == k, "activations have \(activations.k) features, weights \(k)")
        precondition(columns.lowerBound >= 0 && columns.upperBound <= n, "columns \(columns) outside 0..<\(n)")
        let (n, stride, panelStride, kQuads) = (self.n, activations.stride, self.panelStride, self.kQuads)
        let packed = self.packed.baseAddress!
        paddedScales.withUnsafeBufferPointer { channelScales in
            shiftCorrections.withUnsafeBufferPointer { corrections in
                // Calibrated activations carry their own zero point's corrections.
                let offsets = activations.staticInput.map { UnsafePointer($0.corrections) } ?? corrections.baseAddress!
                @inline(__always) func epilogue(_ row: Int, _ first: Int, _ inPanel: Range<Int>) -> TileEpilogue {
                    TileEpilogue(y: y + row * n + first, ldy: n,
                                 scale: .perTokenAndChannel(token: activations.rowScales + row,
                                                            channel: channelScales.baseAddress! + first,
                                                            offset: offsets + first),
                                 bias: bias.map { $0 + first }, columns: inPanel)
                }
                if let tiles = activations.tiles {
                    // tdpbusd is vpdpbusd's arithmetic on tiles: u8 × s8 into int32, the same sums.
                    let (gemm, weights) = (tiles.int8GEMM, packed.assumingMemoryBound(to: Int8.self))
                    tileGEMM(rows: rows ?? 0..<activations.m, columns: columns, panelBytes: panelStride, accumulating: Int32.self,
                             block: { row, count, firstPanel, panels, out, ldOut in
                                 gemm(activations.quantized + row * stride, stride, Int32(count), weights + firstPanel * panelStride,
                                      panelWidth * 4, panelStride, Int32(panels * panelWidth), Int32(kQuads), out, ldOut * 4, 0)
                             }, epilogue: epilogue, finished: finished)
                    return
                }
                panelGEMM(rows: rows ?? 0..<activations.m, columns: columns, panelBytes: panelStride,
                          kernel: { row, panel in
                              Int8Kernel(activations: activations.quantized + row * stride, lda: stride,
                                         panel: packed + panel * panelStride, kQuads: kQuads)
                          },
                          epilogue: epilogue, finished: finished)
            }
        }
    }
}
