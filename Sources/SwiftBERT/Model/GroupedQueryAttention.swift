import Foundation
import SwiftBERTKernels

/// Grouped-query self-attention (Gemma 3, Qwen3): Q (heads × d), K and V (kv heads × d each) in
/// one Linear; Q and K normalised per head (RMSNorm) and rotated (RoPE);
/// softmax(QKᵀ/√query_scalar)·V over the keys of the layer's window (all, a sliding window, or
/// the causal mask); then the output projection. The attention kernel reads each key/value head
/// for the query heads of its group, from the projection's rows as they are.
struct GroupedQueryAttention {
    let qkv: Linear
    let output: Linear
    /// Q's and K's RMSNorms, over each head's d channels.
    let queryNorm: RMSNorm
    let keyNorm: RMSNorm
    let rotary: RotaryEmbedding
    let heads: Int
    let keyValueHeads: Int
    let headDim: Int
    /// The scores' scale 1/√query_scalar, where it is not the kernel's 1/√d (EmbeddingGemma's
    /// query_pre_attn_scalar is its head_dim, and Qwen3 has none: nil for both).
    let scoreScale: Float?
    /// The keys each query sees.
    let window: AttentionWindow

    /// Rejects head shapes the attention cannot run, before any weight is read.
    static func validate(headDim: Int, keyValueHeads: Int, _ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {
        guard headDim > 0, headDim % 2 == 0, headDim <= 4096 else { throw fail("head_dim must be a positive even number up to 4096, not \(headDim)") }
        guard keyValueHeads > 0, config.numAttentionHeads % keyValueHeads == 0 else {
            throw fail("num_attention_heads \(config.numAttentionHeads) is not a multiple of num_key_value_heads \(keyValueHeads)")
        }
        guard config.numAttentionHeads * headDim <= ModelConfig.maximumSize else { throw fail("num_attention_heads × head_dim is too large") }
    }

    /// Columns of `ForwardContext.wide` the attention uses per token: the projections Q | K | V
    /// and the heads' output.
    static func scratchColumns(_ config: EncoderConfig, headDim: Int, keyValueHeads: Int) -> Int {
        let queries = config.numAttentionHeads * headDim
        return queries + 2 * keyValueHeads * headDim + queries
    }

    /// `normOffset`: Q's and K's RMSNorms scale by normOffset + weight (`RMSNorm`).
    init(_ scope: WeightScope, _ config: EncoderConfig, headDim d: Int, keyValueHeads: Int, queryScalar: Double, normOffset: Float,
         rotary: RotaryEmbedding, window: AttentionWindow) throws {
        let h = config.hiddenSize, names = TensorNames.self
        let queries = config.numAttentionHeads * d
        let attention = scope[names.selfAttention]
        qkv = try attention[names.qkv].linear(k: h, n: queries + 2 * keyValueHeads * d)
        output = try scope[names.output][names.dense].linear(k: queries, n: h)
        queryNorm = try RMSNorm(attention[names.queryNorm], size: d, eps: config.layerNormEps, offset: normOffset)
        keyNorm = try RMSNorm(attention[names.keyNorm], size: d, eps: config.layerNormEps, offset: normOffset)
        (self.rotary, self.window, heads, self.keyValueHeads, headDim) = (rotary, window, config.numAttentionHeads, keyValueHeads, d)
        scoreScale = queryScalar == Double(d) ? nil : Float(1 / queryScalar.squareRoot())
    }

    /// out[T × H] = Wo · Attention(x). With `readingOnly` (a last layer for the rows a head
    /// reads, `PackedSequences.rowsRead`), attention and Wo run for those rows alone, and `out`
    /// holds them in order from its first row.
    func callAsFunction(_ x: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, _ context: ForwardContext,
                        readingOnly: Bool = false) {
        let sequences = context.sequences, m = sequences.tokenCount, d = headDim
        let queries = heads * d, width = queries + 2 * keyValueHeads * d
        let projections = context.wide                  // [T × width]: Q | K | V per token
        let attended = projections + m * width          // [T × queries]
        context.measure(.qkv) {
            qkv(x, m: m, into: projections, context)
            let (heads, kvHeads) = (heads, keyValueHeads)
            // Each head of Q, then of K, is one vector of d channels to its RMSNorm.
            let (queryEps, keyEps) = (queryNorm.eps, keyNorm.eps)
            queryNorm.scale.withUnsafeBufferPointer { queryScale in
                keyNorm.scale.withUnsafeBufferPointer { keyScale in
                    let (queryScale, keyScale) = (queryScale.baseAddress!, keyScale.baseAddress!)
                    parallelRows(m, columns: width, threads: context.threads) { rows in
                        for t in rows {
                            let row = projections + t * width
                            for head in 0..<heads { RMSNorm.normalize(row + head * d, count: d, scale: queryScale, eps: queryEps) }
                            for head in 0..<kvHeads { RMSNorm.normalize(row + queries + head * d, count: d, scale: keyScale, eps: keyEps) }
                        }
                    }
                }
            }
            // Q's and K's heads are adjacent in the row: one pass rotates both.
            rotary.rotate(projections, ld: width, heads: heads + keyValueHeads, headDim: d, positions: context.positions, threads: context.threads)
        }
        context.measure(.attention) {
            multiHeadAttention(q: projections, k: projections + queries, v: projections + queries + keyValueHeads * d, ld: width,
                               heads: heads, keyValueHeads: keyValueHeads, headDim: d, starts: sequences.starts, lengths: sequences.lengths,
                               threads: context.threads, arithmetic: context.attention, scale: scoreScale, window: window,
                               queries: readingOnly ? sequences.rowsRead : nil, scratch: context.attentionScratch, into: attended, ldo: queries)
        }
        let rows = readingOnly ? sequences.gatherRowsRead(width: queries, [attended]) : m
        guard rows > 0 else { return }
        context.measure(.attentionOutput) { output(attended, m: rows, into: out, context) }
    }
}

extension ConvertedModel {
    /// `encode` of a model of grouped-query layers and gated feed-forward networks (Gemma 3,
    /// Qwen3): the batch packed (no token types), the forward pass's scratch sized for both
    /// blocks, and `forward` run on each chunk.
    func encodeGroupedQueryLayers(_ batch: [[Int32]], headDim: Int, keyValueHeads: Int, profile: StageProfile?, reading: [HeadRows]? = nil,
                                  forward: (_ ids: [Int32], _ hidden: UnsafeMutablePointer<Float>, ForwardContext) -> Void) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.encoder.pack(batch, typeIds: nil, reading: reading)
        let h = config.encoder.hiddenSize
        let attentionColumns = GroupedQueryAttention.scratchColumns(config.encoder, headDim: headDim, keyValueHeads: keyValueHeads)
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: h, threads: threads) { part, ids, _, hidden in
            let context = ForwardContext(sequences: part, threads: threads, quantizesActivations: precision.quantizesActivations,
                                         attention: precision.attention, profile: profile, hidden: h,
                                         wideColumns: max(attentionColumns, 2 * config.encoder.intermediateSize), headDim: headDim,
                                         gatedColumns: config.encoder.intermediateSize)
            forward(ids, hidden, context)
        }
    }
}
