import Foundation
import SwiftBERTKernels

/// transformers' BertPooler: dense + tanh on each sequence's [CLS] vector. DistilBERT's
/// sequence classifier has its pre_classifier (dense + ReLU) in this place; DeBERTa its
/// ContextPooler (dense + pooler_hidden_act, GELU).
struct BertPooler: Sendable {
    let dense: Linear
    let activation: DenseLayerConfig.Activation

    init(_ root: WeightScope, _ config: ModelConfig) throws {
        let h = config.encoder.hiddenSize
        dense = try root[config.encoder.isDistilBERT ? TensorNames.preClassifier : TensorNames.pooler].linear(k: h, n: h)
        activation = config.heads.task?.poolerActivation ?? (config.encoder.isDistilBERT ? .relu : .tanh)
    }

    /// [sequences × H]: the pooled vector of every sequence of the batch.
    func callAsFunction(_ output: EncoderOutput, threads: Int) -> [Float] {
        let h = output.hiddenSize, m = output.count
        var cls = [Float](repeating: 0, count: m * h), pooled = [Float](repeating: 0, count: m * h)
        for s in 0..<m {
            output.withRow(sequence: s, position: 0) { row in for c in 0..<h { cls[s * h + c] = row[c] } }
        }
        cls.withUnsafeBufferPointer { x in
            pooled.withUnsafeMutableBufferPointer { y in
                dense(x.baseAddress!, m: m, into: y.baseAddress!, .forHead(rows: m, threads: threads))
                activation.apply(y.baseAddress!, count: m * h)
            }
        }
        return pooled
    }
}

/// transformers' ModernBertPredictionHead before a classifier: dense, GELU, LayerNorm (no
/// biases in ModernBERT: the converter stores zeros). Read-only after load, as `Linear`.
struct ModernBertPredictionHead: @unchecked Sendable {
    let dense: Linear
    let layerNorm: LayerNorm

    init(_ root: WeightScope, _ config: ModelConfig) throws {
        let h = config.encoder.hiddenSize, scope = root[TensorNames.classifierTransform]
        dense = try scope[TensorNames.dense].linear(k: h, n: h)
        layerNorm = try scope[TensorNames.layerNorm].layerNorm(size: h, eps: config.encoder.layerNormEps)
    }

    /// [m × H] rows through the head, into fresh rows.
    func callAsFunction(_ x: UnsafePointer<Float>, m: Int, threads: Int) -> [Float] {
        var y = [Float](repeating: 0, count: m * dense.n)
        y.withUnsafeMutableBufferPointer {
            dense(x, m: m, into: $0.baseAddress!, .forHead(rows: m, threads: threads))
            gelu($0.baseAddress!, count: m * dense.n)
            layerNorm($0.baseAddress!, residual: nil, m: m, threads: threads)
        }
        return y
    }
}

/// transformers' BertForSequenceClassification head: the pooler, then the classifier (dropout
/// is inactive at inference). DistilBertForSequenceClassification: pre_classifier, then the
/// classifier. ModernBertForSequenceClassification: the first token or the mean of all
/// (classifier_pooling), its prediction head, then the classifier. A cross-encoder is this head
/// with one label. Its output is one row of logits per sequence, in `labels` order.
public struct SequenceClassificationHead: Head {
    /// What the classifier reads.
    enum Pooler {
        case bert(BertPooler)
        case modernBERT(ModernBertPredictionHead, Pooling)
    }
    let pooler: Pooler
    let classifier: Linear
    /// Class names in id order (id2label).
    public let labels: [String]

    public init(_ encoder: any EncoderModel) throws {
        (labels, classifier) = try encoder.classifier(.sequenceClassification, HeadKind.sequenceClassification, "*ForSequenceClassification")
        if let pooling = encoder.config.heads.task?.classifierPooling {
            pooler = .modernBERT(try ModernBertPredictionHead(encoder.headScope, encoder.config), pooling)
        } else {
            pooler = .bert(try BertPooler(encoder.headScope, encoder.config))
        }
    }

    /// The first token, unless ModernBERT's classifier pools the mean.
    public func rowsRead(_ batch: HeadBatch) -> HeadRows {
        if case .modernBERT(_, .mean) = pooler { return .all }
        return .position(0)
    }

