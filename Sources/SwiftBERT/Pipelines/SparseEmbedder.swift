import Foundation

/// Texts in, sparse lexical vectors out, one `SparseVector` over the vocabulary per text:
/// SPLADE pooling over a masked-LM checkpoint such as splade-tiny, or BGE-M3's lexical weights.
/// `SentenceEmbedder.embed(_:outputs:options:)` gives them beside the dense and multi-vector
/// outputs of the same forward pass.
public final class SparseEmbedder: ModelPipeline, @unchecked Sendable {
    let embedder: SentenceEmbedder
    public var model: any EncoderModel { embedder.model }
    public var tokenizer: Tokenizer { embedder.tokenizer }
    public let head: SparseHead

    public init(model: any EncoderModel, tokenizer: Tokenizer) throws {
        embedder = try SentenceEmbedder(model: model, tokenizer: tokenizer)
        head = try embedder.sparseHead()
    }

    /// Vectors in input order, and which inputs were cut to the maximum length.
    public struct Embeddings: Sendable {
        public let vectors: [SparseVector]
        public let truncated: [Int]
    }

    /// One sparse vector per text, in input order; texts longer than `maxLength` tokens (nil: the
    /// model's max_seq_length) are truncated.
    public func embed(_ texts: [String], maxLength: Int? = nil, batchSize: Int = 32) throws -> Embeddings {
        let (vectors, truncated) = try embedder.run(texts, options: .init(maxLength: maxLength, batchSize: batchSize, prompt: ""), head: head)
        return Embeddings(vectors: vectors, truncated: truncated)
    }
}
