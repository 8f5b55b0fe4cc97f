import Foundation

/// Text in, sentence vectors out: tokenizer, encoder and pooling, as sentence-transformers does it.
public final class SentenceEmbedder: @unchecked Sendable {
    public let model: BertModel
    public let tokenizer: BertTokenizer

    public struct Options: Sendable {
        /// nil: the model's own pooling (from its sentence-transformers files).
        public var pooling: Pooling?
        public var normalize: Bool
        /// Tokens per input, [CLS] and [SEP] included; nil: the model's max_seq_length.
        public var maxLength: Int?
        /// Sequences per forward pass; bounds memory, not results.
        public var batchSize: Int
        public init(pooling: Pooling? = nil, normalize: Bool = true, maxLength: Int? = nil, batchSize: Int = 32) {
            self.pooling = pooling; self.normalize = normalize; self.maxLength = maxLength; self.batchSize = batchSize
        }
    }

    /// Vectors in input order, and which inputs were cut to the maximum length.
    public struct Embeddings: Sendable {
        public let vectors: [[Float]]
        public let truncated: [Int]
    }

    public init(model: BertModel, tokenizer: BertTokenizer) {
        self.model = model
        self.tokenizer = tokenizer
    }

    /// Loads a converted model folder (see `ModelLocator.resolve` for names).
    public convenience init(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws {
        let model = try BertModel(folder: folder, threads: threads, precision: precision)
        self.init(model: model, tokenizer: try BertTokenizer.load(folder: folder))
    }

    public func embed(_ text: String, options: Options = Options()) throws -> [Float] {
        try embed([text], options: options).vectors[0]
    }

    public func embed(_ texts: [String], options: Options = Options()) throws -> Embeddings {
        let limit = try maxLength(options.maxLength)
        let encodings = texts.map { tokenizer.encode($0, maxLength: limit) }
        var vectors = [[Float]](repeating: [], count: texts.count)
        // Similar lengths together keep each pass's attention work balanced across threads.
        let order = encodings.indices.sorted { encodings[$0].ids.count < encodings[$1].ids.count }
        for start in stride(from: 0, to: order.count, by: max(1, options.batchSize)) {
            let chunk = Array(order[start..<min(start + max(1, options.batchSize), order.count)])
            let output = try model.encode(chunk.map { encodings[$0].ids }, typeIds: chunk.map { encodings[$0].typeIds })
            for (vector, index) in zip(model.pool(output, pooling: options.pooling, normalize: options.normalize), chunk) {
                vectors[index] = vector
            }
        }
        return Embeddings(vectors: vectors, truncated: encodings.indices.filter { encodings[$0].wasTruncated })
    }

    func maxLength(_ requested: Int?) throws -> Int {
        let limit = model.config.maxSequenceLength
        guard let requested else { return limit }
        guard requested >= 2 else { throw BertError.invalidInput(reason: "max length \(requested) leaves no room for [CLS] and [SEP]; use 2 or more") }
        return min(requested, model.config.maxPositionEmbeddings)
    }
}

/// Cosine similarity of two vectors (the dot product when both are L2-normalised).
public func cosineSimilarity(_ a: [Float], _ b: [Float]) -> Float {
    var dot: Float = 0, na: Float = 0, nb: Float = 0
    for i in 0..<min(a.count, b.count) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i] }
    let norm = (na * nb).squareRoot()
    return norm > 0 ? dot / norm : 0
}
