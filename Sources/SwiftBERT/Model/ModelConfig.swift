import Foundation

/// How token vectors become one sentence vector: sentence-transformers' pooling modes, with
/// their names as its `pooling_mode` writes them.
public enum Pooling: String, Codable, Sendable, CaseIterable {
    /// The first token ([CLS]; the first token after the prompt when the prompt is excluded).
    case cls
    /// Average over the tokens.
    case mean
    /// Element-wise maximum over the tokens.
    case max
    /// Sum over the tokens divided by the square root of their count.
    case meanSqrtLenTokens = "mean_sqrt_len_tokens"
    /// Average weighted by position (1 for the first token, 2 for the second, ...).
    case weightedMean = "weightedmean"
    /// The last token ([SEP]).
    case lastToken = "lasttoken"
}

/// The checkpoint kind a converted model came from, as config.json's `architecture` names it
/// ("bert", "xlm-roberta"). Each family declares its own, in its folder (`ModelFamily.variants`),
/// so a new family adds no case here.
public struct Architecture: RawRepresentable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Its name in config.json.
    public let rawValue: String
    /// The family's name as its authors write it.
    public let displayName: String
    /// The prefix of its transformers classes ("Bert" of BertModel, BertForMaskedLM, …).
    public let className: String

    init(_ rawValue: String, displayName: String, className: String) {
        (self.rawValue, self.displayName, self.className) = (rawValue, displayName, className)
    }

    /// Every architecture the families run, in the order `ModelFamilies.all` asks them.
    public static var allCases: [Architecture] { ModelFamilies.all.flatMap(\.variants) }

    /// The architecture config.json names `rawValue`; nil when no family runs it.
    public init?(rawValue: String) {
        guard let known = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    public init(from decoder: Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let known = Architecture(rawValue: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "architecture '\(printable(name))' is none SwiftBERT runs (\(Self.allCases.map(\.rawValue).joined(separator: ", ")))"))
        }
        self = known
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static func == (a: Self, b: Self) -> Bool { a.rawValue == b.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    public var description: String { rawValue }
}

/// A classification layer on top of the encoder, as transformers' *For*Classification classes.
public enum TaskHead: String, Codable, Sendable {
    /// One label set per text (or text pair): pooler (dense + tanh on [CLS]) then classifier.
    case sequenceClassification = "sequence_classification"
    /// One label per token: classifier on every hidden state.
    case tokenClassification = "token_classification"
}

/// A sentence-transformers Dense module (`2_Dense`): y = activation(W·x + b). Its weights are
/// stored in the converted model.safetensors as `sentence_transformers.dense.<index>.{weight,bias}`.
public struct DenseLayerConfig: Codable, Sendable, Equatable {
    /// The Dense module's activation function.
    public enum Activation: String, Codable, Sendable { case tanh, identity, relu, gelu }
    public var inFeatures: Int
    public var outFeatures: Int
    public var hasBias: Bool
    public var activation: Activation

    enum CodingKeys: String, CodingKey {
        case inFeatures = "in_features", outFeatures = "out_features", hasBias = "bias", activation
    }
}

/// sentence-transformers' modules after the encoder, read by the converter from the files beside
/// the checkpoint (modules.json, 1_Pooling, 2_Dense, config_sentence_transformers.json): how
/// token vectors become one sentence vector (`SentenceHead`).
public struct SentenceTransformersConfig: Codable, Sendable, Equatable {
    /// Default pooling for sentence embeddings (sentence-transformers' 1_Pooling, else mean).
    public var pooling: Pooling = .mean
    /// sentence-transformers' `include_prompt` (nil: true): false leaves the prompt's tokens,
    /// [CLS] included, out of the pooling.
    public var includePrompt: Bool? = nil
    /// Whether sentence vectors are L2-normalised: the Normalize module is in modules.json.
    /// nil (a folder without modules.json): true, SwiftBERT's long-standing default.
    public var normalize: Bool? = nil
    /// sentence-transformers' Dense modules after pooling, in order.
    public var denseLayers: [DenseLayerConfig]? = nil
    /// `prompts` and `default_prompt_name` from config_sentence_transformers.json.
    public var prompts: [String: String]? = nil
    public var defaultPromptName: String? = nil

    public init() {}

    enum CodingKeys: String, CodingKey {
        case pooling, includePrompt = "include_prompt", normalize, denseLayers = "dense_layers", prompts
        case defaultPromptName = "default_prompt_name"
    }
}

/// The classification head a *ForSequenceClassification or *ForTokenClassification checkpoint
/// carries besides the encoder.
public struct TaskHeadConfig: Codable, Sendable, Equatable {
    public var kind: TaskHead
    /// Class names in id order (id2label).
    public var labels: [String]? = nil
    /// Hugging Face's problem_type: "multi_label_classification" scores with sigmoid, not softmax.
    public var problemType: String? = nil
    /// ModernBERT's classifier_pooling: a sequence classifier reads the first token (cls) or the
    /// mean of all tokens, through its prediction head (dense, GELU, LayerNorm). nil: BERT's pooler.
    public var classifierPooling: Pooling? = nil
    /// The activation after the pooler's dense layer, when not BERT's tanh (DistilBERT's ReLU
    /// aside): DeBERTa's ContextPooler takes pooler_hidden_act, GELU. nil: the family's default.
    public var poolerActivation: DenseLayerConfig.Activation? = nil

    public init(kind: TaskHead) { self.kind = kind }

    enum CodingKeys: String, CodingKey {
        case kind = "head", labels, problemType = "problem_type", classifierPooling = "classifier_pooling"
        case poolerActivation = "pooler_activation"
    }
}

