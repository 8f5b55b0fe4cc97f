import Foundation

/// How token vectors become one sentence vector.
public enum Pooling: String, Codable, Sendable, CaseIterable {
    case mean, cls
}

/// The hyper-parameters of a converted model: Hugging Face's config.json fields the engine
/// uses, plus what the converter learned from sentence-transformers' files.
public struct BertConfig: Codable, Sendable, Equatable {
    public var vocabSize: Int
    public var hiddenSize: Int
    public var numHiddenLayers: Int
    public var numAttentionHeads: Int
    public var intermediateSize: Int
    public var maxPositionEmbeddings: Int
    public var typeVocabSize: Int
    public var layerNormEps: Float
    public var hiddenAct: String
    /// Default pooling for sentence embeddings (sentence-transformers' 1_Pooling, else mean).
    public var pooling: Pooling
    /// Longest input in tokens, [CLS] and [SEP] included (sentence-transformers' max_seq_length, else max_position_embeddings).
    public var maxSequenceLength: Int
    /// True when the checkpoint carries the masked-LM head (cls.predictions.*).
    public var hasMaskedLMHead: Bool
    /// True when the masked-LM decoder is a separate matrix rather than the word embeddings.
    public var hasUntiedDecoder: Bool

    enum CodingKeys: String, CodingKey {
        case vocabSize = "vocab_size", hiddenSize = "hidden_size", numHiddenLayers = "num_hidden_layers"
        case numAttentionHeads = "num_attention_heads", intermediateSize = "intermediate_size"
        case maxPositionEmbeddings = "max_position_embeddings", typeVocabSize = "type_vocab_size"
        case layerNormEps = "layer_norm_eps", hiddenAct = "hidden_act", pooling
        case maxSequenceLength = "max_seq_length", hasMaskedLMHead = "has_masked_lm_head"
        case hasUntiedDecoder = "has_untied_decoder"
    }

    public var headDim: Int { hiddenSize / numAttentionHeads }

    /// Rejects values that would make the engine misbehave, before any weight is touched.
    public func validate(path: String) throws {
        func fail(_ reason: String) -> BertError { .invalidConfig(path: path, reason: reason) }
        let sizes = [("vocab_size", vocabSize), ("hidden_size", hiddenSize), ("num_hidden_layers", numHiddenLayers),
                     ("num_attention_heads", numAttentionHeads), ("intermediate_size", intermediateSize),
                     ("max_position_embeddings", maxPositionEmbeddings), ("type_vocab_size", typeVocabSize),
                     ("max_seq_length", maxSequenceLength)]
        for (name, value) in sizes where value <= 0 || value > 1 << 24 {
            throw fail("\(name) is \(value); it must be a positive size")
        }
        guard hiddenSize % numAttentionHeads == 0 else {
            throw fail("hidden_size \(hiddenSize) is not divisible by num_attention_heads \(numAttentionHeads)")
        }
        guard hiddenAct == "gelu" else {
            throw fail("hidden_act '\(hiddenAct)' is not supported; SwiftBERT implements BERT's exact erf GELU ('gelu')")
        }
        guard layerNormEps > 0, layerNormEps.isFinite else { throw fail("layer_norm_eps must be a positive number") }
        guard maxSequenceLength <= maxPositionEmbeddings else {
            throw fail("max_seq_length \(maxSequenceLength) exceeds max_position_embeddings \(maxPositionEmbeddings)")
        }
    }

    public static func load(from url: URL) throws -> BertConfig {
        guard let data = try? Data(contentsOf: url) else {
            throw BertError.fileNotFound(path: url.path, hint: "A converted model folder holds config.json; convert one with `bert convert`.")
        }
        let config: BertConfig
        do { config = try JSONDecoder().decode(BertConfig.self, from: data) }
        catch { throw BertError.invalidConfig(path: url.path, reason: "\(describe(error)); re-convert the model with `bert convert`") }
        try config.validate(path: url.path)
        return config
    }

    public func write(to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do { try encoder.encode(self).write(to: url, options: .atomic) }
        catch { throw BertError.outputFailed(path: url.path, reason: error.localizedDescription) }
    }
}

/// A one-line reason for a JSON decoding failure.
func describe(_ error: Error) -> String {
    switch error {
    case DecodingError.keyNotFound(let key, _): return "missing field '\(key.stringValue)'"
    case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
        return "bad value at '\(context.codingPath.map { $0.stringValue }.joined(separator: "."))': \(context.debugDescription)"
    case DecodingError.dataCorrupted(let context): return "not valid JSON: \(context.debugDescription)"
    default: return "\(error)"
    }
}
