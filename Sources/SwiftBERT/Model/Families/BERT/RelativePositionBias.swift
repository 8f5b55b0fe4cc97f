import Foundation
import SwiftBERTKernels

/// MPNet's relative position bias (MPNetEncoder's `relative_attention_bias` and
/// `compute_position_bias`): one learned scalar per head and distance bucket, computed once per
/// forward pass and added to every layer's attention scores. Nearby distances get a bucket
/// each; farther ones share logarithmically wider buckets up to `maxDistance`, and the sign of
/// the distance picks one half of the buckets.
struct RelativePositionBias {
    let bias: RelativeAttentionBias

    init(_ scope: WeightScope, _ config: EncoderConfig, buckets: Int) throws {
        let heads = config.numAttentionHeads
        let weights = try scope.file.floats(scope.name + ".weight", shape: [buckets, heads])
        bias = RelativeAttentionBias(heads: heads, span: config.positionLimit, scale: 1 / Float(config.headDim).squareRoot()) {
            weights[Self.bucket(distance: $1, buckets: buckets) * heads + $0]
        }
    }

    /// transformers' `MPNetEncoder.relative_position_bucket` for distance = key − query, in its
    /// float32 arithmetic (the bucket edges fall where torch's float32 log puts them).
    static func bucket(distance: Int, buckets: Int, maxDistance: Int = 128) -> Int {
        let half = buckets / 2, maxExact = half / 2
        let n = -distance  // query − key
        let base = n < 0 ? half : 0
        let magnitude = abs(n)
        if magnitude < maxExact { return base + magnitude }
        let ratio = Float(magnitude) / Float(maxExact)
        let scaled = logf(ratio) / Float(log(Double(maxDistance) / Double(maxExact))) * Float(half - maxExact)
        return base + min(maxExact + Int(scaled), half - 1)
    }
}
