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
/// Immutable after loading: one instance can serve many threads at once.
public final class GemmaEncoderModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    let wordEmbeddings: any LinearWeights
    /// √hidden_size rounded to float32, as transformers' Gemma3TextScaledWordEmbedding in a
    /// float32 checkpoint.
    let embeddingScale: Float
    let layers: [GemmaLayer]
    let finalNorm: GemmaRMSNorm
    let gemma: GemmaEncoderConfig

    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let opened = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights)
        let config = opened.config
        guard let gemma = config.gemma else {
            throw SwiftBERTError.invalidInput(reason: "\(folder.lastPathComponent) is not a Gemma encoder: load it with loadModel or loadEncoder")
        }
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
        finalNorm = try GemmaRMSNorm(root[TensorNames.finalNorm], size: h, eps: config.layerNormEps)
        KernelReport.warnOnceIfSlower()
        super.init(opened, loadStarted: start)
    }

    /// Token types are ignored: Gemma has none.
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.pack(batch, typeIds: nil)
        let h = config.hiddenSize, gemma = gemma
        let attentionColumns = GemmaSelfAttention.scratchColumns(config, gemma)
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: h, threads: threads) { part, ids, _, hidden in
            let context = ForwardContext(sequences: part, threads: threads, quantizesActivations: precision.quantizesActivations,
                                         attention: precision.attention, profile: profile, hidden: h,
                                         wideColumns: max(attentionColumns, 2 * config.intermediateSize), headDim: gemma.headDim,
                                         gatedColumns: config.intermediateSize)
            forward(ids: ids, hidden: hidden, context)
        }
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let h = config.hiddenSize, m = context.sequences.tokenCount
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
            normed.update(from: x, count: m * h)
            context.measure(.layerNorm) { layer.inputNorm(normed, m: m, threads: context.threads) }
            layer.attention(normed, into: projected, context)
            context.measure(.layerNorm) {
                layer.postAttentionNorm(projected, m: m, threads: context.threads)
                addResidual(x, projected, rows: m, cols: h, threads: context.threads)
            }
            normed.update(from: x, count: m * h)
            context.measure(.layerNorm) { layer.preFeedForwardNorm(normed, m: m, threads: context.threads) }
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

/// x += y over [rows × cols], rows split across threads.
private func addResidual(_ x: UnsafeMutablePointer<Float>, _ y: UnsafePointer<Float>, rows: Int, cols: Int, threads: Int) {
    parallelRows(rows, columns: cols, threads: threads) { range in
        let (a, b) = (x + range.lowerBound * cols, y + range.lowerBound * cols)
        for i in 0..<range.count * cols { a[i] += b[i] }
    }
}

/// Gemma's RMSNorm: x / √(mean(x²) + ε) · (1 + weight), in float32 as transformers computes it
/// (the mean of squares summed in double here: at most half an ulp from PyTorch's pairwise sum).
struct GemmaRMSNorm {
    /// 1 + weight, made once at load.
    let scale: [Float]
    let eps: Float

    init(_ scope: WeightScope, size: Int, eps: Float) throws {
        let weight = try scope.file.floats(scope.name + ".weight", shape: [size])
        (scale, self.eps) = (weight.map { 1 + $0 }, eps)
    }

    /// Normalises m rows in place, rows split across threads.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, m: Int, threads: Int) {
        let eps = eps, size = scale.count
        scale.withUnsafeBufferPointer { scale in
            let scale = scale.baseAddress!
            parallelRows(m, columns: size, threads: threads) { rows in
                for r in rows { Self.normalize(x + r * size, count: size, scale: scale, eps: eps) }
            }
        }
    }

    /// One vector of `count` in place.
    static func normalize(_ v: UnsafeMutablePointer<Float>, count: Int, scale: UnsafePointer<Float>, eps: Float) {
        var sum: Double = 0
        for i in 0..<count { sum += Double(v[i]) * Double(v[i]) }
        let inverse = 1 / (Float(sum / Double(count)) + eps).squareRoot()
        for i in 0..<count { v[i] = v[i] * inverse * scale[i] }
    }
}

