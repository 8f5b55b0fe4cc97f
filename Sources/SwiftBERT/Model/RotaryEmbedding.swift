import Foundation
import SwiftBERTKernels

/// Rotary position embedding (transformers' RotaryEmbedding and apply_rotary_pos_emb, the
/// rotate_half layout): channel i of a head and channel i + d/2 turn by the angle
/// position · θ^(−2i/d). cos and sin are tabulated at load for every position, in float32 as
/// transformers computes them (the angle is rounded to float32 before its cosine, which matters
/// at thousands of tokens).
final class RotaryEmbedding: @unchecked Sendable {
    let half: Int
    let positions: Int
    private let cosines: UnsafeMutablePointer<Float>
    private let sines: UnsafeMutablePointer<Float>

    init(theta: Double, headDim: Int, positions: Int) {
        half = headDim / 2
        self.positions = positions
        cosines = .allocate(capacity: positions * half)
        sines = .allocate(capacity: positions * half)
        let base = Float(theta)
        let inverseFrequencies = (0..<half).map { i -> Float in
            let exponent = Float(2 * i) / Float(headDim)
            return 1 / Float(pow(Double(base), Double(exponent)))
        }
        for p in 0..<positions {
            for i in 0..<half {
                let angle = Float(p) * inverseFrequencies[i]
                cosines[p * half + i] = Float(cos(Double(angle)))
                sines[p * half + i] = Float(sin(Double(angle)))
            }
        }
    }
    deinit { cosines.deallocate(); sines.deallocate() }

    /// Rotates `heads` consecutive heads of each token in place (Q's and K's: they are adjacent
    /// in the fused projection), rows `ld` apart; `positions` holds each token's position in its sequence.
    func rotate(_ x: UnsafeMutablePointer<Float>, ld: Int, heads: Int, headDim: Int, positions: [Int], threads: Int) {
        let half = half, cosines = cosines, sines = sines
        positions.withUnsafeBufferPointer { positionOf in
            parallelRows(positionOf.count, columns: heads * headDim, threads: threads) { rows in
                for t in rows {
                    let (c, s) = (cosines + positionOf[t] * half, sines + positionOf[t] * half)
                    for head in 0..<heads {
                        let a = x + t * ld + head * headDim, b = a + half
                        for i in 0..<half {
                            let (x1, x2) = (a[i], b[i])
                            a[i] = x1 * c[i] - x2 * s[i]
                            b[i] = x2 * c[i] + x1 * s[i]
                        }
                    }
                }
            }
        }
    }
}
