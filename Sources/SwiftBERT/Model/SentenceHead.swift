import Foundation

/// sentence-transformers' modules after the Transformer, in their order: Pooling, then the
/// Dense modules, then Normalize when the folder has it. Any encoder has it: pooling needs no
/// weights, and the Dense modules' are in the converted file.
public struct SentenceHead: Head {
    /// How token vectors are pooled (the model's own, from its 1_Pooling, unless set).
    public var pooling: Pooling
    /// Whether vectors are L2-normalised (the model's Normalize module, unless set).
    public var normalize: Bool
    /// Matryoshka: only the first `dimensions` values are kept, before the normalisation, so a
    /// cut vector is a unit vector again (TEI's and OpenAI's `dimensions`); nil keeps them all.
    public var dimensions: Int?
    let includePrompt: Bool
    /// sentence-transformers' Dense modules: a Linear layer and its activation each.
    let dense: [(linear: Linear, activation: DenseLayerConfig.Activation)]

    public init(_ encoder: any EncoderModel) throws {
        let config = encoder.config, root = encoder.headScope
        pooling = config.heads.sentence.pooling
        includePrompt = config.heads.sentence.includePrompt ?? true
        normalize = config.heads.sentence.normalize ?? true
        dense = try (config.heads.sentence.denseLayers ?? []).enumerated().map { index, layer in
            (try root[TensorNames.sentenceDense(index)].linear(k: layer.inFeatures, n: layer.outFeatures), layer.activation)
        }
    }

    /// [CLS] pooling reads one row ([CLS], or the first after a prompt left out), last-token
    /// pooling the last; the others read every row.
    public func rowsRead(_ batch: HeadBatch) -> HeadRows {
        switch pooling {
        case .cls: .position(includePrompt ? 0 : batch.promptLength)
        case .lastToken: .last
        default: .all
        }
    }

    /// The sentence vector of every sequence of the batch. `batch.promptLength` counts [CLS] and
    /// the prompt's tokens; they are left out of the pooling when the model says include_prompt false.
    public func callAsFunction(_ output: EncoderOutput, _ batch: HeadBatch) -> [[Float]] {
        let m = output.count, threads = batch.threads
        var width = output.hiddenSize
        var x = (0..<m).flatMap { pool(output, sequence: $0, mode: pooling, skipping: includePrompt ? 0 : batch.promptLength) }
        for (linear, activation) in dense {
            var y = [Float](repeating: 0, count: m * linear.n)
            x.withUnsafeBufferPointer { x in
                y.withUnsafeMutableBufferPointer { y in
                    linear(x.baseAddress!, m: m, into: y.baseAddress!, .forHead(rows: m, threads: threads))
                    activation.apply(y.baseAddress!, count: m * linear.n)
                }
            }
            (x, width) = (y, linear.n)
        }
        let kept = min(dimensions ?? width, width)
        return (0..<m).map { s in
            var v = Array(x[s * width..<s * width + kept])
            if normalize { l2Normalize(&v) }
            return v
        }
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
package func l2Normalize(_ v: inout [Float]) {
    var sumSquares: Float = 0
    for x in v { sumSquares += x * x }
    let inverse = 1 / Swift.max(sumSquares.squareRoot(), 1e-12)
    for c in v.indices { v[c] *= inverse }
}
