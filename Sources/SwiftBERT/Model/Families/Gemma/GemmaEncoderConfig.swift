import Foundation
import SwiftBERTKernels

/// What a Gemma 3 encoder (EmbeddingGemma: transformers' Gemma3TextModel with
/// `use_bidirectional_attention`) has beyond the fields every family shares: grouped-query
/// attention with its own head size, a RoPE base per layer type, and the sliding window of the
/// local layers. `EncoderConfig.gemma`; nil for every other family. The shared fields hold the rest:
/// `layerNormEps` is rms_norm_eps, `hiddenAct` the checkpoint's "gelu_pytorch_tanh".
public struct GemmaEncoderConfig: FamilyConfig {
    public static let key = "gemma"
    /// What a layer's attention sees.
    public enum LayerType: String, Codable, Sendable {
        case full = "full_attention", sliding = "sliding_attention"
    }

    /// head_dim: 256 for every Gemma 3, not hidden_size / num_attention_heads.
    public var headDim: Int
    /// num_key_value_heads: the query heads share them in equal groups.
    public var keyValueHeads: Int
    /// query_pre_attn_scalar: scores are scaled by its inverse square root.
    public var queryScalar: Double
    /// RoPE base of the full-attention layers (rope_theta).
    public var ropeTheta: Double
    /// RoPE base of the sliding-window layers (rope_local_base_freq).
    public var localRopeTheta: Double
    /// config.json's sliding_window. With bidirectional attention transformers keeps the keys
    /// whose distance to the query is below sliding_window / 2 + 1 (Gemma3TextConfig and its
    /// bidirectional window mask): `window` below.
    public var slidingWindow: Int
    /// Each layer's attention, in order.
    public var layerTypes: [LayerType]

    public init(headDim: Int, keyValueHeads: Int, queryScalar: Double, ropeTheta: Double, localRopeTheta: Double,
                slidingWindow: Int, layerTypes: [LayerType]) {
        (self.headDim, self.keyValueHeads, self.queryScalar) = (headDim, keyValueHeads, queryScalar)
        (self.ropeTheta, self.localRopeTheta, self.slidingWindow, self.layerTypes) = (ropeTheta, localRopeTheta, slidingWindow, layerTypes)
    }

    enum CodingKeys: String, CodingKey {
        case headDim = "head_dim", keyValueHeads = "num_key_value_heads", queryScalar = "query_pre_attn_scalar"
        case ropeTheta = "rope_theta", localRopeTheta = "rope_local_base_freq", slidingWindow = "sliding_window"
        case layerTypes = "layer_types"
    }

    /// The keys layer `index` sees: within sliding_window / 2 of the query on sliding layers.
    func window(layer index: Int) -> AttentionWindow {
        layerTypes[index] == .sliding ? .around(slidingWindow / 2) : .all
    }

    /// The RoPE base of layer `index`.
    func theta(layer index: Int) -> Double {
        layerTypes[index] == .sliding ? localRopeTheta : ropeTheta
    }

    static let maximumPositions = 1 << 17

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {
        try GroupedQueryAttention.validate(headDim: headDim, keyValueHeads: keyValueHeads, config, fail: fail)
        for (name, value) in [("rope_theta", ropeTheta), ("rope_local_base_freq", localRopeTheta), ("query_pre_attn_scalar", queryScalar)]
        where !(value > 0 && value.isFinite) {
            throw fail("\(name) must be a positive number, not \(value)")
        }
        // The cos/sin tables are made at load for every position.
        guard config.maxPositionEmbeddings <= Self.maximumPositions else {
            throw fail("max_position_embeddings \(config.maxPositionEmbeddings) is above \(Self.maximumPositions), the most SwiftBERT's Gemma encoder takes")
        }
        guard layerTypes.count == config.numHiddenLayers else {
            throw fail("layer_types names \(layerTypes.count) layers; the model has \(config.numHiddenLayers)")
        }
        if layerTypes.contains(.sliding), slidingWindow < 2 { throw fail("sliding-window layers need sliding_window of at least 2") }
    }
}
