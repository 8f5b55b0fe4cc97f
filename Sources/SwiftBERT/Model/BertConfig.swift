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

/// The model families SwiftBERT runs.
public enum Architecture: String, Codable, Sendable, CaseIterable {
    case bert, distilBERT = "distilbert"
    /// MobileBERT: its own encoder (`MobileBertModel`), described by `BertConfig.mobileBert`.
    case mobileBERT = "mobilebert"
    /// RoBERTa and XLM-RoBERTa: BERT's layers, with positions counted from padding_idx + 1,
    /// no token types, and the lm_head in place of cls.predictions.
    case roberta, xlmRoberta = "xlm-roberta"
    /// MPNet: BERT's layers with RoBERTa's positions, no token types, and a relative position
    /// bias in every layer's attention (`relativeAttentionNumBuckets`).
    case mpnet
    /// The rotary-position encoders (`RotaryEncoderModel`, described by `BertConfig.rotary`):
    /// NomicBERT (SwiGLU, no biases), GTE (GeGLU) and ModernBERT (pre-LN, GeGLU, alternating
    /// global and sliding-window layers, no biases).
    case nomicBERT = "nomic_bert", gte, modernBERT = "modernbert"
    /// Gemma 3 as an encoder (EmbeddingGemma: `GemmaEncoderModel`, described by `BertConfig.gemma`).
    case gemma3 = "gemma3_text"
    /// Qwen3 as an embedder (Qwen3-Embedding: `Qwen3EncoderModel`, described by `BertConfig.qwen3`).
    case qwen3
    /// DeBERTa-v2 and v3 (`DebertaEncoderModel`, described by `BertConfig.deberta`): disentangled attention.
    case debertaV2 = "deberta-v2"

    /// The family's name as its authors write it.
    public var displayName: String {
        switch self {
        case .bert: "BERT"
        case .distilBERT: "DistilBERT"
        case .mobileBERT: "MobileBERT"
        case .roberta: "RoBERTa"
        case .xlmRoberta: "XLM-RoBERTa"
        case .mpnet: "MPNet"
        case .nomicBERT: "NomicBERT"
        case .gte: "GTE"
        case .modernBERT: "ModernBERT"
        case .gemma3: "Gemma 3"
        case .qwen3: "Qwen3"
        case .debertaV2: "DeBERTa-v2"
        }
    }

