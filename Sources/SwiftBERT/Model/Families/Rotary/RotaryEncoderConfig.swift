import Foundation
import SwiftBERTKernels

/// What the rotary-position encoders (NomicBERT, GTE, ModernBERT) have that BERT has not:
/// rotary positions instead of a position table, a gated feed-forward network, and (ModernBERT)
/// pre-LN layers and sliding-window attention. `EncoderConfig.rotary`; nil for the other families.
public struct RotaryEncoderConfig: FamilyConfig {
    public static let key = "rotary"
    /// Where each layer's two LayerNorms sit.
    public enum NormPlacement: String, Codable, Sendable {
        /// After each residual sum, as BERT (NomicBERT, GTE).
        case post
        /// Before each block, the residual left unnormalised (ModernBERT; its layer 0 has no
        /// attention norm, and a final norm follows the last layer).
        case pre
    }
    /// What a layer's attention sees.
    public enum LayerType: String, Codable, Sendable {
        case full = "full_attention", sliding = "sliding_attention"
    }

    /// RoPE base of the full-attention layers.
    public var ropeTheta: Double
    /// RoPE base of the sliding-window layers (nil: none slide).
    public var localRopeTheta: Double?
    /// ModernBERT's local_attention: the whole window of a sliding layer, so a token sees the
    /// keys within local_attention / 2 positions of it on either side.
    public var localAttention: Int?
    /// Each layer's attention, in order (nil: all full).
    public var layerTypes: [LayerType]?
    public var normPlacement: NormPlacement

    public init(ropeTheta: Double, normPlacement: NormPlacement) {
        (self.ropeTheta, self.normPlacement) = (ropeTheta, normPlacement)
    }

    enum CodingKeys: String, CodingKey {
        case ropeTheta = "rope_theta", localRopeTheta = "local_rope_theta", localAttention = "local_attention"
        case layerTypes = "layer_types", normPlacement = "norm_placement"
    }

    /// The keys layer `index` sees: within half its local_attention of the query on sliding layers.
    func window(layer index: Int) -> AttentionWindow {
        guard layerTypes?[index] == .sliding, let localAttention else { return .all }
        return .around(localAttention / 2)
    }

    /// The RoPE base of layer `index`.
    func theta(layer index: Int) -> Double {
        layerTypes?[index] == .sliding ? localRopeTheta ?? ropeTheta : ropeTheta
    }

    static let maximumPositions = 1 << 17

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {
        guard ropeTheta > 0, ropeTheta.isFinite, (localRopeTheta ?? 1) > 0, (localRopeTheta ?? 1).isFinite else {
            throw fail("rope_theta must be a positive number")
        }
        // The cos/sin tables are built at load for every position: a damaged config must not
        // ask for gigabytes of them (16 times the longest rotary encoder's 8,192 is allowed).
        guard config.maxPositionEmbeddings <= Self.maximumPositions else {
            throw fail("max_position_embeddings \(config.maxPositionEmbeddings) is above \(Self.maximumPositions), the most SwiftBERT's rotary encoders take")
        }
        guard config.headDim % 2 == 0 else { throw fail("rotary positions need an even head size, not \(config.headDim)") }
        if let layerTypes, layerTypes.count != config.numHiddenLayers {
            throw fail("layer_types names \(layerTypes.count) layers; the model has \(config.numHiddenLayers)")
        }
        if layerTypes?.contains(.sliding) == true, (localAttention ?? 0) < 2 {
            throw fail("sliding-window layers need local_attention of at least 2")
        }
    }
}
