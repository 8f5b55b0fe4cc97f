import Foundation
import SwiftBERTKernels

/// The Qwen3 decoder as Qwen3-Embedding runs it for embeddings (transformers' Qwen3Model), loaded
/// from a converted folder whose config carries `qwen3`. Apart from BERT:
/// - no position table and no token types: positions are rotations of Q and K (RoPE);
/// - each block follows an RMSNorm (scaling by its weight), with a final RMSNorm;
/// - grouped-query attention, Q and K normalised per head, **causal**: each token sees itself and
///   the tokens before it, so a sequence's last token (its `<|endoftext|>`) has seen all of it,
///   and last-token pooling reads that row;
/// - a SwiGLU feed-forward network.
/// Sequences are packed, not padded, so each sequence's last token is its own last row: the
/// vectors are those of transformers with left padding, in any batch.
/// Immutable after loading: one instance can serve many threads at once.
public final class Qwen3EncoderModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    let wordEmbeddings: any LinearWeights
    let layers: [Qwen3Layer]
    let finalNorm: RMSNorm
    let qwen3: Qwen3Config

    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let (opened, qwen3) = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights,
                                                family: \.qwen3, named: "Qwen3")
        let config = opened.config.encoder
        self.qwen3 = qwen3
        let root = WeightScope(opened.weights, precision: precision), h = config.hiddenSize
        wordEmbeddings = try root[TensorNames.wordEmbeddings].matrix(n: config.vocabSize, k: h)
        let rotary = RotaryEmbedding(theta: qwen3.ropeTheta, headDim: qwen3.headDim, positions: config.positionLimit)
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) {
            try Qwen3Layer(root[TensorNames.layer($0)], config, qwen3, rotary: rotary)
        }
        finalNorm = try RMSNorm(root[TensorNames.finalNorm], size: h, eps: config.layerNormEps, offset: 0)
        KernelReport.warnOnceIfSlower()
        super.init(opened, loadStarted: start)
    }

    /// Token types are ignored: Qwen3 has none.
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: profile, reading: nil)
    }

    /// `encode` for a head that reads `reading[s]` of sequence s (last-token pooling reads one
    /// row): the last layer runs its queries, output projection and feed-forward network for
    /// those rows alone (as `BertModel`).
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?, reading: [HeadRows]?) throws -> EncoderOutput {
        try encodeGroupedQueryLayers(batch, headDim: qwen3.headDim, keyValueHeads: qwen3.keyValueHeads, profile: profile, reading: reading) {
            forward(ids: $0, hidden: $1, $2)
        }
    }

    /// The whole model, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let h = config.encoder.hiddenSize, m = context.sequences.tokenCount
        context.measure(.embeddings) {
            for t in 0..<m { wordEmbeddings.row(Int(ids[t]), into: x + t * h) }
        }
        let normed = context.attended, projected = context.projected, sequences = context.sequences
        for (index, layer) in layers.enumerated() {
            // The last layer for the rows a head reads: every token's keys and values, then
            // those rows alone, gathered to the front of x and put back at the end.
            let readingOnly = sequences.readsOnly(layer: index, of: layers.count)
            // x += Attention(norm(x)); x += FFN(norm(x)).
            context.measure(.layerNorm) { layer.inputNorm(x, into: normed, m: m, threads: context.threads) }
            layer.attention(normed, into: projected, context, readingOnly: readingOnly)
            let rows = readingOnly ? sequences.gatherRowsRead(width: h, [x]) : m
            if rows == 0 { return }  // no row read: nothing more to compute
            context.measure(.layerNorm) { addResidual(x, projected, rows: rows, cols: h, threads: context.threads) }
            context.measure(.layerNorm) { layer.preFeedForwardNorm(x, into: normed, m: rows, threads: context.threads) }
            layer.feedForward(normed, into: projected, context, rows: rows)
            context.measure(.layerNorm) { addResidual(x, projected, rows: rows, cols: h, threads: context.threads) }
            if readingOnly {
                context.measure(.layerNorm) { finalNorm(x, m: rows, threads: context.threads) }
                sequences.putBackRowsRead(width: h, x)
                return
            }
        }
        context.measure(.layerNorm) { finalNorm(x, m: m, threads: context.threads) }
    }

    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        throw missingMaskedLMHead
    }
}

/// One layer: causal attention and the feed-forward network, each after its RMSNorm.
struct Qwen3Layer {
    let inputNorm: RMSNorm
    let attention: GroupedQueryAttention
    let preFeedForwardNorm: RMSNorm
    let feedForward: GatedFeedForward

    init(_ scope: WeightScope, _ config: EncoderConfig, _ qwen3: Qwen3Config, rotary: RotaryEmbedding) throws {
        let (h, eps, names) = (config.hiddenSize, config.layerNormEps, TensorNames.self)
        inputNorm = try RMSNorm(scope[names.inputNorm], size: h, eps: eps, offset: 0)
        attention = try GroupedQueryAttention(scope[names.attention], config, headDim: qwen3.headDim, keyValueHeads: qwen3.keyValueHeads,
                                              queryScalar: Double(qwen3.headDim), normOffset: 0, rotary: rotary, window: .causal)
        preFeedForwardNorm = try RMSNorm(scope[names.preFeedForwardNorm], size: h, eps: eps, offset: 0)
        feedForward = try GatedFeedForward(scope[names.mlp], config)
    }
}
