import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// The INT8 GEMM against a scalar implementation of the same quantisation (exact: integer
/// accumulators, same float formula), and against FP32 (approximate) on realistic data.
final class Int8GEMMTests: XCTestCase {
    /// Odd shapes: single rows and channels, K not a multiple of 4, N across panel edges,
    /// M across tile edges (tiles are 6 rows with VNNI, 5 without; panels 64 channels), and
    /// both tile orders of `panelGEMM`: panel by panel up to `l1PanelRows` rows of L1-sized
    /// panels, row tile by row tile beyond that or for larger panels.
    let shapes: [(m: Int, k: Int, n: Int)] = [
        (1, 1, 1), (1, 7, 3), (2, 4, 64), (3, 5, 65), (5, 16, 17), (6, 33, 130), (7, 259, 70),
        (11, 64, 128), (16, 130, 191), (1, 768, 96), (l1PanelRows + 5, 21, 130), (13, 600, 70),
    ]

    func testPackedLayoutPutsEveryWeightAtItsDocumentedOffsetAndPadsWithZeros() {
        let rows = 70, cols = 9
        let rowMajor = (0..<(rows * cols)).map { Int8(truncatingIfNeeded: $0 % 255 - 127) }
        let packed = PackedInt8Matrix.packedLayout(int8: rowMajor, n: rows, k: cols)
        XCTAssertEqual(packed.count, 2 * 3 * 256)  // 2 panels × 3 K-quads × 256 bytes
        var expected = [Int8](repeating: 0, count: packed.count)
        for n in 0..<rows {
            for k in 0..<cols {
                expected[(n / 64) * 768 + (k / 4) * 256 + (n % 64) * 4 + k % 4] = rowMajor[n * cols + k]
            }
        }
        XCTAssertEqual(packed, expected)
    }

    func testWeightQuantizationIsSymmetricPerOutputChannel() {
        let weights: [Float] = [0.5, -1.0, 0.25, 0, 0, 0, 3, 1.5, -0.01]
        let (q, scales) = PackedInt8Matrix.quantize(weights: weights, n: 3, k: 3)
        XCTAssertEqual(scales, [1.0 / 127, 0, 3.0 / 127])
        XCTAssertEqual(q, [64, -127, 32, 0, 0, 0, 127, 64, 0])  // 63.5 rounds to even: 64
    }

    func testInt8LinearEqualsScalarReferenceOnOddShapes() {
        var random = TestRandom(seed: 1)
        let workspace = Int8Activations()  // grows as needed: also checks reuse across shapes
        for (m, k, n) in shapes {
            let x = random.floats(m * k, scale: 2)
            let w = random.floats(n * k, scale: 0.1)
            let bias = random.floats(n, scale: 1)
            let weights = PackedInt8Matrix(weights: w, n: n, k: k)
            let expected = referenceInt8Linear(x: x, m: m, w: w, n: n, k: k, bias: bias)
            var y = [Float](repeating: .nan, count: m * n)
            int8Linear(x, m: m, weights: weights, bias: bias, output: &y, activations: workspace)
            XCTAssertEqual(maxDifference(y, expected), 0, "m \(m) k \(k) n \(n)")

            let expectedNoBias = referenceInt8Linear(x: x, m: m, w: w, n: n, k: k, bias: nil)
            int8Linear(x, m: m, weights: weights, bias: nil, output: &y, activations: workspace)
            XCTAssertEqual(maxDifference(y, expectedNoBias), 0, "no bias: m \(m) k \(k) n \(n)")
        }
    }

