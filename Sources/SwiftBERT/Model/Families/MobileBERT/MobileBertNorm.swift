/// transformers' NoNorm: x·weight + bias elementwise, without statistics (MobileBERT's default
/// normalisation, cheaper than LayerNorm on a phone).
struct NoNorm {
    let weight: UnsafePointer<Float>
    let bias: UnsafePointer<Float>
    let size: Int

    init(_ scope: WeightScope, size: Int) throws {
        weight = try scope.file.floats(scope.name + ".weight", shape: [size]).baseAddress!
        bias = try scope.file.floats(scope.name + ".bias", shape: [size]).baseAddress!
        self.size = size
    }

    /// x[m × size] = (x + residual)·weight + bias, in place.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, m: Int) {
        for r in 0..<m {
            let row = x + r * size
            if let residual {
                let res = residual + r * size
                for c in 0..<size { row[c] += res[c] }
            }
            for c in 0..<size { row[c] = row[c] * weight[c] + bias[c] }
        }
    }
}

/// transformers' NORM2FN[config.normalization_type]: NoNorm or LayerNorm, stored under the
/// same `LayerNorm.weight`/`.bias` names.
enum MobileBertNorm {
    case noNorm(NoNorm)
    case layerNorm(LayerNorm)

    /// `eps` is the LayerNorm's: transformers builds some of MobileBERT's norms with
    /// config.layer_norm_eps and others with nn.LayerNorm's default 1e-5 (`defaultEps`).
    init(_ scope: WeightScope, size: Int, eps: Float, _ normalization: MobileBertConfig.Normalization) throws {
        switch normalization {
        case .noNorm: self = .noNorm(try NoNorm(scope, size: size))
        case .layerNorm: self = .layerNorm(try scope.layerNorm(size: size, eps: eps))
        }
    }

    /// nn.LayerNorm's eps when transformers passes none.
    static let defaultEps: Float = 1e-5

    /// x[m × size] = norm(x + residual), in place.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, residual: UnsafePointer<Float>?, m: Int) {
        switch self {
        case .noNorm(let norm): norm(x, residual: residual, m: m)
        case .layerNorm(let norm): norm(x, residual: residual, m: m)
        }
    }
}
