import Foundation
import SwiftBERTKernels

/// The rotary-position encoders: NomicBERT (nomic-embed-text), GTE (gte-*-v1.5,
/// gte-multilingual) and ModernBERT (and gte-modernbert, modernbert-embed), loaded from a
/// converted folder whose config carries `rotary`. What they share, and what sets them apart
/// from BERT:
/// - positions are rotations of Q and K (`RotaryEmbedding`), so inputs run to
///   max_position_embeddings (8,192 for GTE and ModernBERT) with no position table;
/// - the feed-forward network is gated (`GatedFeedForward`: SwiGLU or GeGLU);
/// - NomicBERT and GTE normalise after each residual sum, as BERT; ModernBERT before each
///   block, with a final LayerNorm, and every third layer attends globally while the others
///   see a sliding window of local_attention / 2 tokens on each side.
/// Immutable after loading: one instance can serve many threads at once.
public final class RotaryEncoderModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    let wordEmbeddings: any LinearWeights
    let tokenTypeEmbeddings: UnsafePointer<Float>
    let embeddingsNorm: LayerNorm
    let layers: [RotaryEncoderLayer]
    let finalNorm: LayerNorm?
    let maskedLMHead: MaskedLMPredictionHead?
    let placement: RotaryEncoderConfig.NormPlacement

    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let (opened, rotary) = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights,
                                                family: \.rotary, named: "rotary-position")
        let (config, heads) = (opened.config.encoder, opened.config.heads)
        let root = WeightScope(opened.weights, precision: precision), h = config.hiddenSize
        wordEmbeddings = try root[TensorNames.wordEmbeddings].matrix(n: config.vocabSize, k: h)
        tokenTypeEmbeddings = try opened.weights.floats(TensorNames.tokenTypeEmbeddings + ".weight", shape: [config.typeVocabSize, h]).baseAddress!
        embeddingsNorm = try root[TensorNames.embeddingsLayerNorm].layerNorm(size: h, eps: config.layerNormEps)
        // One cos/sin table per RoPE base (ModernBERT's global and local layers differ).
        var tables: [Double: RotaryEmbedding] = [:]
        for l in 0..<config.numHiddenLayers where tables[rotary.theta(layer: l)] == nil {
            tables[rotary.theta(layer: l)] = RotaryEmbedding(theta: rotary.theta(layer: l), headDim: config.headDim, positions: config.positionLimit)
        }
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) {
            try RotaryEncoderLayer(root[TensorNames.layer($0)], config, index: $0, rotary: tables[rotary.theta(layer: $0)]!)
        }
        placement = rotary.normPlacement
        finalNorm = rotary.normPlacement == .pre ? try root[TensorNames.finalNorm].layerNorm(size: h, eps: config.layerNormEps) : nil
        maskedLMHead = heads.hasMaskedLMHead ? try MaskedLMPredictionHead(root, opened.config, wordEmbeddings: wordEmbeddings) : nil
        KernelReport.warnOnceIfSlower()
        super.init(opened, loadStarted: start)
    }

    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: profile, reading: nil)
    }

    /// `encode` for a head that reads `reading[s]` of sequence s: the last layer runs its
    /// queries, output projection and feed-forward network for those rows alone (as `BertModel`).
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?, reading: [HeadRows]?) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.encoder.pack(batch, typeIds: typeIds, reading: reading)
        let h = config.encoder.hiddenSize
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: h, threads: threads) { part, ids, types, hidden in
            let context = ForwardContext(sequences: part, threads: threads, quantizesActivations: precision.quantizesActivations,
                                         attention: precision.attention, profile: profile, hidden: h,
                                         wideColumns: max(3 * h, 2 * config.encoder.intermediateSize), headDim: config.encoder.headDim,
                                         gatedColumns: config.encoder.intermediateSize)
            forward(ids: ids, typeIds: types, hidden: hidden, context)
        }
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], typeIds: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let h = config.encoder.hiddenSize, m = context.sequences.tokenCount
        // 1. Embeddings: word (+ token type), LayerNorm; no positions (they are rotations of Q and K).
        context.measure(.embeddings) {
            for t in 0..<m {
                let row = x + t * h, type = tokenTypeEmbeddings + Int(typeIds[t]) * h
                wordEmbeddings.row(Int(ids[t]), into: row)
                for c in 0..<h { row[c] += type[c] }
            }
            embeddingsNorm(x, residual: nil, m: m, threads: context.threads)
        }
        let sequences = context.sequences
        for (index, layer) in layers.enumerated() {
            // The last layer for the rows a head reads: every token's keys and values, then
            // those rows alone (`rows` of them), gathered to the front of x and put back at the end.
            let readingOnly = sequences.readsOnly(layer: index, of: layers.count)
            switch placement {
            case .post:
                // 2. Attention, residual, LayerNorm; 3. gated feed-forward, residual, LayerNorm.
                layer.attention(x, into: context.projected, context, readingOnly: readingOnly)
                let rows = readingOnly ? sequences.gatherRowsRead(width: h, [x]) : m
                if rows == 0 { return }  // no row read: nothing more to compute
                context.measure(.layerNorm) { layer.attentionNorm!(x, residual: context.projected, m: rows, threads: context.threads) }
                layer.feedForward(x, into: context.projected, context, rows: rows)
                context.measure(.layerNorm) { layer.mlpNorm(x, residual: context.projected, m: rows, threads: context.threads) }
            case .pre:
                // 2. x += Attention(LayerNorm(x)) (layer 0: of x itself); 3. x += FFN(LayerNorm(x)).
                // The normalised copy goes to `attended`, which attention overwrites only once
                // its projections have read it; each norm writes it in its own parallel pass (the
                // residual sum before the second too), not after a serial copy of [T × H].
                let normed = context.attended
                if let norm = layer.attentionNorm {
                    context.measure(.layerNorm) { norm(x, residual: nil, into: normed, m: m, threads: context.threads) }
                }
                layer.attention(layer.attentionNorm == nil ? x : normed, into: context.projected, context, readingOnly: readingOnly)
                let rows = readingOnly ? sequences.gatherRowsRead(width: h, [x]) : m
                if rows == 0 { return }
                context.measure(.layerNorm) { layer.mlpNorm(x, residual: context.projected, into: normed, m: rows, threads: context.threads) }
                layer.feedForward(normed, into: context.projected, context, rows: rows)
                addResidual(x, context.projected, rows: rows, cols: h, threads: context.threads)
                if readingOnly, let finalNorm { context.measure(.layerNorm) { finalNorm(x, residual: nil, m: rows, threads: context.threads) } }
            }
            if readingOnly {
                sequences.putBackRowsRead(width: h, x)
                return
            }
        }
        if let finalNorm { context.measure(.layerNorm) { finalNorm(x, residual: nil, m: m, threads: context.threads) } }
    }

    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        guard let head = maskedLMHead else { throw missingMaskedLMHead }
        return runHead(hiddenRows, m: m, vocabulary: config.encoder.vocabSize) { head($0, m: m, into: $1, threads: threads) }
    }
}

