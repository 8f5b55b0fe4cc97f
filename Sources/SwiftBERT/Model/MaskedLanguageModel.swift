import Foundation

/// An encoder with a masked-LM head, as the masked-word pipelines use it (`FillMask`,
/// `WordSuggester`, `bert fill`, `bert suggest`): `BertModel` (BERT, DistilBERT, and the
/// BERT-shaped families) or `MobileBertModel`. `loadMaskedLanguageModel` picks the one a
/// converted folder needs.
public protocol MaskedLanguageModel: AnyObject, Sendable {
    var config: BertConfig { get }
    var folder: URL { get }
    /// Last-layer hidden states for a batch of token-id sequences, each framed with [CLS]/[SEP].
    func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?) throws -> EncoderOutput
    /// The masked-LM head alone: vocabulary logits [m × V] for m hidden rows [m × H].
    func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float]
}

extension MaskedLanguageModel {
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: nil)
    }

    /// Vocabulary logits at the given (sequence, position) pairs of an encoded batch.
    public func maskedLMLogits(_ output: EncoderOutput, at positions: [(sequence: Int, position: Int)]) throws -> [[Float]] {
        guard config.hasMaskedLMHead else { throw missingMaskedLMHead }
        guard !positions.isEmpty else { return [] }
        let h = output.hiddenSize
        var gathered = [Float](repeating: 0, count: positions.count * h)
        for (i, p) in positions.enumerated() {
            guard p.sequence >= 0, p.sequence < output.count, p.position >= 0, p.position < output.lengths[p.sequence] else {
                throw BertError.invalidInput(reason: "position \(p) is outside the encoded batch")
            }
            output.withRow(sequence: p.sequence, position: p.position) { row in
                for c in 0..<h { gathered[i * h + c] = row[c] }
            }
        }
        let logits = try maskedLMLogits(hiddenRows: gathered, count: positions.count)
        let v = config.vocabSize
        return (0..<positions.count).map { Array(logits[$0 * v..<($0 + 1) * v]) }
    }

    var missingMaskedLMHead: BertError {
        .invalidInput(reason: "\(folder.lastPathComponent) has no masked-LM head (cls.predictions); use a *ForMaskedLM checkpoint such as splade-tiny")
    }
}

/// The masked-LM a converted folder holds: a `MobileBertModel` for MobileBERT, else a `BertModel`
/// (which also loads a folder without a masked-LM head, for its encoder).
public func loadMaskedLanguageModel(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws -> any ConvertedModel & MaskedLanguageModel {
    let config = try BertConfig.load(from: folder.appendingPathComponent("config.json"))
    if config.mobileBert != nil { return try MobileBertModel(folder: folder, threads: threads, precision: precision) }
    return try BertModel(folder: folder, threads: threads, precision: precision)
}
