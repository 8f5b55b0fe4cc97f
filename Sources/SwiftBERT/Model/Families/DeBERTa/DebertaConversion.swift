import Foundation

extension TensorNames {
    /// DeBERTa's relative position embeddings, shared by every layer: [2·span × H].
    static let relativeEmbeddings = "encoder.rel_embeddings"
    /// The LayerNorm they pass through (norm_rel_ebd "layer_norm").
    static let relativeEmbeddingsNorm = "encoder.LayerNorm"

    /// DeBERTa's converted tensors: BERT's (Q, K and V fused; no position table unless
    /// position_biased_input), and the relative embeddings with their LayerNorm.
    static func debertaModules(_ config: ModelConfig, _ deberta: DebertaConfig) -> [Module] {
        var modules = bertModules(config)
        if !deberta.positionBiasedInput { modules.removeAll { $0.name == positionEmbeddings } }
        let shared = [Module(name: relativeEmbeddings, kind: .table, rows: 2 * deberta.span, cols: config.encoder.hiddenSize)]
            + (deberta.normalizesRelativeEmbeddings ? [Module(name: relativeEmbeddingsNorm, kind: .layerNorm, rows: 1, cols: config.encoder.hiddenSize)] : [])
        let firstLayer = modules.firstIndex { $0.name.hasPrefix(layer(0) + ".") } ?? modules.endIndex
        modules.insert(contentsOf: shared, at: firstLayer)
        return modules
    }
}

extension Converter {
    /// The DeBERTa classes SwiftBERT converts, and the heads they carry.
    static let debertaClasses = ["DebertaV2Model", "DebertaV2ForMaskedLM", "DebertaV2ForSequenceClassification", "DebertaV2ForTokenClassification"]

    /// A DeBERTa-v2/v3 config.json as the converted config: BERT's fields, `deberta`, and the
    /// classification head. What SwiftBERT does not implement is refused here, by name: the
    /// convolution of deberta-v2-xlarge's first layer, separate position projections
    /// (share_att_key false), a factorised embedding (embedding_size ≠ hidden_size).
    static func readDebertaConfig(_ json: [String: JSONValue], architectures: [String], path: String, folder: String) throws -> ModelConfig {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        let fields = ConfigFields(json: json, fail: fail)
        if let head = architectures.first(where: { !debertaClasses.contains($0) }) {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "\(printable(head)): SwiftBERT runs \(debertaClasses.joined(separator: ", ")), no other DeBERTa head")
        }
        guard json["relative_attention"]?.bool == true else {
            throw fail("relative_attention is not true; SwiftBERT runs DeBERTa with its disentangled attention, as every released DeBERTa-v2 and v3 is")
        }
        guard json["share_att_key"]?.bool == true else {
            throw fail("share_att_key is not true: separate position projections (pos_key_proj, pos_query_proj) are not supported; DeBERTa-v3 and v2-xlarge share them")
        }
        if try fields.int("conv_kernel_size", fallback: 0) > 0 {
            throw fail("conv_kernel_size is above 0: the convolution after the first layer (deberta-v2-xlarge) is not supported; DeBERTa-v3 has none")
        }
        let h = try fields.int("hidden_size"), heads = try fields.int("num_attention_heads")
        for (key, size) in [("embedding_size", try fields.int("embedding_size", fallback: h)),
                            ("pooler_hidden_size", try fields.int("pooler_hidden_size", fallback: h)),
                            ("attention_head_size", try fields.int("attention_head_size", fallback: h / max(heads, 1)) * heads)] where size != h {
            throw fail("\(key) makes a width of \(size) beside hidden_size \(h); SwiftBERT's DeBERTa takes them equal, as DeBERTa-v3 has them")
        }
        let attentionTypes: [String]
        switch json["pos_att_type"] {
        case let .array(values)?: attentionTypes = values.compactMap(\.string).map { $0.lowercased() }
        case let .string(joined)?: attentionTypes = joined.lowercased().split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        default: attentionTypes = []
        }
        if let other = attentionTypes.first(where: { $0 != "c2p" && $0 != "p2c" }) {
            throw fail("pos_att_type names '\(printable(other))'; SwiftBERT's DeBERTa adds c2p and p2c scores only")
        }
        let normalizations = (json["norm_rel_ebd"]?.string ?? "none").lowercased().split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        let activation = json["hidden_act"]?.string ?? "gelu"
        guard activation == "gelu" else { throw fail("hidden_act '\(printable(activation))' is not supported (gelu is, as every DeBERTa)") }
        let maxPositions = try fields.int("max_position_embeddings", fallback: 512)
        let relativePositions = try fields.int("max_relative_positions", fallback: -1)
        let types = try fields.int("type_vocab_size", fallback: 0)
        guard types >= 0 else { throw fail("type_vocab_size is \(types); it must be 0 or more") }
        var config = ModelConfig(encoder: EncoderConfig(
            vocabSize: try fields.int("vocab_size"), hiddenSize: h, numHiddenLayers: try fields.int("num_hidden_layers"),
            numAttentionHeads: heads, intermediateSize: try fields.int("intermediate_size"), maxPositionEmbeddings: maxPositions,
            // No token types: one all-zero row, which adds nothing.
            typeVocabSize: max(types, 1), layerNormEps: Float(try fields.number("layer_norm_eps", fallback: 1e-7)), hiddenAct: activation,
            maxSequenceLength: maxPositions))
        config.encoder.architecture = .debertaV2
        config.encoder.deberta = DebertaConfig(
            positionBuckets: max(try fields.int("position_buckets", fallback: -1), 0),
            maxRelativePositions: relativePositions < 1 ? maxPositions : relativePositions,
            contentToPosition: attentionTypes.contains("c2p"), positionToContent: attentionTypes.contains("p2c"),
            positionBiasedInput: json["position_biased_input"]?.bool ?? true,
            normalizesRelativeEmbeddings: normalizations.contains("layer_norm"))
        config.heads.task = try taskHead(json, architectures: architectures, path: path)
        if config.heads.task?.kind == .sequenceClassification {
            // ContextPooler: dense, then pooler_hidden_act (GELU in every DeBERTa).
            let name = json["pooler_hidden_act"]?.string ?? "gelu"
            guard let activation = DenseLayerConfig.Activation(rawValue: name), activation != .identity else {
                throw fail("pooler_hidden_act '\(printable(name))' is not supported (gelu, tanh and relu are)")
            }
            config.heads.task?.poolerActivation = activation
        }
        try config.validate(path: path)
        return config
    }

    /// DeBERTa's tensor names as the converter's (`TensorNames`): without `deberta.`, BERT's
    /// query, key and value for query_proj, key_proj and value_proj; the masked-LM head of
    /// `legacy` false (lm_predictions.lm_head: dense, LayerNorm, bias, the decoder tied to the
    /// word embeddings) as the legacy one's (cls.predictions). The pooler and classifier keep
    /// their names.
    static func debertaName(_ name: String) -> String {
        var name = name
        if name.hasPrefix("deberta.") { name.removeFirst("deberta.".count) }
        for part in ["query", "key", "value"] {
            name = name.replacingOccurrences(of: ".attention.self.\(part)_proj.", with: ".attention.self.\(part).")
        }
        let heads: [(String, String)] = [
            ("lm_predictions.lm_head.dense.", "cls.predictions.transform.dense."),
            ("lm_predictions.lm_head.LayerNorm.", "cls.predictions.transform.LayerNorm."),
            ("lm_predictions.lm_head.bias", "cls.predictions.bias"),
        ]
        for (from, to) in heads where name.hasPrefix(from) { return to + name.dropFirst(from.count) }
        return name
    }
}