    /// The prefix of its transformers classes ("Bert" of BertModel, BertForMaskedLM, …).
    public var className: String {
        switch self {
        case .bert: "Bert"
        case .distilBERT: "DistilBert"
        case .roberta: "Roberta"
        case .xlmRoberta: "XLMRoberta"
        case .mobileBERT: "MobileBert"
        case .mpnet: "MPNet"
        case .nomicBERT: "NomicBert"
        case .gte: "Gte"
        case .modernBERT: "ModernBert"
        case .gemma3: "Gemma3Text"
        case .qwen3: "Qwen3"
        case .debertaV2: "DebertaV2"
        }
    }
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

/// The hyper-parameters of a converted model: the encoder's (Hugging Face's config.json fields
/// the engine uses), and, apart, sentence-transformers' modules (`sentence`) and the task head
/// (`task`).
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
    /// Longest input in tokens, [CLS] and [SEP] included (sentence-transformers' max_seq_length, else max_position_embeddings).
    public var maxSequenceLength: Int
    /// True when the checkpoint carries the masked-LM head (cls.predictions.*).
    public var hasMaskedLMHead: Bool
    /// True when the masked-LM decoder is a separate matrix rather than the word embeddings.
    public var hasUntiedDecoder: Bool
    /// How token vectors become a sentence vector: sentence-transformers' modules (the head
    /// config, apart from the encoder's).
    public var sentence: SentenceTransformersConfig
    /// True when BERT's pooler (dense + tanh on [CLS]) is stored as pooler.dense.*.
    public var hasPooler: Bool? = nil
    /// Which family the checkpoint came from (nil: BERT). DistilBERT runs the same encoder under
    /// other tensor names, without token types.
    public var architecture: Architecture? = nil
    /// The task head the checkpoint carries besides the encoder (nil: none, or only masked-LM).
    public var task: TaskHeadConfig? = nil
    /// RoBERTa's padding_idx (pad_token_id): positions start at padding_idx + 1, and a
    /// padding token takes position padding_idx (transformers' create_position_ids_from_input_ids).
    /// nil: BERT's positions 0, 1, 2, …
    public var paddingIdx: Int? = nil
    /// MobileBERT's own fields (nil for every other family).
    public var mobileBert: MobileBertConfig? = nil
    /// MPNet's relative_attention_num_buckets: the distance buckets of the position bias shared
    /// by every layer's attention (nil: no relative bias).
    public var relativeAttentionNumBuckets: Int? = nil
    /// The rotary-position encoders' own fields (nil for every other family).
    public var rotary: RotaryEncoderConfig? = nil
    /// The Gemma 3 encoder's own fields (nil for every other family).
    public var gemma: GemmaEncoderConfig? = nil
    /// The Qwen3 encoder's own fields (nil for every other family).
    public var qwen3: Qwen3Config? = nil
    /// The DeBERTa encoder's own fields (nil for every other family).
    public var deberta: DebertaConfig? = nil
    /// BGE-M3's sparse head (`sparse_linear.pt` beside the checkpoint): token weights
    /// relu(sparse_linear(h)), pooled into lexical weights (`LexicalWeightsHead`). nil: none.
    public var hasLexicalWeights: Bool? = nil
    /// Width of BGE-M3's ColBERT head (`colbert_linear.pt`): one vector per token after [CLS]
    /// (`MultiVectorHead`). nil: no multi-vector head.
    public var colbertDimension: Int? = nil

    public init(vocabSize: Int, hiddenSize: Int, numHiddenLayers: Int, numAttentionHeads: Int, intermediateSize: Int,
                maxPositionEmbeddings: Int, typeVocabSize: Int, layerNormEps: Float, hiddenAct: String,
                sentence: SentenceTransformersConfig = .init(), maxSequenceLength: Int, hasMaskedLMHead: Bool, hasUntiedDecoder: Bool) {
        (self.vocabSize, self.hiddenSize, self.numHiddenLayers, self.numAttentionHeads) = (vocabSize, hiddenSize, numHiddenLayers, numAttentionHeads)
        (self.intermediateSize, self.maxPositionEmbeddings, self.typeVocabSize) = (intermediateSize, maxPositionEmbeddings, typeVocabSize)
        (self.layerNormEps, self.hiddenAct, self.sentence, self.maxSequenceLength) = (layerNormEps, hiddenAct, sentence, maxSequenceLength)
        (self.hasMaskedLMHead, self.hasUntiedDecoder) = (hasMaskedLMHead, hasUntiedDecoder)
    }

    enum CodingKeys: String, CodingKey {
        case vocabSize = "vocab_size", hiddenSize = "hidden_size", numHiddenLayers = "num_hidden_layers"
        case numAttentionHeads = "num_attention_heads", intermediateSize = "intermediate_size"
        case maxPositionEmbeddings = "max_position_embeddings", typeVocabSize = "type_vocab_size"
        case layerNormEps = "layer_norm_eps", hiddenAct = "hidden_act"
        case maxSequenceLength = "max_seq_length", hasMaskedLMHead = "has_masked_lm_head"
        case hasUntiedDecoder = "has_untied_decoder"
        case hasPooler = "has_pooler", architecture, paddingIdx = "padding_idx", head
        case mobileBert = "mobilebert", relativeAttentionNumBuckets = "relative_attention_num_buckets"
        case rotary, gemma, qwen3, deberta, hasLexicalWeights = "has_sparse_linear", colbertDimension = "colbert_dim"
    }

