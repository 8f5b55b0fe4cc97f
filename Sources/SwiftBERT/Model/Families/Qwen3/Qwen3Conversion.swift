import Foundation

extension Converter {
    /// Where a Qwen3 checkpoint keeps its layers' two RMSNorms: before attention, and before the
    /// feed-forward network (which Qwen3 names post_attention_layernorm).
    static let qwen3Layout = LlamaStyleLayout(postAttentionNorm: nil, preFeedForwardNorm: "post_attention_layernorm", postFeedForwardNorm: nil)

    /// A Qwen3 config.json as the converted config: the shared fields, and `qwen3`. The
    /// checkpoint may be a Qwen3Model (as sentence-transformers saves Qwen3-Embedding) or a
    /// Qwen3ForCausalLM, whose lm_head is left out: only the hidden states are used.
    static func readQwen3Config(_ json: [String: JSONValue], architectures: [String], path: String, folder: String) throws -> ModelConfig {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        let fields = ConfigFields(json: json, fail: fail)
        if let head = architectures.first(where: { $0 != "Qwen3Model" && $0 != "Qwen3ForCausalLM" }) {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "\(printable(head)): SwiftBERT runs Qwen3Model and Qwen3ForCausalLM checkpoints for their last-token embeddings (Qwen3-Embedding), no other Qwen3 head")
        }
        if json["use_sliding_window"]?.bool == true {
            throw fail("use_sliding_window is true; Qwen3-Embedding attends to every earlier token and SwiftBERT implements only that")
        }
        if json["attention_bias"]?.bool == true { throw fail("attention_bias is true; Qwen3's projections have no bias") }
        if let types = json["layer_types"]?.array, types.contains(where: { $0.string != "full_attention" }) {
            throw fail("layer_types names a layer other than full_attention; SwiftBERT's Qwen3 runs full causal attention in every layer")
        }
        let activation = json["hidden_act"]?.string ?? "silu"
        guard activation == "silu" else { throw fail("hidden_act '\(printable(activation))' is not supported (silu is, as every Qwen3)") }
        let theta = try ropeTheta(json["rope_parameters"] ?? json["rope_scaling"], fail) ?? fields.number("rope_theta", fallback: 1_000_000)
        let heads = try fields.int("num_attention_heads"), maxPositions = try fields.int("max_position_embeddings")
        var config = ModelConfig(encoder: EncoderConfig(
            vocabSize: try fields.int("vocab_size"), hiddenSize: try fields.int("hidden_size"), numHiddenLayers: try fields.int("num_hidden_layers"),
            numAttentionHeads: heads, intermediateSize: try fields.int("intermediate_size"), maxPositionEmbeddings: maxPositions,
            typeVocabSize: 1, layerNormEps: Float(try fields.number("rms_norm_eps", fallback: 1e-6)), hiddenAct: activation,
            maxSequenceLength: maxPositions))
        config.encoder.architecture = .qwen3
        config.encoder.qwen3 = Qwen3Config(headDim: try fields.int("head_dim", fallback: config.encoder.hiddenSize / max(heads, 1)),
                                   keyValueHeads: try fields.int("num_key_value_heads", fallback: heads), ropeTheta: theta)
        try config.validate(path: path)  // before any tensor: a bad head count names itself, not a shape
        return config
    }
}
