import Foundation

/// The encoder's part of a converted model's config.json: the hyper-parameters every family
/// shares (Hugging Face's field names), and the family's own fields, each family's in its own
/// type under Model/Families/ (nil for the others).
public struct EncoderConfig: Codable, Sendable, Equatable {
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
    /// Which family the checkpoint came from (nil: BERT). DistilBERT runs the same encoder under
    /// other tensor names, without token types.
    public var architecture: Architecture? = nil
    /// RoBERTa's padding_idx (pad_token_id): positions start at padding_idx + 1, and a
    /// padding token takes position padding_idx (transformers' create_position_ids_from_input_ids).
    /// nil: BERT's positions 0, 1, 2, …
    public var paddingIdx: Int? = nil
    /// MPNet's relative_attention_num_buckets: the distance buckets of the position bias shared
    /// by every layer's attention (nil: no relative bias).
    public var relativeAttentionNumBuckets: Int? = nil
    /// Each family's own fields, under their keys in config.json (`FamilyConfig`); every family
    /// reads its own through an accessor in its folder (`EncoderConfig.rotary`, …). Empty: BERT.
    public var familyConfigs = FamilyConfigs()

    public init(vocabSize: Int, hiddenSize: Int, numHiddenLayers: Int, numAttentionHeads: Int, intermediateSize: Int,
                maxPositionEmbeddings: Int, typeVocabSize: Int, layerNormEps: Float, hiddenAct: String, maxSequenceLength: Int) {
        (self.vocabSize, self.hiddenSize, self.numHiddenLayers, self.numAttentionHeads) = (vocabSize, hiddenSize, numHiddenLayers, numAttentionHeads)
        (self.intermediateSize, self.maxPositionEmbeddings, self.typeVocabSize) = (intermediateSize, maxPositionEmbeddings, typeVocabSize)
        (self.layerNormEps, self.hiddenAct, self.maxSequenceLength) = (layerNormEps, hiddenAct, maxSequenceLength)
    }

    enum CodingKeys: String, CodingKey {
        case vocabSize = "vocab_size", hiddenSize = "hidden_size", numHiddenLayers = "num_hidden_layers"
        case numAttentionHeads = "num_attention_heads", intermediateSize = "intermediate_size"
        case maxPositionEmbeddings = "max_position_embeddings", typeVocabSize = "type_vocab_size"
        case layerNormEps = "layer_norm_eps", hiddenAct = "hidden_act", maxSequenceLength = "max_seq_length"
        case architecture, paddingIdx = "padding_idx"
        case relativeAttentionNumBuckets = "relative_attention_num_buckets"
    }

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
        architecture = try c.decodeIfPresent(Architecture.self, forKey: .architecture)
        paddingIdx = try c.decodeIfPresent(Int.self, forKey: .paddingIdx)
        relativeAttentionNumBuckets = try c.decodeIfPresent(Int.self, forKey: .relativeAttentionNumBuckets)
        familyConfigs = try FamilyConfigs(from: decoder)
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
        try c.encodeIfPresent(architecture, forKey: .architecture)
        try c.encodeIfPresent(paddingIdx, forKey: .paddingIdx)
        try c.encodeIfPresent(relativeAttentionNumBuckets, forKey: .relativeAttentionNumBuckets)
        try familyConfigs.encode(to: encoder)
    }

    public var headDim: Int { hiddenSize / numAttentionHeads }
    public var isDistilBERT: Bool { architecture == .distilBERT }
    /// RoBERTa or XLM-RoBERTa.
    public var isRoberta: Bool { architecture == .roberta || architecture == .xlmRoberta }
    /// Whether the tokenizer's token type ids reach the model. RoBERTa's tokenizers give the
    /// model none (model_input_names has no token_type_ids), so every token is type 0 there,
    /// pairs included. DistilBERT, MPNet and ModernBERT have none at all, and a rotary model
    /// with one type row takes only type 0. Each family says (`ModelFamily.usesTokenTypes`).
    public var usesTokenTypes: Bool { ModelFamilies.family(of: self).usesTokenTypes(self) }
    /// Whether the checkpoint has no token-type table: the converter stores one all-zero row,
    /// which adds nothing, exactly (DistilBERT, MPNet).
    var lacksTokenTypeTable: Bool { architecture == .distilBERT || architecture == .mpnet || architecture == .modernBERT }
    /// Longest sequence the model takes: the rows of the position table, less the padding_idx + 1
    /// rows RoBERTa's positions skip (XLM-R: 514 - 2 = 512); with rotary positions,
    /// max_position_embeddings. Each family says (`ModelFamily.positionLimit`).
    public var positionLimit: Int { ModelFamilies.family(of: self).positionLimit(self) }

    /// Rejects values that would make the encoder misbehave, before any weight is touched;
    /// `fail` adds what to do (`ModelConfig.validate`).
    func validate(fail: (String) -> SwiftBERTError) throws {
        let maximumSize = ModelConfig.maximumSize
        let sizes = [("vocab_size", vocabSize), ("hidden_size", hiddenSize), ("num_hidden_layers", numHiddenLayers),
                     ("num_attention_heads", numAttentionHeads), ("intermediate_size", intermediateSize),
                     ("max_position_embeddings", maxPositionEmbeddings), ("type_vocab_size", typeVocabSize),
                     ("max_seq_length", maxSequenceLength)]
        // First: a bad padding_idx would show up below as a max_seq_length out of range.
        if let paddingIdx, paddingIdx < 0 || paddingIdx > maximumSize || paddingIdx + 1 >= maxPositionEmbeddings {
            throw fail("padding_idx \(paddingIdx) leaves no position of the \(maxPositionEmbeddings) in the table (positions start at padding_idx + 1)")
        }
        for (name, value) in sizes where value <= 0 {
            throw fail("\(name) is \(value); it must be a positive integer")
        }
        for (name, value) in sizes where value > maximumSize {
            throw fail("\(name) is \(value), above SwiftBERT's limit of \(maximumSize); the config is damaged")
        }
        guard hiddenSize % numAttentionHeads == 0 else {
            throw fail("hidden_size \(hiddenSize) is not divisible by num_attention_heads \(numAttentionHeads)")
        }
        // BERT's exact GELU, or what the family's modules also run (MobileBERT's ReLU, SiLU gates…).
        let family = ModelFamilies.family(of: self)
        guard hiddenAct == "gelu" || family.otherActivations.contains(hiddenAct) else {
            throw fail("hidden_act '\(printable(hiddenAct))' is not supported; SwiftBERT implements BERT's exact erf GELU ('gelu'): use a checkpoint trained with it")
        }
        try family.validate(self, fail: fail)
        if let buckets = relativeAttentionNumBuckets, buckets < 2 || buckets > 1024 {
            throw fail("relative_attention_num_buckets is \(buckets); MPNet uses 32 (2 to 1024 are accepted)")
        }
        guard layerNormEps > 0, layerNormEps.isFinite else { throw fail("layer_norm_eps is \(layerNormEps); it must be a positive number") }
        guard maxSequenceLength <= positionLimit else {
            throw fail("max_seq_length \(maxSequenceLength) exceeds the \(positionLimit) positions of the table (max_position_embeddings \(maxPositionEmbeddings)\(paddingIdx.map { ", from padding_idx + 1 = \($0 + 1)" } ?? ""))")
        }
    }
}

