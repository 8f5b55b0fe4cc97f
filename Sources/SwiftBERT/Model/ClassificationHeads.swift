import Foundation

/// transformers' BertForSequenceClassification head: the pooler (dense + tanh on the [CLS]
/// vector), then the classifier (dropout is inactive at inference). DistilBERT's has
/// pre_classifier (dense + ReLU) in the pooler's place.
struct SequenceClassificationHead {
    let pooler: DenseLayer
    let classifier: DenseLayer

    init(_ weights: SafeTensorsFile, _ config: BertConfig) throws {
        let h = config.hiddenSize, labels = config.labels?.count ?? 0
        pooler = config.isDistilBERT
            ? try DenseLayer(weights, "pre_classifier", in: h, out: h, activation: .relu)
            : try DenseLayer(weights, "pooler.dense", in: h, out: h, activation: .tanh)
        classifier = try DenseLayer(weights, "classifier", in: h, out: labels)
    }

    /// One row of logits per sequence.
    func logits(_ output: EncoderOutput) -> [[Float]] {
        (0..<output.count).map { s in
            let cls = output.withRow(sequence: s, position: 0) { Array(UnsafeBufferPointer(start: $0, count: output.hiddenSize)) }
            return classifier(pooler(cls))
        }
    }
}

/// transformers' BertForTokenClassification head: the classifier on every token's hidden state.
struct TokenClassificationHead {
    let classifier: DenseLayer

    init(_ weights: SafeTensorsFile, _ config: BertConfig) throws {
        classifier = try DenseLayer(weights, "classifier", in: config.hiddenSize, out: config.labels?.count ?? 0)
    }

    /// Logits per token of sequence `s`: [length][labels].
    func logits(_ output: EncoderOutput, sequence s: Int) -> [[Float]] {
        (0..<output.lengths[s]).map { t in
            classifier(output.withRow(sequence: s, position: t) { Array(UnsafeBufferPointer(start: $0, count: output.hiddenSize)) })
        }
    }
}

/// The logistic function (Hugging Face's sigmoid scores for one label or multi-label heads).
func sigmoid(_ x: Float) -> Float { 1 / (1 + Foundation.exp(-x)) }
