import Foundation
import XCTest
@testable import SwiftBERTKernels
import SwiftBERTAMX

/// Issue 47: the Linear layers on AMX tiles. On every machine the blocks run through the tile
/// emulator (Sources/SwiftBERTAMX/emulator.c): its arithmetic against a Swift statement of the
/// instructions, and the whole Linear path (blocking, tails, epilogues, column and row blocks)
/// against the vector kernels. On a machine with AMX the tiles are checked against the emulator.
final class TileKernelTests: XCTestCase {
    /// Rows across a tile (16) and a block (32); k across 16-lane steps (32 bf16, 64 int8) and odd;
    /// n across panels of 64.
    let shapes: [(m: Int, k: Int, n: Int)] = [
        (1, 1, 1), (1, 2, 64), (15, 31, 65), (16, 32, 64), (17, 33, 130), (31, 34, 3), (32, 64, 128),
        (33, 66, 191), (70, 130, 64), (5, 768, 96), (40, 200, 70),
    ]

    // MARK: - The emulator's arithmetic

    /// tdpbusd: Σ u8 · s8 in Int32, every quad of every step, rows across both tiles.
    func testEmulatedInt8BlockGivesTheExactSums() {
        var random = TokenizerTestRandom(seed: 3)
        for (rows, kQuads) in [(1, 1), (16, 16), (17, 17), (32, 33), (9, 40)] {
            let aStride = kQuads * 4 + 8  // a row stride wider than the row, as a caller's may be
            let a = (0..<(rows * aStride)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let b = (0..<(kQuads * 256)).map { _ in Int8.random(in: -128...127, using: &random) }
            var c = [Int32](repeating: 0, count: 32 * 64)
            swiftbert_emulated_int8_gemm(a, aStride, Int32(rows), b, 256, 256, 64, Int32(kQuads), &c, 256, 0)
            for r in 0..<rows {
                for j in 0..<64 {
                    var sum: Int32 = 0
                    for q in 0..<kQuads {
                        for i in 0..<4 { sum &+= Int32(a[r * aStride + q * 4 + i]) * Int32(b[q * 256 + j * 4 + i]) }
                    }
                    XCTAssertEqual(c[r * 64 + j], sum, "rows \(rows) kQuads \(kQuads) at (\(r), \(j))")
                }
            }
        }
    }

    /// tdpbf16ps as Intel's SDM states it, written again here in Swift: per instruction (16
    /// pairs) the even and the odd products summed apart from zero, then added to each other,
    /// then to the accumulator; denormal inputs read as zero, denormal results flushed. Bit for
    /// bit, on random values, with denormals, signed zeros, and an odd number of pairs.
    func testEmulatedBF16BlockFollowsTheSDMArithmetic() {
        var random = TokenizerTestRandom(seed: 5)
        for (rows, kPairs) in [(1, 1), (16, 16), (17, 23), (32, 48), (3, 5)] {
            var a = (0..<(rows * kPairs)).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) & 0xBFFF_BFFF }
            var b = (0..<(kPairs * 64)).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) & 0xBFFF_BFFF }
            a[0] = 0x8000_0001  // -0 (odd k) and a denormal (even k)
            b[min(5, b.count - 1)] = 0x0001_8000  // a denormal (odd k) and -0 (even k)
            var c = [Float](repeating: .nan, count: 32 * 64)
            swiftbert_emulated_bf16_gemm(a, kPairs * 4, Int32(rows), b, 256, 256, 64, Int32(kPairs), &c, 256, 0)
            for r in 0..<rows {
                for j in 0..<64 {
                    var acc: Float = 0
                    for step in stride(from: 0, to: kPairs, by: 16) {
                        var (even, odd): (Float, Float) = (0, 0)
                        for p in step..<(step + 16) {
                            let (x, w) = p < kPairs ? (a[r * kPairs + p], b[p * 64 + j]) : (0, 0)
                            even = Self.flushed(even + Self.bf16(x & 0xFFFF) * Self.bf16(w & 0xFFFF))
                            odd = Self.flushed(odd + Self.bf16(x >> 16) * Self.bf16(w >> 16))
                        }
                        acc = Self.flushed(acc + Self.flushed(even + odd))
                    }
                    XCTAssertEqual(c[r * 64 + j].bitPattern, acc.bitPattern, "rows \(rows) kPairs \(kPairs) at (\(r), \(j))")
                }
            }
        }
    }

    /// The general product as attention calls it: strides wider than the rows, 16 to 80 columns
    /// (one or two tiles of a block, several blocks), accumulating into what c holds. INT8
    /// against exact sums; BF16 against the Swift statement above, from c's value.
    func testEmulatedProductsTakeStridesColumnsAndAccumulate() {
        var random = TokenizerTestRandom(seed: 7)
        for (rows, cols, depth) in [(3, 16, 5), (17, 48, 17), (33, 80, 33)] {
            let (aStride, bStride, cStride) = (depth + 3, cols + 8, cols + 4)  // in lanes
            let a = (0..<(rows * aStride)).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) & 0xBFFF_BFFF }
            let b = (0..<(depth * bStride)).map { _ in UInt32.random(in: 0...UInt32.max, using: &random) & 0xBFFF_BFFF }
            let start = (0..<(rows * cStride)).map { _ in Float.random(in: -8...8, using: &random) }
            var c = start
            swiftbert_emulated_bf16_gemm(a, aStride * 4, Int32(rows), b, bStride * 4, 256, Int32(cols), Int32(depth), &c, cStride * 4, 1)
            var sums = start.map { Int32(bitPattern: $0.bitPattern) }
            a.withUnsafeBytes { a8 in
                b.withUnsafeBytes { b8 in
                    swiftbert_emulated_int8_gemm(a8.baseAddress!.assumingMemoryBound(to: UInt8.self), aStride * 4, Int32(rows),
                                                 b8.baseAddress!.assumingMemoryBound(to: Int8.self), bStride * 4, 256, Int32(cols),
                                                 Int32(depth), &sums, cStride * 4, 1)
                }
            }
            for r in 0..<rows {
                for j in 0..<cols {
                    var acc = start[r * cStride + j]
                    for step in stride(from: 0, to: depth, by: 16) {
                        var (even, odd): (Float, Float) = (0, 0)
                        for p in step..<(step + 16) {
                            let (x, w) = p < depth ? (a[r * aStride + p], b[p * bStride + j]) : (0, 0)
                            even = Self.flushed(even + Self.bf16(x & 0xFFFF) * Self.bf16(w & 0xFFFF))
                            odd = Self.flushed(odd + Self.bf16(x >> 16) * Self.bf16(w >> 16))
                        }
                        acc = Self.flushed(acc + Self.flushed(even + odd))
                    }
                    XCTAssertEqual(c[r * cStride + j].bitPattern, acc.bitPattern, "bf16 rows \(rows) cols \(cols) at (\(r), \(j))")
                    var sum = Int32(bitPattern: start[r * cStride + j].bitPattern)
                    for p in 0..<depth {
                        for i in 0..<4 {
                            let x = Int32((a[r * aStride + p] >> (8 * i)) & 0xFF), w = Int32(Int8(truncatingIfNeeded: b[p * bStride + j] >> (8 * i)))
                            sum &+= x * w
                        }
                    }
                    XCTAssertEqual(sums[r * cStride + j], sum, "int8 rows \(rows) cols \(cols) at (\(r), \(j))")
                }
            }
            // Past the columns and rows given, c is untouched.
            for r in 0..<rows { for j in cols..<cStride { XCTAssertEqual(c[r * cStride + j], start[r * cStride + j]) } }
        }
    }

    // MARK: - The Linear path on tiles

    /// INT8 Linear layers on (emulated) tiles give the vector kernel's floats bit for bit: the
    /// same Int32 sums through the same epilogue. Whole calls, column blocks and row blocks.
    func testInt8LinearOnTilesIsBitIdenticalToTheVectorKernel() {
        var random = TestRandom(seed: 21)
        for (m, k, n) in shapes {
            let x = random.floats(m * k, scale: 2), w = random.floats(n * k, scale: 0.1), bias = random.floats(n, scale: 1)
            let weights = PackedInt8Matrix(weights: w, n: n, k: k)
            let vector = Int8Activations(tiles: nil), tiles = Int8Activations(tiles: .emulator)
            vector.quantize(x, m: m, k: k)
            tiles.quantize(x, m: m, k: k)
            var expected = [Float](repeating: .nan, count: m * n), y = expected
            weights.multiply(vector, bias: bias, into: &expected, columns: 0..<n)
            weights.multiply(tiles, bias: bias, into: &y, columns: 0..<n)
            XCTAssertEqual(y.map(\.bitPattern), expected.map(\.bitPattern), "m \(m) k \(k) n \(n)")
            assertBlocksMatchTheWhole(m: m, n: n, whole: y) { y, rows, columns in
                weights.multiply(tiles, bias: bias, into: y, rows: rows, columns: columns)
            }
        }
    }

    /// BF16 Linear layers on (emulated) tiles against Σ bf16(x)·bf16(w) in Double: within the
    /// summation error of k + 1 float additions (the bound BF16GEMMTests holds the vector
    /// kernels to; the tiles add in another order), then column and row blocks bit for bit.
    func testBF16LinearOnTilesMatchesTheReference() {
        var random = TestRandom(seed: 22)
        for (m, k, n) in shapes {
            let x = random.floats(m * k, scale: 2), w = random.floats(n * k, scale: 0.1), bias = random.floats(n, scale: 1)
            let packed = PackedBF16Matrix(w, n: n, k: k)
            let activations = BF16Activations(tiles: .emulator)
            activations.round(x, m: m, k: k)
            var y = [Float](repeating: .nan, count: m * n)
            packed.multiply(activations, bias: bias, into: &y, columns: 0..<n)
            BF16GEMMTests.assertMatchesReference(y, x: x, m: m, w: w, n: n, k: k, bias: bias, "tiles, m \(m) k \(k) n \(n)")
            assertBlocksMatchTheWhole(m: m, n: n, whole: y) { y, rows, columns in
                packed.multiply(activations, bias: bias, into: y, rows: rows, columns: columns)
            }
        }
    }

    // MARK: - The hardware

    /// On a CPU with AMX: the tiles and the emulator on the same products, bit for bit in both
    /// INT8 and BF16 (first measured on an Emerald Rapids Xeon, 2026-11-28: the emulator's
    /// order of BF16 additions is the hardware's, denormals and signed zeros included).
    func testTilesAgreeWithTheirEmulator() throws {
        try XCTSkipUnless(TileBackend.hardwareAvailable,
                          "no AMX here (or the kernel did not grant tile data): the tiles cannot run, the emulator tests above ran instead")
        var random = TokenizerTestRandom(seed: 9)
        var compared = 0
        // Rows across one and two tiles and several row blocks; columns in one or two tiles of a
        // block and several blocks; depth across and between 16-lane steps; strides wider than
        // the rows; overwriting and accumulating. The panel shape (64 columns, 256-byte rows) is
        // the Linear layers', also several panels a call, apart (`panels`); the others are attention's.
        for (rows, cols, depth, accumulate, panels) in [
            (1, 64, 1, false, false), (16, 64, 16, false, false), (17, 64, 23, false, false), (32, 64, 48, true, false),
            (32, 64, 192, false, false), (5, 64, 384, true, false), (24, 256, 16, false, false), (70, 48, 33, true, false),
            (24, 32, 128, true, false), (33, 16, 77, true, false), (32, 256, 96, false, true), (40, 192, 41, true, true),
            (7, 128, 200, false, true),
        ] {
            // Panelled: each 64-column panel is `depth` rows of 256 bytes, the panels 64 bytes apart more.
            let (aStride, cStride) = (depth * 4 + 12, cols * 4 + 32)
            let (bStride, bPanel) = panels ? (256, depth * 256 + 64) : (cols * 4 + 64, 256)
            let bBytes = panels ? (cols / 64) * bPanel : depth * bStride
            let a8 = (0..<(rows * aStride)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let b8 = (0..<bBytes).map { _ in Int8.random(in: -128...127, using: &random) }
            let start = (0..<(rows * cStride / 4)).map { _ in Int32.random(in: .min ... .max, using: &random) }
            var hardware = start, emulated = start
            swiftbert_amx_int8_gemm(a8, aStride, Int32(rows), b8, bStride, bPanel, Int32(cols), Int32(depth), &hardware, cStride, accumulate ? 1 : 0)
            swiftbert_emulated_int8_gemm(a8, aStride, Int32(rows), b8, bStride, bPanel, Int32(cols), Int32(depth), &emulated, cStride, accumulate ? 1 : 0)
            XCTAssertEqual(hardware, emulated, "int8 rows \(rows) cols \(cols) quads \(depth) panels \(panels)")

            // BF16 of mixed signs and magnitudes, with denormals and signed zeros among them.
            func value(_ scale: Float) -> UInt32 {
                switch UInt32.random(in: 0..<40, using: &random) {
                case 0: 0x0001 | (UInt32.random(in: 0...1, using: &random) << 15)  // a denormal
                case 1: 0x8000  // -0
                default: BFloat16.bits(Float.random(in: -scale...scale, using: &random))
                }
            }
            let a = (0..<(rows * aStride / 4)).map { _ in value(2) | value(2) << 16 }
            let b = (0..<(bBytes / 4)).map { _ in value(1) | value(1) << 16 }
            let floats = (0..<(rows * cStride / 4)).map { _ in Float.random(in: -4...4, using: &random) }
            var tiles = floats, emulator = floats
            swiftbert_amx_bf16_gemm(a, aStride, Int32(rows), b, bStride, bPanel, Int32(cols), Int32(depth), &tiles, cStride, accumulate ? 1 : 0)
            swiftbert_emulated_bf16_gemm(a, aStride, Int32(rows), b, bStride, bPanel, Int32(cols), Int32(depth), &emulator, cStride, accumulate ? 1 : 0)
            XCTAssertEqual(tiles.map(\.bitPattern), emulator.map(\.bitPattern), "bf16 rows \(rows) cols \(cols) pairs \(depth): not bit for bit")
            compared += rows * cols
        }
        print("tiles | int8 and bf16 bit-identical to the emulator on \(compared) values each")
    }

    /// What detection says agrees with /proc/cpuinfo: no AMX flag, no tiles.
    func testDetectionAgreesWithTheCPU() throws {
        let cpuinfo = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let listed = ["amx_tile", "amx_bf16", "amx_int8"].allSatisfy { cpuinfo.contains(" \($0)") }
        if !listed { XCTAssertFalse(TileBackend.hardwareAvailable, "tiles detected on a CPU whose flags do not list AMX") }
        let expected: TileBackend? = switch ProcessInfo.processInfo.environment["SWIFTBERT_ISA"] {
        case "amx-emulator": .emulator
        case "avx512", "vector": nil
        default: TileBackend.hardwareAvailable ? .hardware : nil
        }
        XCTAssertEqual(TileBackend.preferred, expected)
        XCTAssertTrue(KernelReport.current.matrixUnit.hasPrefix(TileBackend.preferred == nil ? "vector units" : "AMX tiles"))
        print("tiles | this machine: \(KernelReport.current.matrixUnit)")
    }

    // MARK: - Support

    /// Column blocks on panel edges and off them, and row blocks across a 32-row block, each
    /// written alone into a fresh output: together they give `whole` bit for bit.
    private func assertBlocksMatchTheWhole(m: Int, n: Int, whole: [Float], file: StaticString = #filePath, line: UInt = #line,
                                           _ multiply: (UnsafeMutablePointer<Float>, Range<Int>, Range<Int>) -> Void) {
        let columnCut = min(n, n > 64 ? 64 : n / 2), rowCut = min(m, m > 32 ? 33 : m / 2)
        var y = [Float](repeating: .nan, count: m * n)
        for rows in [0..<rowCut, rowCut..<m] where !rows.isEmpty {
            for columns in [0..<columnCut, columnCut..<n] where !columns.isEmpty {
                y.withUnsafeMutableBufferPointer { multiply($0.baseAddress!, rows, columns) }
            }
        }
        XCTAssertEqual(y.map(\.bitPattern), whole.map(\.bitPattern), "blocks of m \(m) n \(n)", file: file, line: line)
    }

    private static func bf16(_ half: UInt32) -> Float {
        let bits = half << 16
        return bits & 0x7F80_0000 == 0 ? Float(bitPattern: bits & 0x8000_0000) : Float(bitPattern: bits)
    }

    private static func flushed(_ x: Float) -> Float { x.isSubnormal ? Float(sign: x.sign, exponent: 0, significand: 0) : x }
}