/// The heads' part of a converted model's config.json: which heads the checkpoint carries
/// besides the encoder, and sentence-transformers' modules.
public struct HeadsConfig: Codable, Sendable, Equatable {
    /// True when the checkpoint carries the masked-LM head (cls.predictions.*).
    public var hasMaskedLMHead = false
    /// True when the masked-LM decoder is a separate matrix rather than the word embeddings.
    public var hasUntiedDecoder = false
    /// True when BERT's pooler (dense + tanh on [CLS]) is stored as pooler.dense.*.
    public var hasPooler: Bool? = nil
    /// How token vectors become a sentence vector: sentence-transformers' modules.
    public var sentence = SentenceTransformersConfig()
    /// The task head the checkpoint carries besides the encoder (nil: none, or only masked-LM).
    public var task: TaskHeadConfig? = nil
    /// BGE-M3's sparse head (`sparse_linear.pt` beside the checkpoint): token weights
    /// relu(sparse_linear(h)), pooled into lexical weights (`LexicalWeightsHead`). nil: none.
    public var hasLexicalWeights: Bool? = nil
    /// Width of BGE-M3's ColBERT head (`colbert_linear.pt`): one vector per token after [CLS]
    /// (`MultiVectorHead`). nil: no multi-vector head.
    public var colbertDimension: Int? = nil

    public init() {}

    enum CodingKeys: String, CodingKey {
        case hasMaskedLMHead = "has_masked_lm_head", hasUntiedDecoder = "has_untied_decoder", hasPooler = "has_pooler"
        case head, hasLexicalWeights = "has_sparse_linear", colbertDimension = "colbert_dim"
    }

    // sentence-transformers' fields and the task head's sit beside these in the flat document.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        hasMaskedLMHead = try c.decode(Bool.self, forKey: .hasMaskedLMHead)
        hasUntiedDecoder = try c.decode(Bool.self, forKey: .hasUntiedDecoder)
        hasPooler = try c.decodeIfPresent(Bool.self, forKey: .hasPooler)
        hasLexicalWeights = try c.decodeIfPresent(Bool.self, forKey: .hasLexicalWeights)
        colbertDimension = try c.decodeIfPresent(Int.self, forKey: .colbertDimension)
        sentence = try SentenceTransformersConfig(from: decoder)
        task = c.contains(.head) ? try TaskHeadConfig(from: decoder) : nil
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hasMaskedLMHead, forKey: .hasMaskedLMHead)
        try c.encode(hasUntiedDecoder, forKey: .hasUntiedDecoder)
        try c.encodeIfPresent(hasPooler, forKey: .hasPooler)
        try c.encodeIfPresent(hasLexicalWeights, forKey: .hasLexicalWeights)
        try c.encodeIfPresent(colbertDimension, forKey: .colbertDimension)
        try sentence.encode(to: encoder)
        try task?.encode(to: encoder)
    }
}
