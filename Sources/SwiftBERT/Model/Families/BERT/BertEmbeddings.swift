import SwiftBERTKernels

/// BertEmbeddings: word + position + token type embeddings, then LayerNorm. RobertaEmbeddings
/// is the same but for its positions (see `positionIds`); DebertaV2Embeddings without absolute
/// positions (position_biased_input false) has no position table.
struct BertEmbeddings {
    let wordEmbeddings: any LinearWeights
    /// nil: no absolute positions (DeBERTa-v3).
    let positionEmbeddings: UnsafePointer<Float>?
    let tokenTypeEmbeddings: UnsafePointer<Float>
    let layerNorm: LayerNorm
    let hidden: Int
    /// RoBERTa's padding_idx; nil for BERT.
    let paddingIdx: Int32?

    /// `positions` false: the model adds no absolute positions, and its file has no table.
    init(_ scope: WeightScope, _ config: EncoderConfig, positions: Bool = true) throws {
        let h = config.hiddenSize, file = scope.file
        hidden = h
        paddingIdx = config.paddingIdx.map(Int32.init)
        wordEmbeddings = try scope[TensorNames.wordEmbeddings].matrix(n: config.vocabSize, k: h)
        positionEmbeddings = positions
            ? try file.floats(TensorNames.positionEmbeddings + ".weight", shape: [config.maxPositionEmbeddings, h]).baseAddress! : nil
        tokenTypeEmbeddings = try file.floats(TensorNames.tokenTypeEmbeddings + ".weight", shape: [config.typeVocabSize, h]).baseAddress!
        layerNorm = try scope[TensorNames.embeddingsLayerNorm].layerNorm(size: h, eps: config.layerNormEps)
    }

    /// out[T × H] for the packed token ids (already validated against the vocabulary sizes).
    func callAsFunction(ids: [Int32], typeIds: [Int32], into out: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let sequences = context.sequences
        for (s, start) in sequences.starts.enumerated() {
            let positions = positionIds(ids[start..<start + sequences.lengths[s]])
            for (position, positionId) in positions.enumerated() {
                let t = start + position
                let row = out + t * hidden
                wordEmbeddings.row(Int(ids[t]), into: row)
                let type = tokenTypeEmbeddings + Int(typeIds[t]) * hidden
                if let positionEmbeddings {
                    let pos = positionEmbeddings + positionId * hidden
                    for c in 0..<hidden { row[c] += pos[c] + type[c] }
                } else {
                    for c in 0..<hidden { row[c] += type[c] }
                }
            }
        }
        layerNorm(out, residual: nil, m: sequences.tokenCount, threads: context.threads)
    }

    /// Position ids of one sequence. BERT: 0, 1, 2, … RoBERTa (transformers'
    /// create_position_ids_from_input_ids): non-padding tokens count up from padding_idx + 1,
    /// and a padding token takes padding_idx itself, without advancing the count.
    func positionIds(_ sequence: ArraySlice<Int32>) -> [Int] {
        guard let paddingIdx else { return Array(0..<sequence.count) }
        var next = Int(paddingIdx)
        return sequence.map { id in
            guard id != paddingIdx else { return Int(paddingIdx) }
            next += 1
            return next
        }
    }
}