/// One layer: rotary self-attention and the gated feed-forward network, with their two
/// LayerNorms (after each residual sum, or before each block: the model decides).
struct RotaryEncoderLayer {
    let attention: RotarySelfAttention
    /// nil: ModernBERT's layer 0, whose attention reads the embeddings as they are.
    let attentionNorm: LayerNorm?
    let feedForward: GatedFeedForward
    let mlpNorm: LayerNorm

    init(_ scope: WeightScope, _ config: EncoderConfig, index: Int, rotary: RotaryEmbedding) throws {
        let h = config.hiddenSize, names = TensorNames.self
        attention = try RotarySelfAttention(scope[names.attention], config, rotary: rotary, window: config.rotary?.window(layer: index) ?? .all)
        attentionNorm = config.rotary?.normPlacement == .pre && index == 0
            ? nil : try scope[names.attentionNorm].layerNorm(size: h, eps: config.layerNormEps)
        feedForward = try GatedFeedForward(scope[names.mlp], config)
        mlpNorm = try scope[names.mlpNorm].layerNorm(size: h, eps: config.layerNormEps)
    }
}

/// Self-attention with rotary positions: Q, K, V in one Linear, Q and K rotated by their
/// token's position, softmax(QKᵀ/√d)·V (within the window on sliding layers), then the output
/// projection.
struct RotarySelfAttention {
    let qkv: Linear
    let output: Linear
    let rotary: RotaryEmbedding
    let heads: Int
    let headDim: Int
    /// The keys each query sees.
    let window: AttentionWindow

    init(_ scope: WeightScope, _ config: EncoderConfig, rotary: RotaryEmbedding, window: AttentionWindow) throws {
        let h = config.hiddenSize, names = TensorNames.self
        qkv = try scope[names.selfAttention][names.qkv].linear(k: h, n: 3 * h)
        output = try scope[names.output][names.dense].linear(k: h, n: h)
        (self.rotary, self.window, heads, headDim) = (rotary, window, config.numAttentionHeads, config.headDim)
    }

    /// out[T × H] = Wo · Attention(x). With `readingOnly` (a last layer for the rows a head
    /// reads, `PackedSequences.rowsRead`), attention and Wo run for those rows alone, and `out`
    /// holds them in order from its first row.
    func callAsFunction(_ x: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, _ context: ForwardContext,
                        readingOnly: Bool = false) {
        let sequences = context.sequences, h = heads * headDim
        let projections = context.wide  // [T × 3H]: Q | K | V per token
        context.measure(.qkv) {
            qkv(x, m: sequences.tokenCount, into: projections, context)
            rotary.rotate(projections, ld: 3 * h, heads: 2 * heads, headDim: headDim, positions: context.positions, threads: context.threads)
        }
        context.measure(.attention) {
            multiHeadAttention(q: projections, k: projections + h, v: projections + 2 * h, ld: 3 * h,
                               heads: heads, headDim: headDim, starts: sequences.starts, lengths: sequences.lengths,
                               threads: context.threads, arithmetic: context.attention, window: window,
                               queries: readingOnly ? sequences.rowsRead : nil, scratch: context.attentionScratch, into: context.attended, ldo: h)
        }
        let rows = readingOnly ? sequences.gatherRowsRead(width: h, [context.attended]) : sequences.tokenCount
        guard rows > 0 else { return }
        context.measure(.attentionOutput) { output(context.attended, m: rows, into: out, context) }
    }
}
