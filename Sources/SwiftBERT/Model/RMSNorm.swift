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
        callAsFunction(x, into: x, m: m, threads: threads)
    }

    /// out[m × size] = RMSNorm(x), rows split across threads; out may be x. Out of place, a
    /// pre-norm layer reads the residual stream and writes its normalised copy in one pass (a
    /// serial copy first was a pass over [T × H] on one thread, twice a layer).
    func callAsFunction(_ x: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, m: Int, threads: Int) {
        let (eps, size) = (eps, scale.count)
        scale.withUnsafeBufferPointer { scale in
            let scale = scale.baseAddress!
            parallelRows(m, columns: size, threads: threads) { rows in
                for r in rows { Self.normalize(x + r * size, into: out + r * size, count: size, scale: scale, eps: eps) }
            }
        }
    }

    /// One vector of `count` in place.
    static func normalize(_ v: UnsafeMutablePointer<Float>, count: Int, scale: UnsafePointer<Float>, eps: Float) {
        normalize(v, into: v, count: count, scale: scale, eps: eps)
    }

    /// out = RMSNorm(v) for one vector of `count`; out may be v. On explicit 16-lane vectors, then
    /// one by one: left to LLVM, the loop took its scalar fallback whenever out was v (its overlap
    /// check failing), 262 against 40 ns for 1,024 floats. The same products in the same order
    /// as element by element, so the same floats.
    static func normalize(_ v: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count: Int, scale: UnsafePointer<Float>, eps: Float) {
        let inverse = inverseRootMeanSquare(v, count: count, eps: eps)
        let factor = SIMD16<Float>(repeating: inverse)
        var i = 0
        while i &+ 16 <= count {
            let x = UnsafeRawPointer(v + i).loadUnaligned(as: SIMD16<Float>.self)
            let w = UnsafeRawPointer(scale + i).loadUnaligned(as: SIMD16<Float>.self)
            UnsafeMutableRawPointer(out + i).storeBytes(of: x * factor * w, as: SIMD16<Float>.self)
            i &+= 16
        }
        while i < count { out[i] = v[i] * inverse * scale[i]; i &+= 1 }
    }

    /// 1 / √(mean(v²) + ε).
    @inline(__always)
    private static func inverseRootMeanSquare(_ v: UnsafePointer<Float>, count: Int, eps: Float) -> Float {
        // Eight running sums: one sum's chain of dependent additions took 4 cycles an element,
        // and Gemma's 4 RMSNorms a layer (and Q's and K's per head) took 7 % of a pass at 1x128.
        // A float's square is exact in a double, so the order moves the sum by ~1e-16 relative.
        var lanes = SIMD8<Double>()
        var i = 0
        while i + 8 <= count {
            for j in 0..<8 { let x = Double(v[i + j]); lanes[j] += x * x }
            i += 8
        }
        var sum = lanes.sum()
        while i < count { sum += Double(v[i]) * Double(v[i]); i += 1 }
        return 1 / (Float(sum / Double(count)) + eps).squareRoot()
    }
}
