import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// The fused attention (SwiftBERTKernels/Attention/) against the path it replaced: per head, Q·Kᵀ
/// on OpenBLAS sgemm, `softmaxRows`, then P·V on sgemm, on MiniLM's and bert-base's head shapes
/// at 16 to 512 tokens. With SWIFTBERT_ATTENTION_TIMING=1 it also prints both paths' CPU time
/// per layer (all heads, one thread), measured side by side (A B A B ...).
final class AttentionTests: XCTestCase {
    func testFusedAttentionMatchesOpenBLASPath() {
        let timing = ProcessInfo.processInfo.environment["SWIFTBERT_ATTENTION_TIMING"] == "1"
        var seed: UInt64 = 11
        func random() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 400
        }
        for (heads, d) in [(12, 32), (12, 64)] {
            for n in [16, 128, 256, 512] {
                let h = heads * d, ld = 3 * h
                let projections = (0..<n * ld).map { _ in random() }
                var fused = [Float](repeating: 0, count: n * h), blas = fused
                let scale = 1 / Float(d).squareRoot()
                let scratch = AttentionScratch(maxLength: n, headDim: d)
                let scores = UnsafeMutablePointer<Float>.allocate(capacity: n * n)
                let valuesT = UnsafeMutablePointer<Float>.allocate(capacity: d * n)
                defer { scores.deallocate(); valuesT.deallocate() }
                func runFused() {
                    projections.withUnsafeBufferPointer { p in
                        fused.withUnsafeMutableBufferPointer { o in
                            for head in 0..<heads {
                                let q = p.baseAddress! + head * d
                                attendHead(FP32Attention.self, q: q, k: q + h, v: q + 2 * h, ld: ld, n: n, scale: scale,
                                           into: o.baseAddress! + head * d, ldo: h, scratch)
                            }
                        }
                    }
                }
                func runBLAS() {
                    projections.withUnsafeBufferPointer { p in
                        blas.withUnsafeMutableBufferPointer { o in
                            for head in 0..<heads {
                                let q = p.baseAddress! + head * d
                                matmulTransposedB(q, lda: ld, q + h, ldb: ld, scores, ldc: n, m: n, n: n, k: d, alpha: scale)
                                softmaxRows(scores, rows: n, cols: n, stride: n)
                                // P·V as P·(Vᵀ)ᵀ: the old path's sgemm NN, with V transposed here.
                                for j in 0..<n { for c in 0..<d { valuesT[c * n + j] = q[2 * h + j * ld + c] } }
                                matmulTransposedB(scores, lda: n, valuesT, ldb: n, o.baseAddress! + head * d, ldc: h,
                                                  m: n, n: d, k: n)
                            }
                        }
                    }
                }
                runFused()
                runBLAS()
                var worst: Float = 0
                for i in 0..<fused.count { worst = max(worst, abs(fused[i] - blas[i])) }
                // The per-layer tolerance of EngineExactnessTests (values here are up to 2.5 in size;
                // the two orders of summation differ by a few ulp of them).
                XCTAssertLessThanOrEqual(worst, 1e-5, "\(heads) heads of \(d), \(n) tokens")
                if timing {
                    var fusedMs: [Double] = [], blasMs: [Double] = []
                    let rounds = max(5, 2_000 / n)
                    for _ in 0..<rounds {
                        fusedMs.append(threadMilliseconds(runFused))
                        blasMs.append(threadMilliseconds(runBLAS))
                    }
                    let a = blasMs.sorted()[rounds / 2], b = fusedMs.sorted()[rounds / 2]
                    print(String(format: "attention %2d heads of %2d, %3d tokens: OpenBLAS %.3f ms, fused %.3f ms, fused/OpenBLAS %.2f",
                                 heads, d, n, a, b, b / a))
                }
            }
        }
    }

    /// Windows (`AttentionWindow`): the causal mask of a decoder, the symmetric window of sliding
    /// layers and uneven ones, each against softmax over exactly the keys it admits, in Double.
    /// Lengths cross the 16-key steps and the key blocks (online softmax over several of them).
    func testWindowsSeeExactlyTheirKeys() {
        var seed: UInt64 = 23
        func random() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 400
        }
        let d = 32, ld = 3 * d
        let windows: [(String, AttentionWindow)] = [("causal", .causal), ("around 5", .around(5)), ("around 40", .around(40)),
                                                    ("3 back, 70 ahead", AttentionWindow(before: 3, after: 70)),
                                                    ("self only", AttentionWindow(before: 0, after: 0)), ("all", .all)]
        for n in [1, 7, 16, 33, 130, 300] {
            let projections = (0..<n * ld).map { _ in random() }
            let scratch = AttentionScratch(maxLength: n, headDim: d)
            let scale = 1 / Float(d).squareRoot()
            for (name, window) in windows {
                var fused = [Float](repeating: 0, count: n * d)
                projections.withUnsafeBufferPointer { p in
                    fused.withUnsafeMutableBufferPointer { o in
                        let q = p.baseAddress!
                        attendHead(FP32Attention.self, q: q, k: q + d, v: q + 2 * d, ld: ld, n: n, scale: scale,
                                   window: window, into: o.baseAddress!, ldo: d, scratch)
                    }
                }
                var worst: Double = 0
                for i in 0..<n {
                    let keys = max(0, i - min(window.before, n))...min(n - 1, i + min(window.after, n))
                    let scores = keys.map { j in (0..<d).reduce(0.0) { $0 + Double(projections[i * ld + $1]) * Double(projections[j * ld + d + $1]) } * Double(scale) }
                    let top = scores.max()!
                    let weights = scores.map { Foundation.exp($0 - top) }, total = weights.reduce(0, +)
                    for c in 0..<d {
                        let expected = zip(keys, weights).reduce(0.0) { $0 + $1.1 * Double(projections[$1.0 * ld + 2 * d + c]) } / total
                        worst = max(worst, abs(expected - Double(fused[i * d + c])))
                    }
                }
                // Values are up to 2.5 in size: float rounding of their sums, as in the test above.
                XCTAssertLessThanOrEqual(worst, 1e-5, "\(name), \(n) tokens")
            }
        }
    }

    /// Grouped-query attention as `multiHeadAttention` runs it (each key/value head packed once for
    /// its group; with few such heads, the queries split into runs across threads) gives the bits
    /// of every query head attended to its own copy of K and V on one thread: for each arithmetic
    /// (BF16 on the vector units, on the tile emulator, and on AMX tiles where the CPU has them),
    /// with and without a window, one sequence and two of other lengths, 1 to 3 threads.
    func testGroupedHeadsAndQueryRunsGiveTheBitsOfOneHeadAtATime() {
        var seed: UInt64 = 41
        func random() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 300
        }
        let (heads, kvHeads, d) = (3, 1, 40)
        let width = (heads + 2 * kvHeads) * d, expandedWidth = 3 * heads * d
        for lengths in [[130], [5], [49, 300]] {
            let m = lengths.reduce(0, +), starts = lengths.indices.map { lengths[..<$0].reduce(0, +) }
            let projections = (0..<m * width).map { _ in random() }
            // The same Q with each key/value head copied beside the query heads of its group.
            var expanded = [Float](repeating: 0, count: m * expandedWidth)
            for t in 0..<m {
                for head in 0..<heads {
                    for c in 0..<d {
                        let shared = head / (heads / kvHeads)
                        expanded[t * expandedWidth + head * d + c] = projections[t * width + head * d + c]
                        expanded[t * expandedWidth + (heads + head) * d + c] = projections[t * width + (heads + shared) * d + c]
                        expanded[t * expandedWidth + (2 * heads + head) * d + c] = projections[t * width + (heads + kvHeads + shared) * d + c]
                    }
                }
            }
            let scratch = (0..<3).map { _ in AttentionScratch(maxLength: lengths.max()!, headDim: d) }
            let runs: [(AttentionPrecision, TileBackend?)] = [(.fp32, nil), (.bf16, nil), (.bf16, .emulator), (.int8, nil)]
                + (TileBackend.hardwareAvailable ? [(.bf16, .hardware)] : [])
            for (arithmetic, tiles) in runs {
                for window in [AttentionWindow.all, .around(20), .causal] {
                    func attend(_ input: [Float], ld: Int, keyValueHeads: Int?, threads: Int) -> [UInt32] {
                        var out = [Float](repeating: .nan, count: m * heads * d)
                        input.withUnsafeBufferPointer { p in
                            out.withUnsafeMutableBufferPointer { o in
                                let q = p.baseAddress!, kvHeads = keyValueHeads ?? heads
                                multiHeadAttention(q: q, k: q + heads * d, v: q + (heads + kvHeads) * d, ld: ld, heads: heads,
                                                   keyValueHeads: keyValueHeads, headDim: d, starts: starts, lengths: lengths,
                                                   threads: threads, arithmetic: arithmetic, window: window, tiles: tiles,
                                                   scratch: scratch, into: o.baseAddress!, ldo: heads * d)
                            }
                        }
                        return out.map(\.bitPattern)
                    }
                    let reference = attend(expanded, ld: expandedWidth, keyValueHeads: nil, threads: 1)
                    XCTAssertFalse(reference.contains(Float.nan.bitPattern))
                    for threads in 1...3 {
                        XCTAssertEqual(attend(projections, ld: width, keyValueHeads: kvHeads, threads: threads), reference,
                                       "\(arithmetic) \(tiles.map { "\($0)" } ?? "vector"), \(window), lengths \(lengths), \(threads) threads")
                    }
                }
            }
        }
    }

    /// The query runs cover each sequence's queries once, in whole query blocks; pairs that share
    /// out evenly across the threads are not split.
    func testQueryRunsCoverTheQueriesOnce() {
        XCTAssertEqual(queryParts(pairs: 12, threads: 2), 1)
        XCTAssertEqual(queryParts(pairs: 3, threads: 1), 1)
        XCTAssertEqual(queryParts(pairs: 1, threads: 2), 2)
        XCTAssertEqual(queryParts(pairs: 3, threads: 2), 2)
        XCTAssertEqual(queryParts(pairs: 2, threads: 3), 3)
        XCTAssertEqual(queryParts(pairs: 9, threads: 2), 1, "many pairs share out well enough")
        for n in [1, 23, 24, 25, 128, 700] {
            for parts in 1...4 {
                let runs = (0..<parts).map { queryRun($0, of: parts, length: n) }
                XCTAssertEqual(runs.map(\.count).reduce(0, +), n)
                for (run, next) in zip(runs, runs.dropFirst()) { XCTAssertEqual(run.upperBound, next.lowerBound) }
                for run in runs where !run.isEmpty { XCTAssertEqual(run.lowerBound % attentionQueryBlock, 0) }
            }
        }
    }

    /// INT8 attention (`Int8Attention`, the `int8-attention` and `int8-static` precisions) against the
    /// same arithmetic written out here in scalars: Q and K per row and V per channel quantised
    /// symmetrically (Q as q + 128), scores from the integer sums, softmax in Float, probabilities as
    /// round(p · 32767), output Σ p_fixed · v_byte · scale / Σ p. Up to 256 tokens there is one key
    /// block, so the online softmax is the plain one; at 512 tokens it is written out block by block.
    /// The two agree to float rounding (1e-5 of the values' size); a head of 24 and lengths off the 4-
    /// and 16-key steps check the padding.
    func testInt8AttentionMatchesItsScalarArithmetic() {
        var seed: UInt64 = 5
        func random() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2001 - 1000) / 400
        }
        for (heads, d) in [(2, 32), (2, 64), (3, 24)] {
            for n in [1, 5, 16, 37, 128, 256, 512] {
                let h = heads * d, ld = 3 * h
                let projections = (0..<n * ld).map { _ in random() }
                var int8 = [Float](repeating: 0, count: n * h), fp32 = int8
                let scale = 1 / Float(d).squareRoot()
                let scratch = AttentionScratch(maxLength: n, headDim: d), floatScratch = AttentionScratch(maxLength: n, headDim: d)
                projections.withUnsafeBufferPointer { p in
                    for head in 0..<heads {
                        let q = p.baseAddress! + head * d
                        int8.withUnsafeMutableBufferPointer { o in
                            attendHead(Int8Attention.self, q: q, k: q + h, v: q + 2 * h, ld: ld, n: n, scale: scale,
                                       into: o.baseAddress! + head * d, ldo: h, scratch)
                        }
                        fp32.withUnsafeMutableBufferPointer { o in
                            attendHead(FP32Attention.self, q: q, k: q + h, v: q + 2 * h, ld: ld, n: n, scale: scale,
                                       into: o.baseAddress! + head * d, ldo: h, floatScratch)
                        }
                    }
                }
                var worst: Float = 0, worstFP32: Float = 0
                for head in 0..<heads {
                    let row = { (token: Int, part: Int) in Array(projections[(token * ld + part * h + head * d)..<(token * ld + part * h + head * d + d)]) }
                    func quantized(_ x: [Float]) -> (q: [Int32], scale: Float) {
                        let maxAbs = x.map(abs).max()!
                        let reciprocal = SymmetricInt8.reciprocalScale(maxAbs: maxAbs)
                        return (x.map { SymmetricInt8.quantize($0, reciprocal: reciprocal) }, maxAbs / 127)
                    }
                    let keys = (0..<n).map { quantized(row($0, 1)) }
                    let values = (0..<n).map { row($0, 2) }
                    let channels = (0..<d).map { c in quantized(values.map { $0[c] }) }
                    for i in 0..<n {
                        let query = quantized(row(i, 0))
                        let scores = keys.map { key -> Float in
                            var sum: Int32 = 0
                            for c in 0..<d { sum += (query.q[c] + 128) * key.q[c] }
                            let offset = 128 * key.q.reduce(0, +)
                            return (Float(sum) - Float(offset)) * (query.scale * key.scale)
                        }
                        // The online softmax over key blocks, in powers of 2 with the kernel's
                        // exp2 (a different exp moves a few p · 255 across a rounding boundary):
                        // each block's probabilities are quantised against the running maximum
                        // of the blocks so far.
                        let scale2 = scale * 1.44269504088896341
                        var top = -Float.infinity, total: Float = 0
                        var output = [Float](repeating: 0, count: d)
                        for first in stride(from: 0, to: n, by: attentionKeyBlock) {
                            let block = first..<min(n, first + attentionKeyBlock)
                            let newTop = max(top, scores[block].max()! * scale2)
                            let correction = exp2OfNonPositive(top - newTop)
                            let p = scores[block].map { exp2OfNonPositive((-newTop).addingProduct($0, scale2)) }
                            let fixed = p.map { SymmetricInt8.quantize($0, reciprocal: 32767) }
                            total = total * correction + p.reduce(0, +)
                            for c in 0..<d {
                                var sum: Int64 = 0
                                for (b, j) in block.enumerated() { sum += Int64(fixed[b] * channels[c].q[j]) }
                                output[c] = output[c] * correction + Float(sum) * channels[c].scale / 32767
                            }
                            top = newTop
                        }
                        for c in 0..<d {
                            let expected = output[c] / total
                            worst = max(worst, abs(int8[i * h + head * d + c] - expected))
                            worstFP32 = max(worstFP32, abs(int8[i * h + head * d + c] - fp32[i * h + head * d + c]))
                        }
                    }
                }
                // Values are up to 2.5 in size.
                XCTAssertLessThanOrEqual(worst, 2.5e-5, "\(heads) heads of \(d), \(n) tokens")
                // Against FP32, a sanity bound on the quantisation's own error: V's step is
                // max|v| / 127 ≈ 0.02 here, and Q's and K's reach the output through the softmax
                // (0.054 at most in the first run of these shapes).
                XCTAssertLessThanOrEqual(worstFP32, 0.1, "\(heads) heads of \(d), \(n) tokens, against FP32")
                print(String(format: "int8 attention %d heads of %2d, %3d tokens: max |diff| %.2e against its scalar arithmetic, %.4f against FP32",
                             heads, d, n, worst, worstFP32))
            }
        }
    }

    private func threadMilliseconds(_ body: () -> Void) -> Double {
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
        body()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end)
        return Double(end.tv_sec - start.tv_sec) * 1e3 + Double(end.tv_nsec - start.tv_nsec) / 1e6
    }
}
