import Foundation

/// Texts in, sparse lexical vectors out: SPLADE pooling (`SpladeHead`) over a masked-LM
/// checkpoint such as splade-tiny, one `SparseVector` over the vocabulary per text.
public final class SparseEmbedder: ModelPipeline, @unchecked Sendable {
    public let model: any EncoderModel
    public let tokenizer: BertTokenizer
    public let head: SpladeHead

    public init(model: any EncoderModel, tokenizer: BertTokenizer) throws {
        head = try SpladeHead(model)
        (self.model, self.tokenizer) = (model, tokenizer)
    }

    /// Vectors in input order, and which inputs were cut to the maximum length.
    public struct Embeddings: Sendable {
        public let vectors: [SparseVector]
        public let truncated: [Int]
    }

    /// One sparse vector per text, in input order; texts longer than `maxLength` tokens (nil: the
    /// model's max_seq_length) are truncated.
    public func embed(_ texts: [String], maxLength: Int? = nil, batchSize: Int = 32) throws -> Embeddings {
        let limit = min(maxLength ?? model.config.maxSequenceLength, model.config.positionLimit)
        var vectors: [SparseVector] = [], truncated: [Int] = []
        vectors.reserveCapacity(texts.count)
        for start in stride(from: 0, to: texts.count, by: max(1, batchSize)) {
            let encodings = texts[start..<min(start + max(1, batchSize), texts.count)].map { tokenizer.encode($0, maxLength: limit) }
            truncated += encodings.indices.filter { encodings[$0].wasTruncated }.map { start + $0 }
            let output = try model.encode(encodings.map(\.ids), typeIds: encodings.map(\.typeIds))
            vectors += try head(output, HeadBatch(threads: model.threads))
        }
        return Embeddings(vectors: vectors, truncated: truncated)
    }
}
