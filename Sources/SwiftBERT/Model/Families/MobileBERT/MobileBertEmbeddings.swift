import SwiftBERTKernels

/// MobileBertEmbeddings: narrow word embeddings (embedding_size, 128), each concatenated with
/// its right and left neighbours' (the trigram input, zeros past the sequence's ends), projected
/// to hidden_size by `embedding_transformation`, then + position + token type, then the norm.
struct MobileBertEmbeddings {
    let wordEmbeddings: any LinearWeights
    /// embedding_transformation: [3E or E] → H; nil when transformers skips it (no trigrams, E == H).
    let transformation: Linear?
    let positionEmbeddings: UnsafePointer<Float>
    let tokenTypeEmbeddings: UnsafePointer<Float>
    let norm: MobileBertNorm
    let embeddingSize: Int
    let hidden: Int
    let trigramInput: Bool

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        let file = scope.file
        let (h, e) = (config.hiddenSize, mobile.embeddingSize)
        (hidden, embeddingSize, trigramInput) = (h, e, mobile.trigramInput)
        wordEmbeddings = try scope[TensorNames.wordEmbeddings].matrix(n: config.vocabSize, k: e)
        transformation = mobile.projectsEmbeddings(config)
            ? try scope[TensorNames.embeddingTransformation].linear(k: mobile.trigramInput ? 3 * e : e, n: h) : nil
        positionEmbeddings = try file.floats(TensorNames.positionEmbeddings + ".weight", shape: [config.maxPositionEmbeddings, h]).baseAddress!
        tokenTypeEmbeddings = try file.floats(TensorNames.tokenTypeEmbeddings + ".weight", shape: [config.typeVocabSize, h]).baseAddress!
        // transformers builds this norm without eps: nn.LayerNorm's default.
        norm = try MobileBertNorm(scope[TensorNames.embeddingsLayerNorm], size: h, eps: MobileBertNorm.defaultEps, mobile.normalization)
    }

    /// Columns of the projection's input per token (the scratch it needs).
    var inputWidth: Int { trigramInput ? 3 * embeddingSize : embeddingSize }

    /// out[T × H] for the packed token ids (already validated); `scratch` holds [T × inputWidth].
    func callAsFunction(ids: [Int32], typeIds: [Int32], into out: UnsafeMutablePointer<Float>,
                        scratch: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let sequences = context.sequences, e = embeddingSize
        let input = transformation == nil ? out : scratch
        let width = transformation == nil ? hidden : inputWidth
        for (s, start) in sequences.starts.enumerated() {
            let n = sequences.lengths[s]
            for position in 0..<n {
                let row = input + (start + position) * width
                if trigramInput {
                    // [next token's, this token's, previous token's embedding], zeros beyond the ends.
                    if position + 1 < n { wordEmbeddings.row(Int(ids[start + position + 1]), into: row) }
                    else { row.update(repeating: 0, count: e) }
                    wordEmbeddings.row(Int(ids[start + position]), into: row + e)
                    if position > 0 { wordEmbeddings.row(Int(ids[start + position - 1]), into: row + 2 * e) }
                    else { (row + 2 * e).update(repeating: 0, count: e) }
                } else {
                    wordEmbeddings.row(Int(ids[start + position]), into: row)
                }
            }
        }
        transformation?(scratch, m: sequences.tokenCount, into: out, context)
        for (s, start) in sequences.starts.enumerated() {
            for position in 0..<sequences.lengths[s] {
                let t = start + position
                let row = out + t * hidden
                let pos = positionEmbeddings + position * hidden
                let type = tokenTypeEmbeddings + Int(typeIds[t]) * hidden
                for c in 0..<hidden { row[c] = row[c] + pos[c] + type[c] }  // transformers' order
            }
        }
        norm(out, residual: nil, m: sequences.tokenCount)
    }
}
