import Foundation

/// What a Qwen3 encoder (Qwen3-Embedding: transformers' Qwen3Model) has beyond the fields every
/// family shares: grouped-query attention with its own head size, and its RoPE base. Attention
/// is causal, as the model was trained. `EncoderConfig.qwen3`; nil for every other family. The
/// shared fields hold the rest: `layerNormEps` is rms_norm_eps, `hiddenAct` "silu".
public struct Qwen3Config: FamilyConfig {
    public static let key = "qwen3"
    /// head_dim: 128 in every Qwen3, not hidden_size / num_attention_heads.
    public var headDim: Int
    /// num_key_value_heads: the query heads share them in equal groups.
    public var keyValueHeads: Int
    /// The RoPE base (rope_theta).
    public var ropeTheta: Double

    public init(headDim: Int, keyValueHeads: Int, ropeTheta: Double) {
        (self.headDim, self.keyValueHeads, self.ropeTheta) = (headDim, keyValueHeads, ropeTheta)
    }

    enum CodingKeys: String, CodingKey {
        case headDim = "head_dim", keyValueHeads = "num_key_value_heads", ropeTheta = "rope_theta"
    }

    /// The cos/sin tables are made at load for every position: 40,960 for Qwen3-Embedding.
    static let maximumPositions = 1 << 17

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {
        try GroupedQueryAttention.validate(headDim: headDim, keyValueHeads: keyValueHeads, config, fail: fail)
        guard ropeTheta > 0, ropeTheta.isFinite else { throw fail("rope_theta must be a positive number, not \(ropeTheta)") }
        guard config.maxPositionEmbeddings <= Self.maximumPositions else {
            throw fail("max_position_embeddings \(config.maxPositionEmbeddings) is above \(Self.maximumPositions), the most SwiftBERT's Qwen3 encoder takes")
        }
    }
}
