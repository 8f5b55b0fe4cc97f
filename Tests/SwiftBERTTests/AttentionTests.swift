import Foundation
import XCTest
@testable import SwiftBERT

/// The fused attention (Kernels/Attention.swift) against the path it replaced: per head, Q·Kᵀ
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

    private func threadMilliseconds(_ body: () -> Void) -> Double {
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
        body()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end)
        return Double(end.tv_sec - start.tv_sec) * 1e3 + Double(end.tv_nsec - start.tv_nsec) / 1e6
    }
}
