import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// The BF16 GEMM against a scalar reference of the same arithmetic (BF16-rounded x and W, exact
/// products, sums in Double), within FP32 summation error; and its layout, rounding and threads.
final class BF16GEMMTests: XCTestCase {
    /// Odd shapes: single rows and channels, odd K (a pair padded with zero), N across panel
    /// edges, M across tile edges (tiles are 6 rows with vdpbf16ps, 4 widened; panels 64 channels).
    let shapes: [(m: Int, k: Int, n: Int)] = [
        (1, 1, 1), (1, 7, 3), (2, 4, 64), (3, 5, 65), (5, 16, 17), (6, 33, 130), (7, 259, 70),
        (11, 64, 128), (13, 130, 191), (1, 768, 96),
    ]

    /// Round-to-nearest-even as PyTorch's c10::BFloat16 (round_to_nearest_even).
    func testRoundingIsToNearestEvenAndKeepsNaN() {
        let cases: [(UInt32, UInt32)] = [
            (0x3F80_0000, 0x3F80),  // 1.0 exactly
            (0x3F80_7FFF, 0x3F80),  // below half: down
            (0x3F80_8000, 0x3F80),  // tie, even below: down
            (0x3F81_8000, 0x3F82),  // tie, odd below: up to even
            (0x3F80_8001, 0x3F81),  // above half: up
            (0xBF81_8000, 0xBF82),  // sign kept
            (0x8000_0000, 0x8000),  // -0
            (0x7F80_0000, 0x7F80),  // +inf
            (0x7F7F_FFFF, 0x7F80),  // the largest float rounds to inf, as in PyTorch
            (0x7FC0_0001, 0x7FC0), (0xFF80_0001, 0x7FC0),  // NaNs: one quiet NaN
        ]
        for (input, expected) in cases {
            XCTAssertEqual(BFloat16.bits(Float(bitPattern: input)), expected, String(input, radix: 16))
        }
        XCTAssertEqual(BFloat16.pair(1, -2), 0xC000_3F80)
        XCTAssertEqual(BFloat16.float(low: 0xC000_3F80), 1)
        XCTAssertEqual(BFloat16.float(high: 0xC000_3F80), -2)
        // The 16-lane form gives the same bits, NaNs, infinities and ties among them.
        var lanes = SIMD16<UInt32>()
        for (i, (input, _)) in cases.enumerated() { lanes[i] = input }
        let rounded = BFloat16.bits(lanes)
        for i in 0..<16 { XCTAssertEqual(rounded[i], BFloat16.bits(Float(bitPattern: lanes[i])), "lane \(i)") }
    }

    /// `roundPairs` (16-pair vectors, then single pairs, then a last odd element) gives the
    /// pairs of the scalar rounding, bit for bit, at every length from 1 to 100 floats: a
    /// 32-wide head's queries (one vector), a Linear row (many), and the tails between.
    func testRoundPairsMatchesTheScalarPairsAtEveryLength() {
        var random = SystemRandomNumberGenerator()
        let specials: [UInt32] = [0x7FC0_0001, 0xFF80_0001, 0x7F80_0000, 0xFF80_0000, 0x7F7F_FFFF, 0x3F80_8000,
                                  0x3F81_8000, 0x8000_0000, 0x0000_0001, 0x8040_0000]
        for count in 1...100 {
            let x = (0..<count).map { i in
                i % 7 == 3 ? Float(bitPattern: specials[(i / 7) % specials.count]) : Float.random(in: -4...4, using: &random)
            }
            let pairs = (count + 1) / 2
            var out = [UInt32](repeating: 0xDEAD_BEEF, count: pairs + 1)
            x.withUnsafeBufferPointer { BFloat16.roundPairs($0.baseAddress!, count: count, into: &out) }
            for p in 0..<pairs {
                let expected = 2 * p + 1 < count ? BFloat16.pair(x[2 * p], x[2 * p + 1]) : BFloat16.bits(x[2 * p])
                XCTAssertEqual(out[p], expected, "count \(count), pair \(p)")
            }
            XCTAssertEqual(out[pairs], 0xDEAD_BEEF, "count \(count): nothing written past the pairs")
        }
    }

    func testPackedLayoutPutsEveryWeightAtItsDocumentedLaneAndPadsWithZeros() {
        let (n, k) = (70, 9)
        let w = (0..<(n * k)).map { Float($0 % 251) - 125 }  // exact in BF16
        let packed = PackedBF16Matrix(w, n: n, k: k)
        let lanes = 2 * 5 * 64  // 2 panels × 5 K-pairs × 64 channels
        var expected = [UInt32](repeating: 0, count: lanes)
        for c in 0..<n {
            for i in 0..<k {
                expected[(c / 64) * 5 * 64 + (i / 2) * 64 + c % 64] |= BFloat16.bits(w[c * k + i]) << (16 * UInt32(i % 2))
            }
        }
        XCTAssertEqual(Array(UnsafeBufferPointer(start: packed.lanes, count: lanes)), expected)
        var row = [Float](repeating: 0, count: k)
        packed.row(n - 1, into: &row)
        XCTAssertEqual(row, Array(w[(n - 1) * k ..< n * k]), "a row read back from the packed layout")
    }

    func testBF16LinearMatchesScalarReferenceOnOddShapes() {
        var random = TestRandom(seed: 11)
        let activations = BF16Activations()  // grows as needed: also checks reuse across shapes
        for (m, k, n) in shapes {
            let x = random.floats(m * k, scale: 2), w = random.floats(n * k, scale: 0.1), bias = random.floats(n, scale: 1)
            let packed = PackedBF16Matrix(w, n: n, k: k)
            var y = [Float](repeating: .nan, count: m * n)
            activations.round(x, m: m, k: k)
            packed.multiply(activations, bias: bias, into: &y, columns: 0..<n)
            Self.assertMatchesReference(y, x: x, m: m, w: w, n: n, k: k, bias: bias, "m \(m) k \(k) n \(n)")
        }
    }

