import Foundation

/// What a DeBERTa-v2/v3 encoder (transformers' DebertaV2Model) has beyond the fields every family
/// shares: its disentangled attention. Each layer adds to Q·Kᵀ the content-to-position (c2p)
/// and position-to-content (p2c) scores, from one table of relative position embeddings shared
/// by every layer and projected by that layer's own key and query projections.
/// `EncoderConfig.deberta`; nil for every other family.
public struct DebertaConfig: FamilyConfig {
    public static let key = "deberta"
    /// position_buckets: the relative distances fall into this many buckets on each side, exact up
    /// to half of it, log-spaced beyond (256 in DeBERTa-v3); 0: no buckets, every distance up to
    /// `maxRelativePositions` is its own.
    public var positionBuckets: Int
    /// max_relative_positions (max_position_embeddings when the checkpoint says -1): the distance
    /// the last bucket stands for.
    public var maxRelativePositions: Int
    /// Which scores pos_att_type adds: content-to-position ("c2p") and position-to-content ("p2c").
    public var contentToPosition: Bool
    public var positionToContent: Bool
    /// position_biased_input: whether absolute position embeddings are added to the input
    /// (false in DeBERTa-v3, which has no position table and so no length limit of its own).
    public var positionBiasedInput: Bool
    /// norm_rel_ebd contains "layer_norm": the relative embeddings pass through encoder.LayerNorm.
    public var normalizesRelativeEmbeddings: Bool

    public init(positionBuckets: Int, maxRelativePositions: Int, contentToPosition: Bool, positionToContent: Bool,
                positionBiasedInput: Bool, normalizesRelativeEmbeddings: Bool) {
        (self.positionBuckets, self.maxRelativePositions) = (positionBuckets, maxRelativePositions)
        (self.contentToPosition, self.positionToContent) = (contentToPosition, positionToContent)
        (self.positionBiasedInput, self.normalizesRelativeEmbeddings) = (positionBiasedInput, normalizesRelativeEmbeddings)
    }

    enum CodingKeys: String, CodingKey {
        case positionBuckets = "position_buckets", maxRelativePositions = "max_relative_positions"
        case contentToPosition = "c2p", positionToContent = "p2c", positionBiasedInput = "position_biased_input"
        case normalizesRelativeEmbeddings = "norm_rel_ebd"
    }

    /// The relative embeddings' rows on each side of distance zero (transformers' pos_ebd_size):
    /// the table holds 2 × span rows.
    public var span: Int { positionBuckets > 0 ? positionBuckets : maxRelativePositions }

    /// Relative positions alone have no table to bound a sequence; this bounds the [n × n] score
    /// bias each head's attention writes (64 MiB at 4,096 tokens).
    static let maximumPositions = 1 << 12

    /// 1 + the number of position scores: Q·Kᵀ and each added score are divided by
    /// √(head_dim × this) (transformers' scale_factor).
    var scaleFactor: Int { 1 + (contentToPosition ? 1 : 0) + (positionToContent ? 1 : 0) }

    /// transformers' build_relative_position for query − key = `distance`, bucketed as
    /// make_log_bucket_position does, in its float32 arithmetic (the bucket edges fall where
    /// torch's float32 log puts them), then shifted into a row of the table: clamp(bucket + span).
    func tableRow(distance: Int) -> Int {
        var position = distance
        if positionBuckets > 0, maxRelativePositions > 0 {
            let mid = positionBuckets / 2, magnitude = abs(distance)
            if magnitude > mid {
                // Within ±mid the distance is its own bucket. Beyond, torch's float32: the log of
                // |distance| / mid over the log of a float32 tensor of (max − 1) / mid.
                let ratio = Float(magnitude) / Float(mid)
                let scaled = logf(ratio) / logf(Float(Double(maxRelativePositions - 1) / Double(mid))) * Float(mid - 1)
                position = (Int(scaled.rounded(.up)) + mid) * (distance < 0 ? -1 : 1)
            }
        }
        return min(max(position + span, 0), 2 * span - 1)
    }

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {
        guard span > 0, span <= 1 << 16 else {
            throw fail("position_buckets \(positionBuckets) and max_relative_positions \(maxRelativePositions) leave \(span) relative positions a side; 1 to 65536 are accepted")
        }
        if positionBuckets > 0, positionBuckets < 2 || maxRelativePositions <= positionBuckets / 2 + 1 {
            throw fail("position_buckets \(positionBuckets) needs max_relative_positions above \(positionBuckets / 2 + 1), not \(maxRelativePositions)")
        }
        guard config.maxPositionEmbeddings <= Self.maximumPositions || positionBiasedInput else {
            throw fail("max_position_embeddings \(config.maxPositionEmbeddings) is above \(Self.maximumPositions), the most SwiftBERT's DeBERTa takes")
        }
    }
}