/// One layer: attention and the feed-forward network, each between two RMSNorms.
struct GemmaLayer {
    let inputNorm: GemmaRMSNorm
    let attention: GemmaSelfAttention
    let postAttentionNorm: GemmaRMSNorm
    let preFeedForwardNorm: GemmaRMSNorm
    let feedForward: GemmaFeedForward
    let postFeedForwardNorm: GemmaRMSNorm

    init(_ scope: WeightScope, _ config: BertConfig, _ gemma: GemmaEncoderConfig, index: Int, rotary: RotaryEmbedding) throws {
        let (h, eps, names) = (config.hiddenSize, config.layerNormEps, TensorNames.self)
        inputNorm = try GemmaRMSNorm(scope[names.gemmaInputNorm], size: h, eps: eps)
        attention = try GemmaSelfAttention(scope[names.attention], config, gemma, rotary: rotary, window: gemma.window(layer: index))
        postAttentionNorm = try GemmaRMSNorm(scope[names.gemmaPostAttentionNorm], size: h, eps: eps)
        preFeedForwardNorm = try GemmaRMSNorm(scope[names.gemmaPreFeedForwardNorm], size: h, eps: eps)
        feedForward = try GemmaFeedForward(scope[names.mlp], config)
        postFeedForwardNorm = try GemmaRMSNorm(scope[names.gemmaPostFeedForwardNorm], size: h, eps: eps)
    }
}

/// Grouped-query self-attention: Q (heads × d), K and V (kv heads × d each) in one Linear; Q and
/// K normalised per head and rotated; softmax(QKᵀ/√query_pre_attn_scalar)·V, within the window
/// on sliding layers; then the output projection. The attention kernel takes one K and V per
/// query head, so each key/value head is copied beside the query heads of its group first
/// (2 · heads · d floats a token: small beside the products).
struct GemmaSelfAttention {
    let qkv: Linear
    let output: Linear
    /// Q's and K's RMSNorms, over each head's d channels.
    let queryNorm: GemmaRMSNorm
    let keyNorm: GemmaRMSNorm
    let rotary: RotaryEmbedding
    let heads: Int
    let keyValueHeads: Int
    let headDim: Int
    /// The kernel scales scores by 1/√d; this turns that into 1/√query_pre_attn_scalar (1 for
    /// EmbeddingGemma, where both are 256).
    let queryRescale: Float
    /// Keys within this distance of each query (nil: all).
    let window: Int?

    /// Columns of `ForwardContext.wide` the attention uses per token: the projections, the
    /// expanded Q | K | V, and the heads' output.
    static func scratchColumns(_ config: BertConfig, _ gemma: GemmaEncoderConfig) -> Int {
        let queries = config.numAttentionHeads * gemma.headDim
        return queries + 2 * gemma.keyValueHeads * gemma.headDim + 3 * queries + queries
    }

    init(_ scope: WeightScope, _ config: BertConfig, _ gemma: GemmaEncoderConfig, rotary: RotaryEmbedding, window: Int?) throws {
        let h = config.hiddenSize, names = TensorNames.self, d = gemma.headDim
        let queries = config.numAttentionHeads * d
        let attention = scope[names.selfAttention]
        qkv = try attention[names.qkv].linear(k: h, n: queries + 2 * gemma.keyValueHeads * d)
        output = try scope[names.output][names.dense].linear(k: queries, n: h)
        queryNorm = try GemmaRMSNorm(attention[names.queryNorm], size: d, eps: config.layerNormEps)
        keyNorm = try GemmaRMSNorm(attention[names.keyNorm], size: d, eps: config.layerNormEps)
        (self.rotary, self.window, heads, keyValueHeads, headDim) = (rotary, window, config.numAttentionHeads, gemma.keyValueHeads, d)
        queryRescale = Float((Double(d) / gemma.queryScalar).squareRoot())
    }

