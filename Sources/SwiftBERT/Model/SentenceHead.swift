import Foundation

/// sentence-transformers' modules after the Transformer, in their order: Pooling, then the
/// Dense modules, then Normalize when the folder has it.
struct SentenceHead {
    let pooling: Pooling
    let includePrompt: Bool
    let dense: [DenseLayer]
    let normalize: Bool

    init(_ weights: SafeTensorsFile, _ config: BertConfig) throws {
        pooling = config.pooling
        includePrompt = config.includePrompt ?? true
        normalize = config.normalize ?? true
        dense = try (config.denseLayers ?? []).enumerated().map { index, layer in
            try DenseLayer(weights, "sentence_transformers.dense.\(index)", layer)
        }
    }

    /// The sentence vector of sequence `s`. `promptLength` counts [CLS] and the prompt's tokens;
    /// they are left out of the pooling when the model says include_prompt false.
    func callAsFunction(_ output: EncoderOutput, sequence s: Int, promptLength: Int = 0,
                        pooling override: Pooling? = nil, normalize normalizeOverride: Bool? = nil) -> [Float] {
        var v = pool(output, sequence: s, mode: override ?? pooling, skipping: includePrompt ? 0 : promptLength)
        for layer in dense { v = layer(v) }
        if normalizeOverride ?? normalize { l2Normalize(&v) }
        return v
    }
}

/// Pooling over sequence `s`'s tokens, its first `skipping` tokens masked out, as
/// sentence-transformers' Pooling module computes it (padding never enters: sequences are packed).
func pool(_ output: EncoderOutput, sequence s: Int, mode: Pooling, skipping: Int = 0) -> [Float] {
    let h = output.hiddenSize, n = output.lengths[s]
    let first = min(skipping, n)
    var v = [Float](repeating: 0, count: h)
    func add(_ t: Int, weight: Float = 1) {
        output.withRow(sequence: s, position: t) { row in for c in 0..<h { v[c] += row[c] * weight } }
    }
    switch mode {
    case .cls:
        // The first unmasked token: [CLS], or the first after the prompt (position 0 when all are masked).
        let t = first < n ? first : 0
        output.withRow(sequence: s, position: t) { row in for c in 0..<h { v[c] = row[c] } }
    case .lastToken:
        // The last unmasked token; a zero vector when every token is masked.
        if first < n { output.withRow(sequence: s, position: n - 1) { row in for c in 0..<h { v[c] = row[c] } } }
    case .max:
        v = [Float](repeating: -.infinity, count: h)
        for t in first..<n {
            output.withRow(sequence: s, position: t) { row in for c in 0..<h { v[c] = Swift.max(v[c], row[c]) } }
        }
    case .mean, .meanSqrtLenTokens:
        for t in first..<n { add(t) }
        // Division by max(count, 1e-9), as sentence-transformers clamps it.
        let count = Swift.max(Float(n - first), 1e-9)
        let divisor = mode == .mean ? count : count.squareRoot()
        for c in 0..<h { v[c] /= divisor }
    case .weightedMean:
        // Token t (0-based) weighs t + 1; excluded prompt tokens keep the others' weights.
        var total: Float = 0
        for t in first..<n { add(t, weight: Float(t + 1)); total += Float(t + 1) }
        let divisor = Swift.max(total, 1e-9)
        for c in 0..<h { v[c] /= divisor }
    }
    return v
}

/// torch.nn.functional.normalize: divide by max(‖v‖, 1e-12).
func l2Normalize(_ v: inout [Float]) {
    var sumSquares: Float = 0
    for x in v { sumSquares += x * x }
    let inverse = 1 / Swift.max(sumSquares.squareRoot(), 1e-12)
    for c in v.indices { v[c] *= inverse }
}

/// A small fully connected layer applied to one vector at a time (sentence-transformers' Dense,
/// a classifier): y = activation(W·x + b), W stored [out, in].
struct DenseLayer {
    let weight: [Float]
    let bias: [Float]?
    let inFeatures: Int
    let outFeatures: Int
    let activation: DenseLayerConfig.Activation

    init(_ weights: SafeTensorsFile, _ prefix: String, _ layer: DenseLayerConfig) throws {
        try self.init(weights, prefix, in: layer.inFeatures, out: layer.outFeatures, hasBias: layer.hasBias, activation: layer.activation)
    }

    init(_ weights: SafeTensorsFile, _ prefix: String, in inFeatures: Int, out outFeatures: Int,
         hasBias: Bool = true, activation: DenseLayerConfig.Activation = .identity) throws {
        weight = Array(try weights.floats(prefix + ".weight", shape: [outFeatures, inFeatures]))
        bias = hasBias ? Array(try weights.floats(prefix + ".bias", shape: [outFeatures])) : nil
        (self.inFeatures, self.outFeatures, self.activation) = (inFeatures, outFeatures, activation)
    }

    func callAsFunction(_ x: [Float]) -> [Float] {
        precondition(x.count == inFeatures, "DenseLayer input width")
        return (0..<outFeatures).map { o in
            var sum: Float = 0
            weight.withUnsafeBufferPointer { w in
                let row = w.baseAddress! + o * inFeatures
                for i in 0..<inFeatures { sum += row[i] * x[i] }
            }
            let y = sum + (bias?[o] ?? 0)
            switch activation {
            case .tanh: return tanh(y)
            case .relu: return Swift.max(y, 0)
            case .identity: return y
            }
        }
    }
}
