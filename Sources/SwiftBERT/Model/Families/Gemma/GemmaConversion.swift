import Foundation

// EmbeddingGemma's checkpoint (transformers' Gemma3TextModel, as sentence-transformers saves
// it) becomes one float32 file as every Llama-style checkpoint does (LlamaStyleConversion.swift),
// the sentence-transformers Dense modules beside it.

extension Converter {
    /// Whether a config.json is a Gemma 3 text model's.
    static func isGemma(modelType: String, architectures: [String]) -> Bool {
        modelType == "gemma3_text" || (modelType.isEmpty && architectures.contains { $0.hasPrefix("Gemma3Text") })
    }

    /// A Gemma 3 text config.json as the converted config: the shared fields, and `gemma`.
    /// Only the bidirectional encoder is taken: a causal Gemma is a decoder, not an embedder.
    static func readGemmaConfig(_ json: [String: JSONValue], architectures: [String], path: String, folder: String) throws -> ModelConfig {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        let fields = ConfigFields(json: json, fail: fail)
        if let classifier = architectures.first(where: { !$0.hasPrefix("Gemma3TextModel") && !$0.hasPrefix("Gemma3Model") }) {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "\(printable(classifier)): SwiftBERT runs the Gemma 3 encoder (Gemma3TextModel, as EmbeddingGemma) and its sentence embeddings, no other Gemma head")
        }
        guard json["use_bidirectional_attention"]?.bool == true else {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "this Gemma 3 attends causally (use_bidirectional_attention is not true): it is a decoder; SwiftBERT runs the bidirectional encoder of EmbeddingGemma")
        }
        if let scaling = json["rope_scaling"], !scaling.isNull {
            throw fail("rope_scaling \(printable("\(scaling)")) is not supported (EmbeddingGemma's default RoPE is)")
        }
        for key in ["attn_logit_softcapping", "final_logit_softcapping"] where !(json[key]?.isNull ?? true) {
            throw fail("\(key) is set; EmbeddingGemma has none and SwiftBERT does not implement it")
        }
        if json["attention_bias"]?.bool == true { throw fail("attention_bias is true; EmbeddingGemma's projections have no bias") }
        let activation = json["hidden_activation"]?.string ?? json["hidden_act"]?.string ?? "gelu_pytorch_tanh"
        guard activation == "gelu_pytorch_tanh" else {
            throw fail("hidden_activation '\(printable(activation))' is not supported (gelu_pytorch_tanh is, as every Gemma 3)")
        }
        let layers = try fields.int("num_hidden_layers"), heads = try fields.int("num_attention_heads")
        let layerTypes: [GemmaEncoderConfig.LayerType]
        if let types = json["layer_types"]?.array {
            layerTypes = try types.map {
                guard let type = $0.string.flatMap(GemmaEncoderConfig.LayerType.init(rawValue:)) else {
                    throw fail("layer_types holds \(printable("\($0)")); full_attention and sliding_attention are known")
                }
                return type
            }
        } else {
            // Older configs: every sliding_window_pattern-th layer is global.
            let pattern = max(1, try fields.int("sliding_window_pattern", fallback: try fields.int("_sliding_window_pattern", fallback: 6)))
            layerTypes = (0..<layers).map { ($0 + 1) % pattern == 0 ? .full : .sliding }
        }
        let maxPositions = try fields.int("max_position_embeddings")
        var config = ModelConfig(encoder: EncoderConfig(
            vocabSize: try fields.int("vocab_size"), hiddenSize: try fields.int("hidden_size"), numHiddenLayers: layers,
            numAttentionHeads: heads, intermediateSize: try fields.int("intermediate_size"), maxPositionEmbeddings: maxPositions,
            typeVocabSize: 1, layerNormEps: Float(try fields.number("rms_norm_eps", fallback: 1e-6)), hiddenAct: activation,
            maxSequenceLength: maxPositions))
        config.encoder.architecture = .gemma3
        let headDim = try fields.int("head_dim", fallback: 256)
        config.encoder.gemma = GemmaEncoderConfig(
            headDim: headDim, keyValueHeads: try fields.int("num_key_value_heads", fallback: heads),
            queryScalar: try fields.number("query_pre_attn_scalar", fallback: Double(headDim)),
            ropeTheta: try ropeTheta(json["rope_parameters"]?["full_attention"], fail) ?? fields.number("rope_theta", fallback: 1_000_000),
            localRopeTheta: try ropeTheta(json["rope_parameters"]?["sliding_attention"], fail) ?? fields.number("rope_local_base_freq", fallback: 10_000),
            slidingWindow: try fields.int("sliding_window", fallback: 512), layerTypes: layerTypes)
        return config
    }

    /// Where a Gemma 3 checkpoint keeps its layers' four RMSNorms.
    static let gemmaLayout = LlamaStyleLayout(postAttentionNorm: "post_attention_layernorm",
                                              preFeedForwardNorm: "pre_feedforward_layernorm",
                                              postFeedForwardNorm: "post_feedforward_layernorm")

    /// Writes a Gemma encoder's converted folder (`convertLlamaStyle`).
    static func convertGemma(source: URL, config: ModelConfig, to destination: URL) throws -> Report {
        guard let gemma = config.encoder.gemma else { throw SwiftBERTError.invalidInput(reason: "not a Gemma config") }
        return try convertLlamaStyle(source: source, config: config, headDim: gemma.headDim, keyValueHeads: gemma.keyValueHeads,
                                     layout: gemmaLayout, to: destination)
    }
}
