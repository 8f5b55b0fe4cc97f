/// BertEmbeddings: word + position + token type embeddings, then LayerNorm.
struct BertEmbeddings {
    let wordEmbeddings: WeightMatrix
    let positionEmbeddings: UnsafePointer<Float>
    let tokenTypeEmbeddings: UnsafePointer<Float>
    let layerNorm: LayerNorm
    let hidden: Int

    init(_ file: SafeTensorsFile, _ config: BertConfig) throws {
        let h = config.hiddenSize
        hidden = h
        wordEmbeddings = try WeightMatrix(file, TensorNames.wordEmbeddings, n: config.vocabSize, k: h)
        positionEmbeddings = try file.floats(TensorNames.positionEmbeddings + ".weight", shape: [config.maxPositionEmbeddings, h]).baseAddress!
        tokenTypeEmbeddings = try file.floats(TensorNames.tokenTypeEmbeddings + ".weight", shape: [config.typeVocabSize, h]).baseAddress!
        layerNorm = try LayerNorm(file, TensorNames.embeddingsLayerNorm, size: h, eps: config.layerNormEps)
    }

    /// out[T × H] for the packed token ids (already validated against the vocabulary sizes).
    func callAsFunction(ids: [Int32], typeIds: [Int32], into out: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let sequences = context.sequences
        for (s, start) in sequences.starts.enumerated() {
            for position in 0..<sequences.lengths[s] {
                let t = start + position
                let row = out + t * hidden
                wordEmbeddings.row(Int(ids[t]), k: hidden, into: row)
                let pos = positionEmbeddings + position * hidden
                let type = tokenTypeEmbeddings + Int(typeIds[t]) * hidden
                for c in 0..<hidden { row[c] += pos[c] + type[c] }
            }
        }
        layerNorm(out, residual: nil, m: sequences.tokenCount)
    }
}