    /// out[T × H] = Wo · Attention(x).
    func callAsFunction(_ x: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let sequences = context.sequences, m = sequences.tokenCount, d = headDim
        let queries = heads * d, width = queries + 2 * keyValueHeads * d, group = heads / keyValueHeads
        let projections = context.wide                  // [T × width]: Q | K | V per token
        let expanded = projections + m * width          // [T × 3·queries]: Q | K per query head | V per query head
        let attended = expanded + m * 3 * queries       // [T × queries]
        context.measure(.qkv) {
            qkv(x, m: m, into: projections, context)
            let (heads, kvHeads, rescale) = (heads, keyValueHeads, queryRescale)
            // Each head of Q, then of K, is one vector of d channels to its RMSNorm.
            let (queryEps, keyEps) = (queryNorm.eps, keyNorm.eps)
            queryNorm.scale.withUnsafeBufferPointer { queryScale in
                keyNorm.scale.withUnsafeBufferPointer { keyScale in
                    let (queryScale, keyScale) = (queryScale.baseAddress!, keyScale.baseAddress!)
                    parallelRows(m, columns: width, threads: context.threads) { rows in
                        for t in rows {
                            let row = projections + t * width
                            for head in 0..<heads { GemmaRMSNorm.normalize(row + head * d, count: d, scale: queryScale, eps: queryEps) }
                            for head in 0..<kvHeads { GemmaRMSNorm.normalize(row + queries + head * d, count: d, scale: keyScale, eps: keyEps) }
                        }
                    }
                }
            }
            // Q's and K's heads are adjacent in the row: one pass rotates both.
            rotary.rotate(projections, ld: width, heads: heads + keyValueHeads, headDim: d, positions: context.positions, threads: context.threads)
            parallelRows(m, columns: 3 * queries, threads: context.threads) { rows in
                for t in rows {
                    let (row, target) = (projections + t * width, expanded + t * 3 * queries)
                    if rescale == 1 {
                        target.update(from: row, count: queries)
                    } else {
                        for i in 0..<queries { target[i] = row[i] * rescale }
                    }
                    for head in 0..<heads {
                        let shared = head / group
                        (target + queries + head * d).update(from: row + queries + shared * d, count: d)
                        (target + 2 * queries + head * d).update(from: row + queries + kvHeads * d + shared * d, count: d)
                    }
                }
            }
        }
        context.measure(.attention) {
            multiHeadAttention(q: expanded, k: expanded + queries, v: expanded + 2 * queries, ld: 3 * queries,
                               heads: heads, headDim: d, starts: sequences.starts, lengths: sequences.lengths,
                               threads: context.threads, arithmetic: context.attention, window: window.map(AttentionWindow.around) ?? .all,
                               scratch: context.attentionScratch, into: attended, ldo: queries)
        }
        context.measure(.attentionOutput) { output(attended, m: m, into: out, context) }
    }
}

/// GeGLU: down(gelu_tanh(gate(x)) ⊙ up(x)), gate and up in one Linear (`gate_up`, gate's rows first).
struct GemmaFeedForward {
    let gateUp: Linear
    let down: Linear
    let width: Int

    init(_ scope: WeightScope, _ config: BertConfig) throws {
        let (h, f) = (config.hiddenSize, config.intermediateSize)
        gateUp = try scope[TensorNames.gateUp].linear(k: h, n: 2 * f)
        down = try scope[TensorNames.down].linear(k: f, n: h)
        width = f
    }

    /// out[T × H] = FFN(x).
    func callAsFunction(_ x: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let m = context.sequences.tokenCount, f = width
        let both = context.wide, gated = context.gated!
        context.measure(.feedForwardIn) {
            gateUp(x, m: m, into: both, context)
            parallelRows(m, columns: 2 * f, threads: context.threads) { rows in
                for r in rows {
                    let (g, u, y) = (both + r * 2 * f, both + r * 2 * f + f, gated + r * f)
                    for c in 0..<f { y[c] = tanhGELU(g[c]) * u[c] }
                }
            }
        }
        context.measure(.feedForwardOut) { down(gated, m: m, into: out, context) }
    }
}

/// PyTorch's gelu(approximate="tanh"), Gemma's "gelu_pytorch_tanh":
/// x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))).
@inline(__always)
func tanhGELU(_ x: Float) -> Float {
    let inner: Float = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1 + Foundation.tanh(inner))
}
