import Foundation
import SwiftBERTKernels

/// DeBERTa-v2 and v3 (transformers' DebertaV2Model), loaded from a converted folder whose config
/// carries `deberta`. BERT's post-LN layers, but for:
/// - the input: word embeddings (+ absolute positions only when position_biased_input, which
///   DeBERTa-v3 turns off; + token types when it has any), then LayerNorm;
/// - disentangled attention: each layer adds to Q·Kᵀ the content-to-position and
///   position-to-content scores (`disentangledScores`) from the relative embeddings
///   (encoder.rel_embeddings, through encoder.LayerNorm), which the layer's own query and key
///   projections turn into position queries and keys once, at load; all of it scaled by
///   1/√(head_dim × (1 + the number of position scores)).
/// Relative positions are counted within each packed sequence, so a batch gives each sequence
/// what it gets alone. Immutable after loading: one instance can serve many threads at once.
public final class DebertaEncoderModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    /// DebertaV2Embeddings: BERT's, with absolute positions only when position_biased_input
    /// (padding is never packed, so its mask has nothing to zero).
    let embeddings: BertEmbeddings
    let layers: [DebertaLayer]
    let deberta: DebertaConfig
    let maskedLMHead: MaskedLMPredictionHead?

    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let (opened, deberta) = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights,
                                                family: \.deberta, named: "DeBERTa")
        let (config, heads) = (opened.config.encoder, opened.config.heads)
        self.deberta = deberta
        let root = WeightScope(opened.weights, precision: precision), h = config.hiddenSize
        embeddings = try BertEmbeddings(root, config, positions: deberta.positionBiasedInput)
        // The relative embeddings as every layer reads them: normalised once.
        var relative = Array(try opened.weights.floats(TensorNames.relativeEmbeddings + ".weight", shape: [2 * deberta.span, h]))
        if deberta.normalizesRelativeEmbeddings {
            let norm = try root[TensorNames.relativeEmbeddingsNorm].layerNorm(size: h, eps: config.layerNormEps)
            relative.withUnsafeMutableBufferPointer { norm($0.baseAddress!, residual: nil, m: 2 * deberta.span) }
        }
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) {
            try DebertaLayer(root[TensorNames.layer($0)], config, deberta, relativeEmbeddings: relative)
        }
        maskedLMHead = heads.hasMaskedLMHead
            ? try MaskedLMPredictionHead(root, opened.config, wordEmbeddings: embeddings.wordEmbeddings) : nil
        KernelReport.warnOnceIfSlower()
        super.init(opened, loadStarted: start)
    }

    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: profile, reading: nil)
    }

    /// `encode` for a head that reads `reading[s]` of sequence s: the last layer runs its
    /// queries, attention output and feed-forward network for those rows alone (as `BertModel`).
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?, reading: [HeadRows]?) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.encoder.pack(batch, typeIds: typeIds, reading: reading)
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: config.encoder.hiddenSize, threads: threads) { part, ids, types, hidden in
            let context = ForwardContext(sequences: part, threads: threads, quantizesActivations: precision.quantizesActivations,
                                         attention: precision.attention, profile: profile, hidden: config.encoder.hiddenSize,
                                         wideColumns: max(3 * config.encoder.hiddenSize, config.encoder.intermediateSize), headDim: config.encoder.headDim)
            forward(ids: ids, typeIds: types, hidden: hidden, context)
        }
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], typeIds: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        // 1. Embeddings: word (+ position) (+ token type), LayerNorm.
        context.measure(.embeddings) { embeddings(ids: ids, typeIds: typeIds, into: x, context) }
        // The table row of every distance the longest sequence holds, for every layer.
        let longest = context.sequences.longest
        let tableRows = (-(longest - 1)..<longest).map { Int32(deberta.tableRow(distance: $0)) }
        tableRows.withUnsafeBufferPointer { rows in
            let zero = rows.baseAddress! + (longest - 1)
            let sequences = context.sequences, h = config.encoder.hiddenSize
            for (index, layer) in layers.enumerated() {
                // The last layer for the rows a head reads, as `BertModel.forward` runs it (the
                // disentangled scores are still made for every query row).
                let readingOnly = sequences.readsOnly(layer: index, of: layers.count)
                // 2. Disentangled self-attention.
                layer.attention(x, into: context.attended, tableRow: zero, context, queries: readingOnly ? sequences.rowsRead : nil)
                let m = readingOnly ? sequences.gatherRowsRead(width: h, [context.attended, x]) : sequences.tokenCount
                if m == 0 { return }  // no row read: nothing more to compute
                // 3. Attention output projection, residual, LayerNorm.
                layer.attentionOutput(context.attended, residual: x, context, rows: m)
                // 4. Feed-forward in: dense, then GELU.
                layer.intermediate(x, into: context.wide, context, rows: m)
                // 5. Feed-forward out: dense, residual, LayerNorm.
                layer.output(context.wide, residual: x, context, rows: m)
                if readingOnly { sequences.putBackRowsRead(width: h, x) }
            }
        }
    }

    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        guard let head = maskedLMHead else { throw missingMaskedLMHead }
        return runHead(hiddenRows, m: m, vocabulary: config.encoder.vocabSize) { head($0, m: m, into: $1, threads: threads) }
    }
}

