import Foundation

// The retrieval heads besides sentence pooling: sparse lexical weights (SPLADE's, or BGE-M3's
// sparse_linear) and BGE-M3's ColBERT multi-vectors, and one head that runs any of the three
// over one forward pass.

/// BGE-M3's lexical weights, as FlagEmbedding computes them: every token's weight is
/// relu(sparse_linear(h)); a text's weight for a token id is the largest of its tokens' weights,
/// leaving out zeros and the ids of [CLS]/<s>, </s>, padding and the unknown token.
public struct LexicalWeightsHead: Head {
    let linear: Linear
    let excludedIds: Set<Int32>

    /// `excludedIds`: the tokenizer's cls, eos, pad and unk ids (FlagEmbedding's unused_tokens).
    public init(_ encoder: any EncoderModel, excludedIds: Set<Int32>) throws {
        guard encoder.config.heads.hasLexicalWeights == true else {
            throw encoder.missingHead(.sparseEmbedding, "BGE-M3's lexical weights need sparse_linear.pt beside the checkpoint when it is converted")
        }
        linear = try encoder.headScope[TensorNames.sparseLinear].linear(k: encoder.config.encoder.hiddenSize, n: 1)
        self.excludedIds = excludedIds
    }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [SparseVector] {
        // One matrix-vector product over every token of the batch.
        let total = encoded.ids.count
        var weights = [Float](repeating: 0, count: max(1, total))
        weights.withUnsafeMutableBufferPointer {
            linear(encoded.storage, m: total, into: $0.baseAddress!, .forHead(rows: total, threads: batch.threads))
        }
        return (0..<encoded.count).map { s in
            var largest: [Int32: Float] = [:]
            for t in encoded.starts[s]..<encoded.starts[s] + encoded.lengths[s] where weights[t] > 0 && !excludedIds.contains(encoded.ids[t]) {
                largest[encoded.ids[t]] = max(largest[encoded.ids[t]] ?? 0, weights[t])
            }
            let indices = largest.keys.sorted()
            return SparseVector(indices: indices, values: indices.map { largest[$0]! })
        }
    }
}

/// The sparse head a checkpoint has: BGE-M3's lexical weights when it carries sparse_linear,
/// else SPLADE pooling over its masked-LM logits.
public enum SparseHead: Head {
    case splade(SpladeHead)
    case lexicalWeights(LexicalWeightsHead)

    public init(_ encoder: any EncoderModel, tokenizer: Tokenizer) throws {
        if encoder.config.heads.hasLexicalWeights == true {
            self = .lexicalWeights(try LexicalWeightsHead(encoder, excludedIds: [tokenizer.clsId, tokenizer.sepId, tokenizer.padId, tokenizer.unkId]))
        } else {
            self = .splade(try SpladeHead(encoder))
        }
    }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [SparseVector] {
        switch self {
        case .splade(let head): return try head(encoded, batch)
        case .lexicalWeights(let head): return try head(encoded, batch)
        }
    }
}

/// BGE-M3's ColBERT vectors: normalise(colbert_linear(h)) for every token after [CLS], the
/// final </s> included, as FlagEmbedding's colbert_embedding and _process_colbert_vecs give them.
public struct MultiVectorHead: Head {
    let linear: Linear
    /// Width of each vector.
    public var dimension: Int { linear.n }

    public init(_ encoder: any EncoderModel) throws {
        guard let width = encoder.config.heads.colbertDimension else {
            throw encoder.missingHead(.multiVector, "multi-vector output needs colbert_linear.pt beside the checkpoint (BGE-M3) when it is converted")
        }
        linear = try encoder.headScope[TensorNames.colbertLinear].linear(k: encoder.config.encoder.hiddenSize, n: width)
    }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [[[Float]]] {
        // Every token in one product ([CLS] rows too: one row per text, cheaper than gathering).
        let total = encoded.ids.count, d = dimension
        var vectors = [Float](repeating: 0, count: max(1, total * d))
        vectors.withUnsafeMutableBufferPointer {
            linear(encoded.storage, m: total, into: $0.baseAddress!, .forHead(rows: total, threads: batch.threads))
        }
        return (0..<encoded.count).map { s in
            (encoded.starts[s] + 1..<encoded.starts[s] + encoded.lengths[s]).map { t in
                var v = Array(vectors[t * d..<(t + 1) * d])
                l2Normalize(&v)
                return v
            }
        }
    }
}

/// Which outputs `RetrievalHead` gives.
public struct RetrievalOutputs: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The sentence vector (`SentenceHead`).
    public static let dense = RetrievalOutputs(rawValue: 1)
    /// Lexical weights (`SparseHead`).
    public static let sparse = RetrievalOutputs(rawValue: 2)
    /// ColBERT vectors (`MultiVectorHead`).
    public static let multiVector = RetrievalOutputs(rawValue: 4)
    public static let all: RetrievalOutputs = [.dense, .sparse, .multiVector]
}

/// What `RetrievalHead` gives for one text: the outputs it was asked for, nil for the others.
public struct RetrievalEmbedding: Sendable {
    public var dense: [Float]?
    public var sparse: SparseVector?
    public var multiVector: [[Float]]?
}

/// Dense, sparse and multi-vector outputs from one forward pass (BGE-M3's three): each head
/// reads the same last hidden states.
public struct RetrievalHead: Head {
    public let outputs: RetrievalOutputs
    let dense: SentenceHead?
    let sparse: SparseHead?
    let multiVector: MultiVectorHead?

    /// The heads of `outputs` from their parts (a model's own, already loaded).
    public init(dense: SentenceHead?, sparse: SparseHead?, multiVector: MultiVectorHead?, outputs: RetrievalOutputs) {
        self.outputs = outputs
        self.dense = outputs.contains(.dense) ? dense : nil
        self.sparse = outputs.contains(.sparse) ? sparse : nil
        self.multiVector = outputs.contains(.multiVector) ? multiVector : nil
    }

    public init(_ encoder: any EncoderModel, tokenizer: Tokenizer, outputs: RetrievalOutputs) throws {
        self.init(dense: outputs.contains(.dense) ? try SentenceHead(encoder) : nil,
                  sparse: outputs.contains(.sparse) ? try SparseHead(encoder, tokenizer: tokenizer) : nil,
                  multiVector: outputs.contains(.multiVector) ? try MultiVectorHead(encoder) : nil, outputs: outputs)
    }

    public func callAsFunction(_ encoded: EncoderOutput, _ batch: HeadBatch) throws -> [RetrievalEmbedding] {
        let dense = self.dense.map { $0(encoded, batch) }
        let sparse = try self.sparse.map { try $0(encoded, batch) }
        let multiVector = try self.multiVector.map { try $0(encoded, batch) }
        return (0..<encoded.count).map { s in
            RetrievalEmbedding(dense: dense?[s], sparse: sparse?[s], multiVector: multiVector?[s])
        }
    }
}