    public func callAsFunction(_ output: EncoderOutput, _ batch: HeadBatch) -> [[Float]] {
        let pooled: [Float]
        switch pooler {
        case let .bert(pooler): pooled = pooler(output, threads: batch.threads)
        case let .modernBERT(head, pooling):
            let h = output.hiddenSize
            var vectors = [Float](repeating: 0, count: output.count * h)
            for s in 0..<output.count {
                let rows = pooling == .mean ? output.lengths[s] : 1
                for position in 0..<rows {
                    output.withRow(sequence: s, position: position) { row in for c in 0..<h { vectors[s * h + c] += row[c] } }
                }
                for c in 0..<h { vectors[s * h + c] /= Float(rows) }
            }
            pooled = vectors.withUnsafeBufferPointer { head($0.baseAddress!, m: output.count, threads: batch.threads) }
        }
        return pooled.withUnsafeBufferPointer { classifier.rows($0.baseAddress!, m: output.count, threads: batch.threads) }
    }
}

/// transformers' BertForTokenClassification head: the classifier on every token's hidden state
/// (ModernBertForTokenClassification: through its prediction head first). Its output is
/// [position][label] logits per sequence.
public struct TokenClassificationHead: Head {
    let transform: ModernBertPredictionHead?
    let classifier: Linear
    /// Class names in id order (id2label).
    public let labels: [String]

    public init(_ encoder: any EncoderModel) throws {
        (labels, classifier) = try encoder.classifier(.tokenClassification, HeadKind.tokenClassification, "*ForTokenClassification")
        transform = encoder.config.heads.task?.classifierPooling != nil ? try ModernBertPredictionHead(encoder.headScope, encoder.config) : nil
    }

    public func callAsFunction(_ output: EncoderOutput, _ batch: HeadBatch) -> [[[Float]]] {
        let threads = batch.threads, m = output.lengths.reduce(0, +)
        // The packed hidden states are one [T × H] matrix: one product for the whole batch.
        var rows: ArraySlice<[Float]>
        if let transform {
            let transformed = transform(output.storage, m: m, threads: threads)
            rows = transformed.withUnsafeBufferPointer { classifier.rows($0.baseAddress!, m: m, threads: threads) }[...]
        } else {
            rows = classifier.rows(output.storage, m: m, threads: threads)[...]
        }
        return output.lengths.map { length in
            defer { rows = rows.dropFirst(length) }
            return Array(rows.prefix(length))
        }
    }
}

extension EncoderModel {
    /// The labels and the classifier layer (hidden → labels) of the task head `task`, or an error
    /// saying which checkpoint to use.
    func classifier(_ task: TaskHead, _ kind: HeadKind, _ savedFrom: String) throws -> ([String], Linear) {
        guard config.heads.task?.kind == task, let labels = config.heads.task?.labels else {
            throw missingHead(kind, "use a checkpoint saved from a \(savedFrom) model (bert convert keeps its classifier)")
        }
        return (labels, try headScope[TensorNames.classifier].linear(k: config.encoder.hiddenSize, n: labels.count))
    }
}

extension Linear {
    /// x[m × k]·Wᵀ + b as m rows of n, for a head. With INT8 weights the head is weight-only
    /// (float activations), as the masked-LM head: it runs on few rows, so this costs nothing.
    func rows(_ x: UnsafePointer<Float>, m: Int, threads: Int) -> [[Float]] {
        var y = [Float](repeating: 0, count: m * n)
        y.withUnsafeMutableBufferPointer { self(x, m: m, into: $0.baseAddress!, .forHead(rows: m, threads: threads)) }
        return (0..<m).map { Array(y[$0 * n..<($0 + 1) * n]) }
    }
}

extension ForwardContext {
    /// A context that only runs a head's Linear layers on `rows` rows: no scratch, and no
    /// activation quantisation (INT8 head weights run weight-only).
    static func forHead(rows: Int, threads: Int) -> ForwardContext {
        ForwardContext(sequences: PackedSequences(lengths: [rows]), threads: threads, quantizesActivations: false)
    }
}

extension DenseLayerConfig.Activation {
    /// In place, on `count` values.
    func apply(_ y: UnsafeMutablePointer<Float>, count: Int) {
        switch self {
        case .tanh: for i in 0..<count { y[i] = Foundation.tanh(y[i]) }
        case .relu: for i in 0..<count { y[i] = Swift.max(y[i], 0) }
        case .gelu: SwiftBERTKernels.gelu(y, count: count)
        case .identity: break
        }
    }
}

/// The logistic function (Hugging Face's sigmoid scores for one label or multi-label heads).
public func sigmoid(_ x: Float) -> Float { 1 / (1 + Foundation.exp(-x)) }