    /// Both ways to multiply (vdpbf16ps where this build has it, and BF16 widened to FP32 for
    /// FMA) add the same products in the same order: their results are bit-identical, on
    /// shapes across the tile edges of both (6 and 4 rows) and an odd k.
    func testEveryBF16ProductGivesTheSameBits() {
        var random = TestRandom(seed: 15)
        for (m, k, n) in shapes + [(25, 385, 70), (4, 2, 64)] {
            let x = random.floats(m * k, scale: 2), w = random.floats(n * k, scale: 0.1), bias = random.floats(n, scale: 1)
            let packed = PackedBF16Matrix(w, n: n, k: k)
            var results: [[Float]] = []
            for product in BF16Product.allCases {
                let activations = BF16Activations(product: product, tiles: nil)  // the vector kernels
                activations.round(x, m: m, k: k)
                var y = [Float](repeating: .nan, count: m * n)
                packed.multiply(activations, bias: bias, into: &y, columns: 0..<n)
                Self.assertMatchesReference(y, x: x, m: m, w: w, n: n, k: k, bias: bias, "\(product) m \(m) k \(k) n \(n)")
                results.append(y)
            }
            for y in results.dropFirst() { XCTAssertEqual(y.map(\.bitPattern), results[0].map(\.bitPattern), "m \(m) k \(k) n \(n)") }
        }
    }

    func testColumnBlocksWriteOnlyTheirColumns() {
        let (m, n) = (7, 150)
        let (_, _, bias, packed, activations, whole) = randomProduct(seed: 12, m: m, k: 45, n: n)
        var y = [Float](repeating: -7, count: m * n)
        packed.multiply(activations, bias: bias, into: &y, columns: 10..<70)
        for row in 0..<m {
            for column in 0..<n {
                XCTAssertEqual(y[row * n + column], (10..<70).contains(column) ? whole[row * n + column] : -7, "[\(row), \(column)]")
            }
        }
        for block in [0..<10, 70..<129, 129..<150] { packed.multiply(activations, bias: bias, into: &y, columns: block) }
        XCTAssertEqual(y, whole)
    }

    /// The engine's one GEMM path (Linear rounds x once, then column blocks on threads) gives the
    /// single call's result, on 1…8 threads.
    func testLinearOnThreadsEqualsOneBF16GEMM() {
        let (m, k, n) = (9, 71, 300)
        let (x, w, bias, packed, _, single) = randomProduct(seed: 13, m: m, k: k, n: n)
        Self.assertMatchesReference(single, x: x, m: m, w: w, n: n, k: k, bias: bias, "single call")
        for threads in [1, 2, 3, 8] {
            XCTAssertEqual(linear(x, m: m, weight: packed, bias: bias, threads: threads, quantizesActivations: false),
                           single, "\(threads) threads")
        }
    }

    /// The public layer in `.bf16` runs the same kernel.
    func testLinearLayerInBF16MatchesTheReference() throws {
        var random = TestRandom(seed: 14)
        let (m, k, n) = (17, 384, 200)
        let x = random.floats(m * k, scale: 1), w = random.floats(n * k, scale: 0.05), bias = random.floats(n, scale: 0.1)
        let layer = try LinearLayer(weights: w, bias: bias, n: n, k: k, precision: .bf16)
        var y = [Float](repeating: .nan, count: m * n)
        layer(x, m: m, into: &y, threads: 2)
        Self.assertMatchesReference(y, x: x, m: m, w: w, n: n, k: k, bias: bias, "LinearLayer")
    }

    // MARK: - Reference

    /// x [m × k], w [n × k] and bias drawn from `seed` (scale 1), w packed, x rounded, and the
    /// kernel's product over all columns in one call.
    private func randomProduct(seed: UInt64, m: Int, k: Int, n: Int)
        -> (x: [Float], w: [Float], bias: [Float], packed: PackedBF16Matrix, activations: BF16Activations, product: [Float]) {
        var random = TestRandom(seed: seed)
        let x = random.floats(m * k, scale: 1), w = random.floats(n * k, scale: 1), bias = random.floats(n, scale: 1)
        let packed = PackedBF16Matrix(w, n: n, k: k)
        let activations = BF16Activations()
        activations.round(x, m: m, k: k)
        var product = [Float](repeating: .nan, count: m * n)
        packed.multiply(activations, bias: bias, into: &product, columns: 0..<n)
        return (x, w, bias, packed, activations, product)
    }

    /// Σ bf16(x)·bf16(w) in Double plus the bias; the kernel's FP32 sums may differ by the
    /// summation error of k + 1 float additions, bounded by Σ|terms| · (k + 1) · 2⁻²³.
    /// Also TileKernelTests' check of the Linear layers on tiles (another order of the same sums).
    static func assertMatchesReference(_ y: [Float], x: [Float], m: Int, w: [Float], n: Int, k: Int, bias: [Float],
                                        _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        let bx = x.map(BFloat16.rounded), bw = w.map(BFloat16.rounded)
        for r in 0..<m {
            for c in 0..<n {
                var sum = Double(bias[c]), magnitude = abs(Double(bias[c]))
                for i in 0..<k {
                    let product = Double(bx[r * k + i]) * Double(bw[c * k + i])
                    sum += product
                    magnitude += abs(product)
                }
                XCTAssertEqual(Double(y[r * n + c]), sum, accuracy: magnitude * Double(k + 1) * 1.2e-7,
                               "\(message) at (\(r), \(c))", file: file, line: line)
            }
        }
    }
}
