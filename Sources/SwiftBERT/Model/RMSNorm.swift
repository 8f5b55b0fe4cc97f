import Foundation
import SwiftBERTKernels

/// RMSNorm: x / √(mean(x²) + ε) · (offset + weight), in float32 as transformers computes it (the
/// mean of squares summed in double here: at most half an ulp from PyTorch's pairwise sum).
/// Gemma scales by 1 + weight (offset 1); Qwen3 and Llama by the weight itself (offset 0).
struct RMSNorm {
    /// offset + weight, made once at load.
    let scale: [Float]
    let eps: Float

    init(_ scope: WeightScope, size: Int, eps: Float, offset: Float) throws {
        let weight = try scope.file.floats(scope.name + ".weight", shape: [size])
        (scale, self.eps) = (weight.map { offset + $0 }, eps)  // offset 0: the weight itself, exactly
    }

    /// Normalises m rows in place, rows split across threads.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, m: Int, threads: Int) {
        let eps = eps, size = scale.count
        scale.withUnsafeBufferPointer { scale in
            let scale = scale.baseAddress!
            parallelRows(m, columns: size, threads: threads) { rows in
                for r in rows { Self.normalize(x + r * size, count: size, scale: scale, eps: eps) }
            }
        }
    }

    /// One vector of `count` in place.
    static func normalize(_ v: UnsafeMutablePointer<Float>, count: Int, scale: UnsafePointer<Float>, eps: Float) {
        var sum: Double = 0
        for i in 0..<count { sum += Double(v[i]) * Double(v[i]) }
        let inverse = 1 / (Float(sum / Double(count)) + eps).squareRoot()
        for i in 0..<count { v[i] = v[i] * inverse * scale[i] }
    }
}