/// DebertaV2Layer: disentangled self-attention and its output, then BERT's feed-forward block.
struct DebertaLayer {
    let attention: DisentangledSelfAttention
    let attentionOutput: BertProjectionOutput
    let intermediate: BertIntermediate
    let output: BertProjectionOutput

    init(_ scope: WeightScope, _ config: EncoderConfig, _ deberta: DebertaConfig, relativeEmbeddings: [Float]) throws {
        let attentionScope = scope[TensorNames.attention]
        attention = try DisentangledSelfAttention(attentionScope[TensorNames.selfAttention], config, deberta, relativeEmbeddings: relativeEmbeddings)
        attentionOutput = try BertProjectionOutput(attentionScope[TensorNames.output], .selfOutput, config)
        intermediate = try BertIntermediate(scope[TensorNames.intermediate], k: config.hiddenSize, config)
        output = try BertProjectionOutput(scope[TensorNames.output], .output, config)
    }
}

/// DisentangledSelfAttention with share_att_key: Q, K and V from one fused Linear (the converter
/// stacks query_proj, key_proj and value_proj), and the position queries and keys, [2·span × d]
/// per head, made at load by the same projections from the relative embeddings (biases included,
/// as transformers applies query_proj and key_proj to them).
struct DisentangledSelfAttention {
    let qkv: Linear
    let heads: Int
    let headDim: Int
    /// Per head, query_proj(relative embeddings) for p2c and key_proj(relative embeddings) for
    /// c2p; nil when pos_att_type leaves that score out.
    let positionQueries: [PositionTable]?
    let positionKeys: [PositionTable]?
    let scale: Float

    init(_ scope: WeightScope, _ config: EncoderConfig, _ deberta: DebertaConfig, relativeEmbeddings: [Float]) throws {
        let h = config.hiddenSize, rows = 2 * deberta.span
        let qkv = try scope[TensorNames.qkv].linear(k: h, n: 3 * h)
        self.qkv = qkv
        (heads, headDim) = (config.numAttentionHeads, config.headDim)
        scale = 1 / (Float(config.headDim) * Float(deberta.scaleFactor)).squareRoot()
        var projected = [Float](repeating: 0, count: rows * 3 * h)
        relativeEmbeddings.withUnsafeBufferPointer { x in
            projected.withUnsafeMutableBufferPointer { y in
                qkv(x.baseAddress!, m: rows, into: y.baseAddress!, .forHead(rows: rows, threads: 1))
            }
        }
        let d = config.headDim
        /// Each head's table from part `part` of the projections (0: Q, 1: K).
        func tables(_ part: Int) -> [PositionTable] {
            projected.withUnsafeBufferPointer { p in
                (0..<config.numAttentionHeads).map {
                    PositionTable(p.baseAddress! + part * h + $0 * d, rows: rows, headDim: d, ld: 3 * h, bf16: scope.precision == .bf16)
                }
            }
        }
        positionQueries = deberta.positionToContent ? tables(0) : nil
        positionKeys = deberta.contentToPosition ? tables(1) : nil
    }

    /// attended[T × H] = softmax((Q·Kᵀ + c2p + p2c) · scale)·V per sequence and head.
    func callAsFunction(_ x: UnsafePointer<Float>, into attended: UnsafeMutablePointer<Float>, tableRow: UnsafePointer<Int32>,
                        _ context: ForwardContext, queries: [Range<Int>]? = nil) {
        let sequences = context.sequences, h = heads * headDim
        let projections = context.wide  // [T × 3H]: Q | K | V per token
        context.measure(.qkv) { qkv(x, m: sequences.tokenCount, into: projections, context) }
        context.measure(.attention) {
            let (d, starts, positionQueries, positionKeys) = (headDim, sequences.starts, positionQueries, positionKeys)
            multiHeadAttention(q: projections, k: projections + h, v: projections + 2 * h, ld: 3 * h,
                               heads: heads, headDim: d, starts: starts, lengths: sequences.lengths,
                               threads: context.threads, arithmetic: context.attention,
                               pairwiseBias: { s, head, n, scores in
                                   let q = projections + starts[s] * 3 * h + head * d
                                   disentangledScores(queries: q, keys: q + h, ld: 3 * h, n: n,
                                                      positionKeys: positionKeys?[head], positionQueries: positionQueries?[head],
                                                      tableRow: tableRow, into: scores)
                               },
                               scale: scale, queries: queries, scratch: context.attentionScratch, into: attended, ldo: h)
        }
    }
}