    /// int8-static's calibrated inputs (a multiplier per channel, a zero point, a step) through
    /// the same kernel: exact against the quantisation written out plainly, with inputs beyond
    /// the calibrated range clamped to 0 and 255 and zero points away from the kernel's 128.
    func testStaticInputLinearEqualsScalarReferenceOnOddShapes() {
        var random = TestRandom(seed: 7)
        let workspace = Int8Activations()
        for ((m, k, n), zeroPoint) in zip(shapes, [0, 3, 100, 128, 200, 255, 37, 90, 128, 1, 254, 60]) {
            let x = random.floats(m * k, scale: 3)  // some beyond the range the step covers
            let w = random.floats(n * k, scale: 0.1), bias = random.floats(n, scale: 1)
            let multipliers = random.floats(k, scale: 1).map { 20 + 20 * abs($0) }
            let step: Float = 0.013
            let weights = PackedInt8Matrix(weights: w, n: n, k: k)
            let mapped = UnsafeMutablePointer<Float>.allocate(capacity: k)  // as the weights file holds them
            defer { mapped.deallocate() }
            mapped.initialize(from: multipliers, count: k)
            let input = StaticInt8Input(k: k, multipliers: mapped, zeroPoint: Int32(zeroPoint), step: step, weights: weights)
            var y = [Float](repeating: .nan, count: m * n)
            workspace.quantize(x, m: m, k: k, with: input)
            weights.multiply(workspace, bias: bias, into: &y, columns: 0..<n)
            let (qw, weightScales) = referenceQuantize(w, rows: n, cols: k)
            var expected = [Float](repeating: 0, count: m * n)
            for row in 0..<m {
                let u = (0..<k).map { i in
                    min(max(Int32((x[row * k + i] * multipliers[i]).rounded(.toNearestOrEven)) + Int32(zeroPoint), 0), 255)
                }
                for column in 0..<n {
                    var acc: Int32 = 0
                    for i in 0..<k { acc += (u[i] - Int32(zeroPoint)) * qw[column * k + i] }
                    expected[row * n + column] = Float(acc) * (step * weightScales[column]) + bias[column]
                }
            }
            XCTAssertEqual(maxDifference(y, expected), 0, "m \(m) k \(k) n \(n) zero point \(zeroPoint)")
            // Per-row activations afterwards use the kernel's own corrections again.
            int8Linear(x, m: m, weights: weights, bias: bias, output: &y, activations: workspace)
            XCTAssertEqual(maxDifference(y, referenceInt8Linear(x: x, m: m, w: w, n: n, k: k, bias: bias)), 0)
        }
    }

    func testColumnBlocksWriteOnlyTheirColumnsAndShareOneQuantization() {
        var random = TestRandom(seed: 2)
        let (m, k, n) = (7, 45, 150)
        let x = random.floats(m * k, scale: 1), w = random.floats(n * k, scale: 1), bias = random.floats(n, scale: 1)
        let weights = PackedInt8Matrix(weights: w, n: n, k: k)
        let expected = referenceInt8Linear(x: x, m: m, w: w, n: n, k: k, bias: bias)
        let workspace = Int8Activations()
        workspace.quantize(x, m: m, k: k)
        var y = [Float](repeating: -7, count: m * n)
        weights.multiply(workspace, bias: bias, into: &y, columns: 10..<70)
        for row in 0..<m {
            for column in 0..<n {
                let value = y[row * n + column]
                XCTAssertEqual(value, (10..<70).contains(column) ? expected[row * n + column] : -7, "[\(row), \(column)]")
            }
        }
        for block in [0..<10, 70..<129, 129..<150] {
            weights.multiply(workspace, bias: bias, into: &y, columns: block)
        }
        XCTAssertEqual(maxDifference(y, expected), 0)
    }

    func testLinearOnThreadsEqualsOneInt8GEMM() {
        var random = TestRandom(seed: 3)
        let (m, k, n) = (9, 70, 300)
        let x = random.floats(m * k, scale: 1), w = random.floats(n * k, scale: 1), bias = random.floats(n, scale: 1)
        let weights = PackedInt8Matrix(weights: w, n: n, k: k)
        var single = [Float](repeating: 0, count: m * n), threaded = single
        int8Linear(x, m: m, weights: weights, bias: bias, output: &single, activations: Int8Activations())
        for threads in [1, 2, 3, 8] {
            threaded = linear(x, m: m, weight: weights, bias: bias, threads: threads, quantizesActivations: true)
            XCTAssertEqual(threaded, single, "\(threads) threads")
        }
    }

