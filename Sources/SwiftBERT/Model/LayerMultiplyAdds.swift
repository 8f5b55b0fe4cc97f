import Foundation

/// The multiply-adds one token costs in one encoder layer's Linear layers, split as
/// `StageProfile` splits a pass (Q, K and V; attention's output; the feed-forward network in and
/// out), and the width attention's products run over (heads × head size). `bert bench --profile`
/// and the roofline turn stage times into rates with it. Each family says its own
/// (`ModelFamily.layerMultiplyAdds`): BERT's h × h projections do not describe grouped heads or
/// a gated feed-forward network (Qwen3-0.6B's Linear layers do 1.5 times what BERT's count gives).
package struct LayerMultiplyAdds: Sendable, Equatable {
    package var qkv: Int
    package var attentionOutput: Int
    package var feedForwardIn: Int
    package var feedForwardOut: Int
    /// Heads × head size: QKᵀ and P·V each cost this many multiply-adds per query and key.
    package var attentionWidth: Int

    package var linear: Int { qkv + attentionOutput + feedForwardIn + feedForwardOut }

    /// BERT's layer: Q, K, V and the output each hidden × hidden; the feed-forward network
    /// hidden → intermediate → hidden.
    package static func bert(_ config: EncoderConfig) -> LayerMultiplyAdds {
        let (h, f) = (config.hiddenSize, config.intermediateSize)
        return LayerMultiplyAdds(qkv: 3 * h * h, attentionOutput: h * h, feedForwardIn: h * f, feedForwardOut: f * h, attentionWidth: h)
    }

    /// A gated feed-forward network (`GatedFeedForward`): the gate and the up projection in,
    /// then the down projection.
    package func gated(_ config: EncoderConfig) -> LayerMultiplyAdds {
        var layer = self
        layer.feedForwardIn = 2 * config.hiddenSize * config.intermediateSize
        return layer
    }

    /// Grouped-query attention (`GroupedQueryAttention`) with a gated feed-forward network:
    /// Gemma 3 and Qwen3.
    package static func groupedQuery(_ config: EncoderConfig, headDim d: Int, keyValueHeads: Int) -> LayerMultiplyAdds {
        let (h, queries) = (config.hiddenSize, config.numAttentionHeads * d)
        var layer = bert(config).gated(config)
        (layer.qkv, layer.attentionOutput, layer.attentionWidth) = (h * (queries + 2 * keyValueHeads * d), queries * h, queries)
        return layer
    }
}
