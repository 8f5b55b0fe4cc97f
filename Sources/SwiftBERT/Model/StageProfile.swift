import Dispatch

/// Wall time per stage of the forward pass, filled in when passed to `BertModel.encode`.
/// Stages are timed around whole parallel regions, so the figures add up to the pass. Not
/// `Sendable`: give each concurrent `encode` its own.
public final class StageProfile {
    /// A stage of the forward pass.
    public enum Stage: String, CaseIterable, Sendable {
        case embeddings, qkv, attention, attentionOutput = "attention output", feedForwardIn = "feed-forward in + GELU"
        case feedForwardOut = "feed-forward out", layerNorm = "residual + LayerNorm"
    }
    public private(set) var seconds: [Stage: Double] = [:]
    public init() {}

    func measure<R>(_ stage: Stage, _ body: () throws -> R) rethrows -> R {
        let start = DispatchTime.now().uptimeNanoseconds
        defer { seconds[stage, default: 0] += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
        return try body()
    }
}