    func testZeroRowsAndZeroChannelsGiveTheBias() {
        let (m, k, n) = (3, 6, 4)
        var x = [Float](repeating: 0.5, count: m * k)
        for i in 0..<k { x[k + i] = 0 }  // row 1 is all zero
        var w = [Float](repeating: 0.25, count: n * k)
        for i in 0..<k { w[2 * k + i] = 0 }  // channel 2 is all zero
        let bias: [Float] = [1, 2, 3, 4]
        var y = [Float](repeating: .nan, count: m * n)
        int8Linear(x, m: m, weights: PackedInt8Matrix(weights: w, n: n, k: k), bias: bias, output: &y, activations: Int8Activations())
        XCTAssertEqual(Array(y[n..<(2 * n)]), bias)
        XCTAssertEqual([y[2], y[n + 2], y[2 * n + 2]], [3, 3, 3])
        XCTAssertEqual(y[0], 0.5 * 0.25 * Float(k) + 1, accuracy: 1e-5)
    }

    func testInt8LinearApproximatesFloatLinear() {
        var random = TestRandom(seed: 4)
        let (m, k, n) = (12, 384, 96)
        let x = random.floats(m * k, scale: 1), w = random.floats(n * k, scale: 0.05), bias = random.floats(n, scale: 0.1)
        let weights = PackedInt8Matrix(weights: w, n: n, k: k)
        let exact = floatLinear(x: x, m: m, w: w, n: n, k: k, bias: bias)
        var y = [Float](repeating: 0, count: m * n)
        int8Linear(x, m: m, weights: weights, bias: bias, output: &y, activations: Int8Activations())
        XCTAssertLessThan(relativeError(y, exact), 0.02)
        weights.multiply(x, m: m, bias: bias, into: &y, columns: 0..<n)
        XCTAssertLessThan(relativeError(y, exact), 0.01)
    }

    func testWeightOnlyLinearMatchesScalarReferenceOnOddShapes() {
        var random = TestRandom(seed: 5)
        for (m, k, n) in shapes {
            let x = random.floats(m * k, scale: 2), w = random.floats(n * k, scale: 0.1), bias = random.floats(n, scale: 1)
            let weights = PackedInt8Matrix(weights: w, n: n, k: k)
            let (q, scales) = PackedInt8Matrix.quantize(weights: w, n: n, k: k)
            var expected = [Float](repeating: 0, count: m * n)
            for row in 0..<m {
                for column in 0..<n {
                    var sum: Float = 0
                    for i in 0..<k { sum += x[row * k + i] * Float(q[column * k + i]) }
                    expected[row * n + column] = sum * scales[column] + bias[column]
                }
            }
            var y = [Float](repeating: .nan, count: m * n)
            weights.multiply(x, m: m, bias: bias, into: &y, columns: 0..<n)
            XCTAssertLessThan(relativeError(y, expected), 1e-5, "m \(m) k \(k) n \(n)")
            for threads in [1, 3] {
                let threaded = linear(x, m: m, weight: weights, bias: bias, threads: threads, quantizesActivations: false)
                XCTAssertEqual(threaded, y, "weight-only Linear, \(threads) threads")
            }
        }
    }

