import Foundation
import SwiftBERTKernels

/// The Gemma 3 encoder of EmbeddingGemma (transformers' Gemma3TextModel with bidirectional
/// attention), loaded from a converted folder whose config carries `gemma`. Apart from BERT:
/// - word embeddings scaled by √hidden_size, no position table, no token types;
/// - every block between two RMSNorms (before it, and on its output before the residual sum),
///   each scaling by 1 + weight, and a final RMSNorm;
/// - grouped-query attention: Q and K normalised per head (RMSNorm) and rotated (RoPE, its base
///   by layer type), the query heads sharing the key/value heads in groups; sliding layers see
///   the keys within sliding_window / 2 positions on either side;
/// - a GeGLU feed-forward network with the tanh GELU.
/// Its blocks are the Llama-style ones Qwen3 shares: `RMSNorm`, `GroupedQueryAttention`,
/// `GatedFeedForward`.
/// Immutable after loading: one instance can serve many threads at once.
public final class GemmaEncoderModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    let wordEmbeddings: any LinearWeights
    /// √hidden_size rounded to float32, as transformers' Gemma3TextScaledWordEmbedding in a
    /// float32 checkpoint.
    let embeddingScale: Float
    let layers: [GemmaLayer]
    let finalNorm: RMSNorm
    let gemma: GemmaEncoderConfig

    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let (opened, gemma) = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights,
                                                family: \.gemma, named: "Gemma 3")
        let config = opened.config.encoder
        self.gemma = gemma
        let root = WeightScope(opened.weights, precision: precision), h = config.hiddenSize
        wordEmbeddings = try root[TensorNames.wordEmbeddings].matrix(n: config.vocabSize, k: h)
        embeddingScale = Float(Double(h).squareRoot())
        // One cos/sin table per RoPE base (the global and the sliding layers differ).
        var tables: [Double: RotaryEmbedding] = [:]
        for l in 0..<config.numHiddenLayers where tables[gemma.theta(layer: l)] == nil {
            tables[gemma.theta(layer: l)] = RotaryEmbedding(theta: gemma.theta(layer: l), headDim: gemma.headDim, positions: config.positionLimit)
        }
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) {
            try GemmaLayer(root[TensorNames.layer($0)], config, gemma, index: $0, rotary: tables[gemma.theta(layer: $0)]!)
        }
        finalNorm = try RMSNorm(root[TensorNames.finalNorm], size: h, eps: config.layerNormEps, offset: 1)
        KernelReport.warnOnceIfSlower()
        super.init(opened, loadStarted: start)
    }

    /// Token types are ignored: Gemma has none.
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        try encodeGroupedQueryLayers(batch, headDim: gemma.headDim, keyValueHeads: gemma.keyValueHeads, profile: profile) {
            forward(ids: $0, hidden: $1, $2)
        }
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let h = config.encoder.hiddenSize, m = context.sequences.tokenCount
        // 1. Embeddings: the word's row times √H; positions are rotations of Q and K.
        context.measure(.embeddings) {
            let scale = embeddingScale
            for t in 0..<m {
                let row = x + t * h
                wordEmbeddings.row(Int(ids[t]), into: row)
                for c in 0..<h { row[c] *= scale }
            }
        }
        let normed = context.attended, projected = context.projected
        for layer in layers {
            // 2. x += norm(Attention(norm(x))); 3. x += norm(FFN(norm(x))).
            context.measure(.layerNorm) { layer.inputNorm(x, into: normed, m: m, threads: context.threads) }
            layer.attention(normed, into: projected, context)
            context.measure(.layerNorm) {
                layer.postAttentionNorm(projected, m: m, threads: context.threads)
                addResidual(x, projected, rows: m, cols: h, threads: context.threads)
            }
            context.measure(.layerNorm) { layer.preFeedForwardNorm(x, into: normed, m: m, threads: context.threads) }
            layer.feedForward(normed, into: projected, context)
            context.measure(.layerNorm) {
                layer.postFeedForwardNorm(projected, m: m, threads: context.threads)
                addResidual(x, projected, rows: m, cols: h, threads: context.threads)
            }
        }
        context.measure(.layerNorm) { finalNorm(x, m: m, threads: context.threads) }
    }

    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        throw missingMaskedLMHead
    }
}

/// One layer: attention and the feed-forward network, each between two RMSNorms.
struct GemmaLayer {
    let inputNorm: RMSNorm
    let attention: GroupedQueryAttention
    let postAttentionNorm: RMSNorm
    let preFeedForwardNorm: RMSNorm
    let feedForward: GatedFeedForward
    let postFeedForwardNorm: RMSNorm

    init(_ scope: WeightScope, _ config: EncoderConfig, _ gemma: GemmaEncoderConfig, index: Int, rotary: RotaryEmbedding) throws {
        let (h, eps, names) = (config.hiddenSize, config.layerNormEps, TensorNames.self)
        inputNorm = try RMSNorm(scope[names.inputNorm], size: h, eps: eps, offset: 1)
        attention = try GroupedQueryAttention(scope[names.attention], config, headDim: gemma.headDim, keyValueHeads: gemma.keyValueHeads,
                                              queryScalar: gemma.queryScalar, normOffset: 1, rotary: rotary,
                                              window: gemma.window(layer: index))
        postAttentionNorm = try RMSNorm(scope[names.postAttentionNorm], size: h, eps: eps, offset: 1)
        preFeedForwardNorm = try RMSNorm(scope[names.preFeedForwardNorm], size: h, eps: eps, offset: 1)
        feedForward = try GatedFeedForward(scope[names.mlp], config)
        postFeedForwardNorm = try RMSNorm(scope[names.postFeedForwardNorm], size: h, eps: eps, offset: 1)
    }
}
