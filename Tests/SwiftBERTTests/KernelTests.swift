import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// The vectorisable erf and exp against the C library, and the reductions on awkward sizes.
final class KernelTests: XCTestCase {
    /// The packed FP32 kernel against a Float64 reference on shapes that leave partial tiles
    /// and panels, on column blocks that start and end inside panels, and against OpenBLAS.
    func testPackedSGEMMMatchesReferenceOnOddShapes() {
        var seed: UInt64 = 42
        func random() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 1000
        }
        for (m, k, n) in [(1, 1, 1), (7, 13, 70), (13, 64, 129), (6, 300, 64), (25, 97, 200)] {
            let x = (0..<m * k).map { _ in random() }, w = (0..<n * k).map { _ in random() }, bias = (0..<n).map { _ in random() }
            let packed = PackedFloatMatrix(w, n: n, k: k, threads: 2)
            for columns in [0..<n, (n / 3)..<(n - n / 4)] where !columns.isEmpty {
                var y = [Float](repeating: .nan, count: m * n)
                packed.multiply(x, m: m, bias: bias, into: &y, columns: columns)
                for r in 0..<m {
                    for c in 0..<n {
                        guard columns.contains(c) else { XCTAssertTrue(y[r * n + c].isNaN, "wrote outside its columns"); continue }
                        var expected = Double(bias[c]), magnitude = abs(Double(bias[c]))
                        for i in 0..<k {
                            expected += Double(x[r * k + i]) * Double(w[c * k + i])
                            magnitude += abs(Double(x[r * k + i]) * Double(w[c * k + i]))
                        }
                        // Float32 summation over k terms: error within k·ulp of the magnitude.
                        XCTAssertEqual(Double(y[r * n + c]), expected, accuracy: magnitude * Double(k + 1) * 1.2e-7,
                                       "m \(m) k \(k) n \(n) at (\(r), \(c))")
                    }
                }
            }
            var row = [Float](repeating: 0, count: k)
            packed.row(n - 1, into: &row)
            XCTAssertEqual(row, Array(w[(n - 1) * k ..< n * k]), "a row read back from the packed layout")
        }
    }

    /// The engine's one GEMM path (Linear: column blocks on threads) gives the single call's result.
    func testLinearOnThreadsEqualsOnePackedGEMM() {
        let (m, k, n) = (9, 70, 300)
        let x = (0..<m * k).map { Float($0 % 13) / 13 - 0.5 }, w = (0..<n * k).map { Float($0 % 7) / 7 - 0.4 }
        let bias = (0..<n).map { Float($0 % 5) }
        let packed = PackedFloatMatrix(w, n: n, k: k)
        var single = [Float](repeating: .nan, count: m * n)
        packed.multiply(x, m: m, bias: bias, into: &single, columns: 0..<n)
        for threads in [1, 2, 3, 8] {
            XCTAssertEqual(linear(x, m: m, weight: packed, bias: bias, threads: threads, quantizesActivations: false),
                           single, "\(threads) threads")
        }
    }

    /// splitRange covers 0..<n once, on `align` bounds, in parts that differ by one unit at most:
    /// EmbeddingGemma's 36 feed-forward panels on 8 parts are 5,5,5,5,4,4,4,4 (each of 2 threads
    /// claiming every other part runs 18), not 7 parts of 5 and one of 1.
    func testSplitRangeGivesPartsThatDifferByOneUnitAtMost() {
        XCTAssertEqual(splitRange(2304, parts: 8, align: 64).map(\.count), [320, 320, 320, 320, 256, 256, 256, 256])
        XCTAssertEqual(splitRange(1280, parts: 8, align: 64).map(\.count), [192, 192, 192, 192, 128, 128, 128, 128])
        XCTAssertEqual(splitRange(0, parts: 4), [])
        for n in [1, 7, 63, 64, 65, 300, 1152, 2304, 4097] {
            for parts in [1, 2, 3, 4, 8, 16] {
                for align in [1, 8, 16, 64] {
                    let ranges = splitRange(n, parts: parts, align: align)
                    let label = "n \(n), parts \(parts), align \(align)"
                    XCTAssertEqual(ranges.first?.lowerBound, 0, label)
                    XCTAssertEqual(ranges.last?.upperBound, n, label)
                    XCTAssertLessThanOrEqual(ranges.count, parts, label)
                    XCTAssertFalse(ranges.contains(where: \.isEmpty), label)
                    for (a, b) in zip(ranges, ranges.dropFirst()) { XCTAssertEqual(a.upperBound, b.lowerBound, label) }
                    XCTAssertTrue(ranges.allSatisfy { $0.lowerBound % align == 0 }, label)
                    let units = ranges.map { ($0.count + align - 1) / align }
                    XCTAssertLessThanOrEqual(units.max()! - units.min()!, 1, label)
                    XCTAssertEqual(units, units.sorted(by: >), label)
                    XCTAssertEqual(ranges.count, min(parts, (n + align - 1) / align), label)
                }
            }
        }
    }

    func testErfMatchesLibmToFloatPrecision() {
        var worst: Double = 0
        for i in -60000...60000 {
            let x = Float(i) / 10000          // [-6, 6]
            worst = max(worst, abs(Double(SwiftBERTKernels.erf(x)) - Foundation.erf(Double(x))))
        }
        XCTAssertLessThan(worst, 5e-7)
    }

    func testExpMatchesLibmInRelativeTerms() {
        var worst: Double = 0
        for i in -870000...880000 where i % 7 == 0 {
            let x = Float(i) / 10000
            let want = Foundation.exp(Double(x))
            worst = max(worst, abs(Double(SwiftBERTKernels.exp(x)) - want) / want)
        }
        XCTAssertLessThan(worst, 3e-7)
    }

    func testGeluIsExactErfGelu() {
        var x: [Float] = stride(from: -8, through: 8, by: 0.01).map { Float($0) }
        let want = x.map { Double($0) * 0.5 * (1 + Foundation.erf(Double($0) / 2.0.squareRoot())) }
        x.withUnsafeMutableBufferPointer { gelu($0.baseAddress!, count: $0.count) }
        for (got, want) in zip(x, want) { XCTAssertEqual(Double(got), want, accuracy: 1e-6) }
    }

    /// The 16-lane conversions the tile epilogue and the static INT8 quantisation use, against
    /// the scalar ones, lane by lane, on values that round (above 2²⁴) and at Int32's ends.
    func testVectorConversionsMatchScalarConversions() {
        let values: [Int32] = [0, 1, -1, 127, -128, 255, 256, -129, 16_777_217, -16_777_219, 33_554_435,
                               (1 << 30) + 65, Int32.max, Int32.min, Int32.min + 1, 123_456_789, -987_654_321]
        for start in stride(from: 0, to: values.count, by: 16) {
            var lanes = SIMD16<Int32>()
            for i in 0..<16 { lanes[i] = values[(start + i) % values.count] }
            let floats = integersAsFloats(lanes), bytes = truncatedToBytes(lanes), words = truncatedToWords(lanes)
            for i in 0..<16 {
                XCTAssertEqual(floats[i], Float(lanes[i]), "lane \(i): \(lanes[i])")
                XCTAssertEqual(bytes[i], UInt8(truncatingIfNeeded: lanes[i]), "lane \(i): \(lanes[i])")
                XCTAssertEqual(words[i], UInt16(truncatingIfNeeded: lanes[i]), "lane \(i): \(lanes[i])")
            }
        }
    }

    /// The 16-lane quantisation gives the scalar one's integers, ties to even included.
    func testVectorQuantizationMatchesScalarQuantization() {
        let values: [Float] = [0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -126.5, 127, -127, 0.49999997,
                               3.3, -7.7, 100.25, 1e-8, -1e-8, 63.5, 64.5]
        for reciprocal: Float in [1, 0.37, 127 / 3.9] {
            for start in stride(from: 0, to: values.count, by: 16) {
                var lanes = SIMD16<Float>()
                for i in 0..<16 { lanes[i] = values[(start + i) % values.count] / max(reciprocal, 1) }
                let quantized = SymmetricInt8.quantize(lanes, reciprocal: SIMD16(repeating: reciprocal))
                for i in 0..<16 {
                    XCTAssertEqual(quantized[i], SymmetricInt8.quantize(lanes[i], reciprocal: reciprocal), "lane \(i): \(lanes[i])")
                    XCTAssertEqual(quantized[i], Int32((lanes[i] * reciprocal).rounded(.toNearestOrEven)), "lane \(i): \(lanes[i])")
                }
            }
        }
    }

    func testReductionsOnSizesAroundTheVectorWidth() {
        for n in [1, 15, 16, 17, 33, 384] {
            let v = (0..<n).map { Float($0 % 7) - 3.5 }
            v.withUnsafeBufferPointer { p in
                XCTAssertEqual(sum(p.baseAddress!, count: n), v.reduce(0, +), accuracy: 1e-4)
                XCTAssertEqual(sumOfSquares(p.baseAddress!, count: n), v.reduce(0) { $0 + $1 * $1 }, accuracy: 1e-3)
                XCTAssertEqual(maximum(p.baseAddress!, count: n), v.max()!)
            }
        }
    }

    /// Fused attention (one head) against a Float64 softmax(Q·Kᵀ·scale)·V on lengths that leave
    /// partial query and key blocks and partial tiles, on head sizes that are and are not
    /// multiples of 16, with Q, K and V read strided from one fused buffer.
    func testFusedAttentionMatchesReferenceOnOddShapes() {
        checkFusedAttention(FP32Attention.self, tolerance: 1e-5)
    }

    /// BF16 products against a Float64 reference on the BF16-rounded Q, K and V: what is left is
    /// the rounding of the probabilities (relative 2^-9 each) and FP32 sums, within 2^-8 of the
    /// output's magnitude. Odd head sizes and lengths pair their last element with zero.
    func testBF16AttentionMatchesReferenceOnOddShapes() {
        checkFusedAttention(BF16Attention.self, tolerance: 1.0 / 256, roundsInputs: true)
    }

    /// The same on floats by FMA (`BF16Product.widened`, what Intel's cores run).
    func testWidenedBF16AttentionMatchesReferenceOnOddShapes() {
        checkFusedAttention(WidenedBF16Attention.self, tolerance: 1.0 / 256, roundsInputs: true)
    }

    /// BF16 attention with both products on (emulated) AMX tiles: the same bound. The tiles add
    /// in another order than vdpbf16ps (16 pairs' even and odd products apart, then together).
    func testTileBF16AttentionMatchesReferenceOnOddShapes() {
        checkFusedAttention(TileBF16Attention<EmulatedTiles>.self, tolerance: 1.0 / 256, roundsInputs: true)
    }

    /// On a CPU with AMX: the whole fused attention on the tiles gives its emulator's bits (odd
    /// head sizes, lengths across key blocks and partial tiles).
    func testTileBF16AttentionOnTheHardwareGivesTheEmulatorsBits() throws {
        try XCTSkipUnless(TileBackend.hardwareAvailable, "no AMX here: the emulated tiles' attention is checked above")
        var random = TestRandom(seed: 23)
        for (n, d) in [(1, 32), (9, 13), (17, 24), (33, 7), (300, 32), (513, 64)] {
            let ld = 3 * d
            let projections = random.floats(n * ld, scale: 3)
            let scale = 1 / Float(d).squareRoot()
            func run<A: AttentionArithmetic>(_ arithmetic: A.Type) -> [UInt32] {
                var out = [Float](repeating: .nan, count: n * d)
                let scratch = AttentionScratch(maxLength: n, headDim: d)
                projections.withUnsafeBufferPointer { p in
                    let q = p.baseAddress!
                    attendHead(A.self, q: q, k: q + d, v: q + 2 * d, ld: ld, n: n, scale: scale, into: &out, ldo: d, scratch)
                }
                return out.map(\.bitPattern)
            }
            XCTAssertEqual(run(TileBF16Attention<HardwareTiles>.self), run(TileBF16Attention<EmulatedTiles>.self), "n \(n), d \(d)")
        }
    }

    /// vdpbf16ps (where this build has it) and the widened floats add the same products in the
    /// same order: bit-identical outputs, odd head sizes and lengths included.
    func testEveryBF16AttentionProductGivesTheSameBits() {
        var random = TestRandom(seed: 21)
        for (n, d) in [(1, 32), (9, 13), (17, 24), (33, 7), (300, 32), (513, 64)] {
            let ld = 3 * d
            let projections = random.floats(n * ld, scale: 3)
            let scale = 1 / Float(d).squareRoot()
            let outputs = BF16Product.allCases.map { product in
                var out = [Float](repeating: .nan, count: n * d)
                let scratch = AttentionScratch(maxLength: n, headDim: d)
                projections.withUnsafeBufferPointer { p in
                    let q = p.baseAddress!
                    attendHead(bf16: product, q: q, k: q + d, v: q + 2 * d, ld: ld, n: n, scale: scale, into: &out, ldo: d, scratch)
                }
                XCTAssertFalse(out.contains { !$0.isFinite }, "\(product) n \(n), d \(d)")
                return out.map(\.bitPattern)
            }
            for out in outputs.dropFirst() { XCTAssertEqual(out, outputs[0], "n \(n), d \(d)") }
        }
    }

    private func checkFusedAttention<A: AttentionArithmetic>(_ arithmetic: A.Type, tolerance: Double, roundsInputs: Bool = false) {
        var seed: UInt64 = 7
        func random() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 250  // scores up to ~±100
        }
        for (n, d) in [(1, 32), (5, 64), (9, 13), (16, 32), (17, 24), (33, 7), (130, 64), (300, 32), (512, 40)] {
            let heads = 2, ld = 3 * heads * d, ldo = heads * d
            let projections = (0..<n * ld).map { _ in random() }
            let reference = roundsInputs ? projections.map(BFloat16.rounded) : projections
            let scale = 1 / Float(d).squareRoot()
            var out = [Float](repeating: .nan, count: n * ldo)
            let scratch = AttentionScratch(maxLength: n + 3, headDim: d)
            for head in [1, 0] {  // the second call reuses the scratch of the first
                projections.withUnsafeBufferPointer { p in
                    let q = p.baseAddress! + head * d
                    out.withUnsafeMutableBufferPointer { o in
                        attendHead(A.self, q: q, k: q + heads * d, v: q + 2 * heads * d, ld: ld, n: n, scale: scale,
                                   into: o.baseAddress! + head * d, ldo: ldo, scratch)
                    }
                }
            }
            for head in 0..<heads {
                for i in 0..<n {
                    let q = i * ld + head * d
                    let logits = (0..<n).map { j in
                        (0..<d).reduce(0.0) { $0 + Double(reference[q + $1]) * Double(reference[j * ld + heads * d + head * d + $1]) } * Double(scale)
                    }
                    let top = logits.max()!
                    let weights = logits.map { Foundation.exp($0 - top) }
                    let total = weights.reduce(0, +)
                    for c in 0..<d {
                        var expected = 0.0, magnitude = 0.0
                        for j in 0..<n {
                            let v = Double(reference[j * ld + 2 * heads * d + head * d + c])
                            expected += weights[j] / total * v
                            magnitude += weights[j] / total * abs(v)
                        }
                        XCTAssertEqual(Double(out[i * ldo + head * d + c]), expected, accuracy: tolerance * (magnitude + 1),
                                       "\(A.self): n \(n), d \(d), head \(head), row \(i), column \(c)")
                    }
                }
            }
        }
    }

    func testSoftmaxRowsSumToOneAndKeepOrder() {
        var x: [Float] = [1, 2, 3, -1000, 0.5, 1000, 3, 2, 1]
        x.withUnsafeMutableBufferPointer { softmaxRows($0.baseAddress!, rows: 3, cols: 3, stride: 3) }
        for r in 0..<3 { XCTAssertEqual(x[r * 3..<r * 3 + 3].reduce(0, +), 1, accuracy: 1e-6) }
        XCTAssertEqual(x[5], 1, accuracy: 1e-6)
        XCTAssertGreaterThan(x[2], x[1])
    }
}