    func testWrappingInitUsesTheBytesInPlaceAndValidatesThem() throws {
        var random = TestRandom(seed: 6)
        let (m, k, n) = (4, 10, 20)
        let x = random.floats(m * k, scale: 1), w = random.floats(n * k, scale: 1)
        let (q, scales) = PackedInt8Matrix.quantize(weights: w, n: n, k: k)
        let packed = PackedInt8Matrix.packedLayout(int8: q, n: n, k: k)
        let owned = PackedInt8Matrix(weights: w, n: n, k: k)
        var fromOwned = [Float](repeating: 0, count: m * n), fromWrapped = fromOwned
        int8Linear(x, m: m, weights: owned, bias: nil, output: &fromOwned, activations: Int8Activations())
        try packed.withUnsafeBytes { bytes in
            try scales.withUnsafeBufferPointer { scaleBuffer in
                let wrapped = try PackedInt8Matrix(n: n, k: k, packed: bytes, scales: scaleBuffer)
                XCTAssertEqual(wrapped.packed.baseAddress, bytes.baseAddress)
                int8Linear(x, m: m, weights: wrapped, bias: nil, output: &fromWrapped, activations: Int8Activations())

                let short = UnsafeRawBufferPointer(rebasing: bytes.dropLast())
                XCTAssertThrowsError(try PackedInt8Matrix(n: n, k: k, packed: short, scales: scaleBuffer)) {
                    guard let reason = ($0 as? InvalidPackedMatrix)?.reason else { return XCTFail("\($0)") }
                    XCTAssertTrue(reason.contains("\(bytes.count) bytes"), reason)
                }
                let fewerScales = UnsafeBufferPointer(rebasing: scaleBuffer.dropLast())
                XCTAssertThrowsError(try PackedInt8Matrix(n: n, k: k, packed: bytes, scales: fewerScales))
                XCTAssertThrowsError(try PackedInt8Matrix(n: 0, k: k, packed: bytes, scales: scaleBuffer))
            }
        }
        XCTAssertEqual(fromWrapped, fromOwned)
        var badScales = scales
        badScales[3] = .nan
        XCTAssertThrowsError(try packed.withUnsafeBytes { bytes in
            try badScales.withUnsafeBufferPointer { _ = try PackedInt8Matrix(n: n, k: k, packed: bytes, scales: $0) }
        })
    }

    // MARK: - References

    /// One INT8 GEMM over all columns: activations quantised once, then the kernel.
    private func int8Linear(_ x: [Float], m: Int, weights: PackedInt8Matrix, bias: [Float]?, output y: inout [Float],
                            activations: Int8Activations) {
        activations.quantize(x, m: m, k: weights.k)
        weights.multiply(activations, bias: bias, into: &y, columns: 0..<weights.n)
    }

    /// The quantisation written out plainly: per-row symmetric activations, per-channel
    /// symmetric weights, Int32 accumulation, y = Float(acc) · (sx · sw) + b.
    private func referenceInt8Linear(x: [Float], m: Int, w: [Float], n: Int, k: Int, bias: [Float]?) -> [Float] {
        let (qw, weightScales) = referenceQuantize(w, rows: n, cols: k)
        let (qx, rowScales) = referenceQuantize(x, rows: m, cols: k)
        var y = [Float](repeating: 0, count: m * n)
        for row in 0..<m {
            for column in 0..<n {
                var acc: Int32 = 0
                for i in 0..<k { acc += qx[row * k + i] * qw[column * k + i] }
                y[row * n + column] = Float(acc) * (rowScales[row] * weightScales[column]) + (bias?[column] ?? 0)
            }
        }
        return y
    }

    /// q = round-half-even(v · 127 / max|row|), scale = max|row| / 127.
    private func referenceQuantize(_ values: [Float], rows: Int, cols: Int) -> (q: [Int32], scales: [Float]) {
        var q = [Int32](repeating: 0, count: values.count), scales = [Float](repeating: 0, count: rows)
        for row in 0..<rows {
            let slice = values[(row * cols)..<((row + 1) * cols)]
            let maxAbs = slice.map { abs($0) }.max()!
            scales[row] = maxAbs / 127
            guard maxAbs > 0 else { continue }
            for (i, v) in zip(slice.indices, slice) { q[i] = Int32((v * (127 / maxAbs)).rounded(.toNearestOrEven)) }
        }
        return (q, scales)
    }

    private func floatLinear(x: [Float], m: Int, w: [Float], n: Int, k: Int, bias: [Float]) -> [Float] {
        var y = [Float](repeating: 0, count: m * n)
        for row in 0..<m {
            for column in 0..<n {
                var sum: Double = 0
                for i in 0..<k { sum += Double(x[row * k + i]) * Double(w[column * k + i]) }
                y[row * n + column] = Float(sum) + bias[column]
            }
        }
        return y
    }

    private func maxDifference(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).map { abs($0 - $1) }.max() ?? 0
    }

    private func relativeError(_ a: [Float], _ b: [Float]) -> Float {
        let difference = zip(a, b).map { ($0 - $1) * ($0 - $1) }.reduce(0, +)
        let norm = b.map { $0 * $0 }.reduce(0, +)
        return (difference / norm).squareRoot()
    }
}