/// A converted model's config.json, in two parts: the encoder (the hyper-parameters every
/// family shares, and its family's own fields) and the heads over it. Model code reads
/// `encoder` only; the heads and pipelines read `heads`.
///
/// On disk it stays the one flat document the converter has always written (the encoder's
/// fields, sentence-transformers' and the task head's side by side), so every folder converted
/// before this type reads unchanged and a new one reads in an older SwiftBERT.
public struct ModelConfig: Codable, Sendable, Equatable {
    public var encoder: EncoderConfig
    public var heads: HeadsConfig

    public init(encoder: EncoderConfig, heads: HeadsConfig = .init()) {
        (self.encoder, self.heads) = (encoder, heads)
    }

    public init(from decoder: Decoder) throws {
        encoder = try EncoderConfig(from: decoder)
        heads = try HeadsConfig(from: decoder)
    }

    public func encode(to encoder: Encoder) throws {
        try self.encoder.encode(to: encoder)
        try heads.encode(to: encoder)
    }

    /// Length of the sentence vectors: the last Dense layer's width, else hidden_size.
    public var embeddingDimension: Int { heads.sentence.denseLayers?.last?.outFeatures ?? encoder.hiddenSize }

    /// Largest value accepted for any size: far above any BERT (vocabularies of 250k, hidden 4096),
    /// low enough that no product of two sizes overflows and no table is sized before the
    /// weights file is checked to hold it.
    public static let maximumSize = 1 << 24

    /// Rejects values that would make the engine misbehave, before any weight is touched.
    public func validate(path: String) throws {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        let fix = "fix config.json or convert the checkpoint again with `bert convert`"
        try encoder.validate(fail: { fail("\($0): \(fix)") })
        if let width = heads.colbertDimension, width <= 0 || width > Self.maximumSize {
            throw fail("colbert_dim is \(width); it must be a positive integer: \(fix)")
        }
        var width = encoder.hiddenSize
        for (i, dense) in (heads.sentence.denseLayers ?? []).enumerated() {
            guard dense.inFeatures == width, dense.outFeatures > 0, dense.outFeatures <= Self.maximumSize else {
                throw fail("dense layer \(i) maps \(dense.inFeatures) to \(dense.outFeatures) features, but its input has \(width): \(fix)")
            }
            width = dense.outFeatures
        }
        if let name = heads.sentence.defaultPromptName, heads.sentence.prompts?[name] == nil {
            throw fail("default_prompt_name '\(printable(name))' is not one of the prompts: \(fix)")
        }
    }

    public static func load(from url: URL) throws -> ModelConfig {
        let data: Data
        do {
            data = try readBoundedFile(url, limit: 4 << 20, what: "config.json")
        } catch CocoaError.fileReadNoSuchFile {
            throw SwiftBERTError.fileNotFound(path: url.path, hint: "A converted model folder holds config.json; convert one with `bert convert`.")
        }
        return try decode(data, path: url.path)
    }

    /// Decodes and validates a converted model's config.json (the loader's path, and the fuzzer's).
    static func decode(_ data: Data, path: String) throws -> ModelConfig {
        // Before decoding: some of transformers' configs decode, and would fail later on the weights.
        if isHuggingFaceConfig(data) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            throw SwiftBERTError.invalidConfig(path: path, reason: "this is a Hugging Face checkpoint's config.json, not a converted model's; "
                + "convert the folder once with `bert convert \(folder) OUT` and use OUT")
        }
        let config: ModelConfig
        do { config = try JSONDecoder().decode(ModelConfig.self, from: data) }
        catch {
            throw SwiftBERTError.invalidConfig(path: path, reason: "\(diagnose(data) ?? describe(error)); fix config.json or convert the model again with `bert convert`")
        }
        try config.validate(path: path)
        return config
    }

    /// Whether a config.json is transformers' own (it names `model_type`, `architectures` or
    /// `transformers_version`, which `bert convert` never writes) rather than a converted model's:
    /// the loader's refusal here and `ModelLocator.converted`'s conversion on first use.
    static func isHuggingFaceConfig(_ data: Data) -> Bool {
        guard case let .object(json)? = try? JSONDecoder().decode(JSONValue.self, from: data) else { return false }
        return json["model_type"] != nil || json["architectures"] != nil || json["transformers_version"] != nil
    }

    /// Which field is wrong when JSONDecoder only says "not valid JSON" (it does for 2.5 or 1e30
    /// where an integer belongs): nil if the document itself is not JSON.
    static func diagnose(_ data: Data) -> String? {
        guard case let .object(json)? = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        let integers: [EncoderConfig.CodingKeys] = [.vocabSize, .hiddenSize, .numHiddenLayers, .numAttentionHeads, .intermediateSize,
                                      .maxPositionEmbeddings, .typeVocabSize, .maxSequenceLength]
        for key in integers {
            if case let .number(value)? = json[key.rawValue], value != value.rounded() || abs(value) > 9e15 {
                return "\(key.rawValue) is \(value), not an integer"
            }
        }
        if case let .number(value)? = json[EncoderConfig.CodingKeys.layerNormEps.rawValue], Float(value).isInfinite {
            return "layer_norm_eps is \(value), out of range"
        }
        return nil
    }

    public func write(to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try SwiftBERTError.writing(url.path) { try encoder.encode(self).write(to: url, options: .atomic) }
    }
}

/// The name of `ModelConfig` before it had two parts.
@available(*, deprecated, renamed: "ModelConfig")
public typealias BertConfig = ModelConfig