    // One flat config.json, as the converter has always written it: the encoder's fields, the
    // sentence-transformers fields and the task head's side by side.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        vocabSize = try c.decode(Int.self, forKey: .vocabSize)
        hiddenSize = try c.decode(Int.self, forKey: .hiddenSize)
        numHiddenLayers = try c.decode(Int.self, forKey: .numHiddenLayers)
        numAttentionHeads = try c.decode(Int.self, forKey: .numAttentionHeads)
        intermediateSize = try c.decode(Int.self, forKey: .intermediateSize)
        maxPositionEmbeddings = try c.decode(Int.self, forKey: .maxPositionEmbeddings)
        typeVocabSize = try c.decode(Int.self, forKey: .typeVocabSize)
        layerNormEps = try c.decode(Float.self, forKey: .layerNormEps)
        hiddenAct = try c.decode(String.self, forKey: .hiddenAct)
        maxSequenceLength = try c.decode(Int.self, forKey: .maxSequenceLength)
        hasMaskedLMHead = try c.decode(Bool.self, forKey: .hasMaskedLMHead)
        hasUntiedDecoder = try c.decode(Bool.self, forKey: .hasUntiedDecoder)
        hasPooler = try c.decodeIfPresent(Bool.self, forKey: .hasPooler)
        architecture = try c.decodeIfPresent(Architecture.self, forKey: .architecture)
        paddingIdx = try c.decodeIfPresent(Int.self, forKey: .paddingIdx)
        mobileBert = try c.decodeIfPresent(MobileBertConfig.self, forKey: .mobileBert)
        relativeAttentionNumBuckets = try c.decodeIfPresent(Int.self, forKey: .relativeAttentionNumBuckets)
        rotary = try c.decodeIfPresent(RotaryEncoderConfig.self, forKey: .rotary)
        gemma = try c.decodeIfPresent(GemmaEncoderConfig.self, forKey: .gemma)
        qwen3 = try c.decodeIfPresent(Qwen3Config.self, forKey: .qwen3)
        deberta = try c.decodeIfPresent(DebertaConfig.self, forKey: .deberta)
        hasLexicalWeights = try c.decodeIfPresent(Bool.self, forKey: .hasLexicalWeights)
        colbertDimension = try c.decodeIfPresent(Int.self, forKey: .colbertDimension)
        sentence = try SentenceTransformersConfig(from: decoder)
        task = c.contains(.head) ? try TaskHeadConfig(from: decoder) : nil
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(vocabSize, forKey: .vocabSize)
        try c.encode(hiddenSize, forKey: .hiddenSize)
        try c.encode(numHiddenLayers, forKey: .numHiddenLayers)
        try c.encode(numAttentionHeads, forKey: .numAttentionHeads)
        try c.encode(intermediateSize, forKey: .intermediateSize)
        try c.encode(maxPositionEmbeddings, forKey: .maxPositionEmbeddings)
        try c.encode(typeVocabSize, forKey: .typeVocabSize)
        try c.encode(layerNormEps, forKey: .layerNormEps)
        try c.encode(hiddenAct, forKey: .hiddenAct)
        try c.encode(maxSequenceLength, forKey: .maxSequenceLength)
        try c.encode(hasMaskedLMHead, forKey: .hasMaskedLMHead)
        try c.encode(hasUntiedDecoder, forKey: .hasUntiedDecoder)
        try c.encodeIfPresent(hasPooler, forKey: .hasPooler)
        try c.encodeIfPresent(architecture, forKey: .architecture)
        try c.encodeIfPresent(paddingIdx, forKey: .paddingIdx)
        try c.encodeIfPresent(mobileBert, forKey: .mobileBert)
        try c.encodeIfPresent(relativeAttentionNumBuckets, forKey: .relativeAttentionNumBuckets)
        try c.encodeIfPresent(rotary, forKey: .rotary)
        try c.encodeIfPresent(gemma, forKey: .gemma)
        try c.encodeIfPresent(qwen3, forKey: .qwen3)
        try c.encodeIfPresent(deberta, forKey: .deberta)
        try c.encodeIfPresent(hasLexicalWeights, forKey: .hasLexicalWeights)
        try c.encodeIfPresent(colbertDimension, forKey: .colbertDimension)
        try sentence.encode(to: encoder)
        try task?.encode(to: encoder)
    }

    public var headDim: Int { hiddenSize / numAttentionHeads }
    public var isDistilBERT: Bool { architecture == .distilBERT }
    /// RoBERTa or XLM-RoBERTa.
    public var isRoberta: Bool { architecture == .roberta || architecture == .xlmRoberta }
    /// Whether the tokenizer's token type ids reach the model. RoBERTa's tokenizers give the
    /// model none (model_input_names has no token_type_ids), so every token is type 0 there,
    /// pairs included. DistilBERT, MPNet and ModernBERT have none at all, and a rotary model
    /// with one type row takes only type 0.
    /// Each family says (`ModelFamily.usesTokenTypes`).
    public var usesTokenTypes: Bool { ModelFamilies.family(of: self).usesTokenTypes(self) }
    /// Whether the checkpoint has no token-type table: the converter stores one all-zero row,
    /// which adds nothing, exactly (DistilBERT, MPNet).
    var lacksTokenTypeTable: Bool { architecture == .distilBERT || architecture == .mpnet || architecture == .modernBERT }
    /// Longest sequence the model takes: the rows of the position table, less the padding_idx + 1
    /// rows RoBERTa's positions skip (XLM-R: 514 - 2 = 512); with rotary positions,
    /// max_position_embeddings. Each family says (`ModelFamily.positionLimit`).
    public var positionLimit: Int { ModelFamilies.family(of: self).positionLimit(self) }

    /// Largest value accepted for any size: far above any BERT (vocabularies of 250k, hidden 4096),
    /// low enough that no product of two sizes overflows and no table is sized before the
    /// weights file is checked to hold it.
    public static let maximumSize = 1 << 24

    /// Rejects values that would make the engine misbehave, before any weight is touched.
    public func validate(path: String) throws {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        let fix = "fix config.json or convert the checkpoint again with `bert convert`"
        let sizes = [("vocab_size", vocabSize), ("hidden_size", hiddenSize), ("num_hidden_layers", numHiddenLayers),
                     ("num_attention_heads", numAttentionHeads), ("intermediate_size", intermediateSize),
                     ("max_position_embeddings", maxPositionEmbeddings), ("type_vocab_size", typeVocabSize),
                     ("max_seq_length", maxSequenceLength)]
        // First: a bad padding_idx would show up below as a max_seq_length out of range.
        if let paddingIdx, paddingIdx < 0 || paddingIdx > Self.maximumSize || paddingIdx + 1 >= maxPositionEmbeddings {
            throw fail("padding_idx \(paddingIdx) leaves no position of the \(maxPositionEmbeddings) in the table (positions start at padding_idx + 1): \(fix)")
        }
        for (name, value) in sizes where value <= 0 {
            throw fail("\(name) is \(value); it must be a positive integer: \(fix)")
        }
        for (name, value) in sizes where value > Self.maximumSize {
            throw fail("\(name) is \(value), above SwiftBERT's limit of \(Self.maximumSize); the config is damaged: \(fix)")
        }
        guard hiddenSize % numAttentionHeads == 0 else {
            throw fail("hidden_size \(hiddenSize) is not divisible by num_attention_heads \(numAttentionHeads): \(fix)")
        }
        // BERT's exact GELU, or what the family's modules also run (MobileBERT's ReLU, SiLU gates…).
        let family = ModelFamilies.family(of: self)
        guard hiddenAct == "gelu" || family.otherActivations.contains(hiddenAct) else {
            throw fail("hidden_act '\(printable(hiddenAct))' is not supported; SwiftBERT implements BERT's exact erf GELU ('gelu'): use a checkpoint trained with it")
        }
        try family.validate(self) { fail("\($0): \(fix)") }
        if let buckets = relativeAttentionNumBuckets, buckets < 2 || buckets > 1024 {
            throw fail("relative_attention_num_buckets is \(buckets); MPNet uses 32 (2 to 1024 are accepted): \(fix)")
        }
        if let width = colbertDimension, width <= 0 || width > Self.maximumSize {
            throw fail("colbert_dim is \(width); it must be a positive integer: \(fix)")
        }
        guard layerNormEps > 0, layerNormEps.isFinite else { throw fail("layer_norm_eps is \(layerNormEps); it must be a positive number: \(fix)") }
        guard maxSequenceLength <= positionLimit else {
            throw fail("max_seq_length \(maxSequenceLength) exceeds the \(positionLimit) positions of the table (max_position_embeddings \(maxPositionEmbeddings)\(paddingIdx.map { ", from padding_idx + 1 = \($0 + 1)" } ?? "")): \(fix)")
        }
        var width = hiddenSize
        for (i, dense) in (sentence.denseLayers ?? []).enumerated() {
            guard dense.inFeatures == width, dense.outFeatures > 0, dense.outFeatures <= Self.maximumSize else {
                throw fail("dense layer \(i) maps \(dense.inFeatures) to \(dense.outFeatures) features, but its input has \(width): \(fix)")
            }
            width = dense.outFeatures
        }
        if let name = sentence.defaultPromptName, sentence.prompts?[name] == nil {
            throw fail("default_prompt_name '\(printable(name))' is not one of the prompts: \(fix)")
        }
    }

    /// Length of the sentence vectors: the last Dense layer's width, else hidden_size.
    public var embeddingDimension: Int { sentence.denseLayers?.last?.outFeatures ?? hiddenSize }

    public static func load(from url: URL) throws -> BertConfig {
        let data: Data
        do {
            data = try readBoundedFile(url, limit: 4 << 20, what: "config.json")
        } catch CocoaError.fileReadNoSuchFile {
            throw SwiftBERTError.fileNotFound(path: url.path, hint: "A converted model folder holds config.json; convert one with `bert convert`.")
        }
        return try decode(data, path: url.path)
    }

    /// Decodes and validates a converted model's config.json (the loader's path, and the fuzzer's).
    static func decode(_ data: Data, path: String) throws -> BertConfig {
        let config: BertConfig
        do { config = try JSONDecoder().decode(BertConfig.self, from: data) }
        catch {
            throw SwiftBERTError.invalidConfig(path: path, reason: "\(diagnose(data) ?? describe(error)); fix config.json or convert the model again with `bert convert`")
        }
        try config.validate(path: path)
        return config
    }

    /// Which field is wrong when JSONDecoder only says "not valid JSON" (it does for 2.5 or 1e30
    /// where an integer belongs): nil if the document itself is not JSON.
    static func diagnose(_ data: Data) -> String? {
        guard case let .object(json)? = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        let integers: [CodingKeys] = [.vocabSize, .hiddenSize, .numHiddenLayers, .numAttentionHeads, .intermediateSize,
                                      .maxPositionEmbeddings, .typeVocabSize, .maxSequenceLength]
        for key in integers {
            if case let .number(value)? = json[key.rawValue], value != value.rounded() || abs(value) > 9e15 {
                return "\(key.rawValue) is \(value), not an integer"
            }
        }
        if case let .number(value)? = json[CodingKeys.layerNormEps.rawValue], Float(value).isInfinite {
            return "layer_norm_eps is \(value), out of range"
        }
        return nil
    }

    public func write(to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do { try encoder.encode(self).write(to: url, options: .atomic) }
        catch { throw SwiftBERTError.outputFailed(path: url.path, reason: error.localizedDescription) }
    }
}
