import Foundation

/// A label and its probability.
public struct LabelScore: Sendable, Equatable {
    public let label: String
    public let score: Float
}

/// Texts (or text pairs) in, labels out: a *ForSequenceClassification checkpoint, scored as
/// Hugging Face's text-classification pipeline does (softmax; sigmoid for
/// multi_label_classification or a single label).
public final class TextClassifier: ModelPipeline, @unchecked Sendable {
    /// The encoder, loaded from the model folder.
    public let model: any EncoderModel
    /// The model's tokenizer, from its tokenizer.json (or vocab.txt).
    public let tokenizer: Tokenizer
    public let head: SequenceClassificationHead
    /// Class names in id order.
    public let labels: [String]

    public init(model: any EncoderModel, tokenizer: Tokenizer) throws {
        head = try SequenceClassificationHead(model)
        labels = head.labels
        (self.model, self.tokenizer) = (model, tokenizer)
    }

    /// Sigmoid per label (multi-label, or a single score), else softmax across labels.
    public var usesSigmoid: Bool { model.config.heads.task?.problemType == "multi_label_classification" || labels.count == 1 }

    /// Raw classifier outputs, one row per input; `pairs` gives each text its second segment.
    /// Inputs longer than the model's limit are cut or refused as `truncation` says.
    public func logits(_ texts: [String], pairs: [String]? = nil, batchSize: Int = 32, truncation: Truncation = Truncation()) throws -> [[Float]] {
        if let pairs, pairs.count != texts.count {
            throw SwiftBERTError.invalidInput(reason: "\(texts.count) texts but \(pairs.count) pair texts")
        }
        let encodings = try tokenizer.encode(texts, pairs: pairs, limit: model.config.encoder.maxSequenceLength, truncation: truncation)
        var rows = [[Float]](repeating: [], count: texts.count)
        for start in stride(from: 0, to: encodings.count, by: max(1, batchSize)) {
            let chunk = Array(start..<min(start + max(1, batchSize), encodings.count))
            let batch = HeadBatch(threads: model.threads)
            let output = try model.encode(chunk.map { encodings[$0].ids }, typeIds: chunk.map { encodings[$0].typeIds }, profile: nil,
                                          reading: Array(repeating: head.rowsRead(batch), count: chunk.count))
            for (row, index) in zip(head(output, batch), chunk) { rows[index] = row }
        }
        return rows
    }

    /// Probabilities of each label, best first; `topK` nil gives every label (the HF pipeline with top_k=None).
    public func classify(_ texts: [String], topK: Int? = nil, batchSize: Int = 32, truncation: Truncation = Truncation()) throws -> [[LabelScore]] {
        try logits(texts, batchSize: batchSize, truncation: truncation).map { scores($0, topK: topK) }
    }

    /// Labels with their probabilities (softmax, or sigmoid as `usesSigmoid` says), best first.
    public func scores(_ logits: [Float], topK: Int? = nil) -> [LabelScore] {
        let probabilities = usesSigmoid ? logits.map(sigmoid) : softmax(logits)
        let ranked = bestFirst(probabilities)
        return ranked.prefix(topK ?? ranked.count).map { LabelScore(label: labels[$0], score: probabilities[$0]) }
    }
}

/// A query and documents in, documents by relevance out: a cross-encoder (a sequence
/// classifier with one label, fed query/document pairs with token types 0/1), scored as
/// sentence-transformers' CrossEncoder does (sigmoid of the logit).
public final class Reranker: @unchecked Sendable {
    public let classifier: TextClassifier

    /// One document's score and its place in the input.
    public struct Result: Sendable, Equatable {
        /// Position of the document in the input.
        public let index: Int
        public let score: Float
        public let text: String
    }

    public init(classifier: TextClassifier) throws {
        guard classifier.labels.count == 1 else {
            throw SwiftBERTError.invalidInput(reason: "\(classifier.model.folder.lastPathComponent) has \(classifier.labels.count) labels; a cross-encoder for reranking has one (use `bert classify` for this model)")
        }
        self.classifier = classifier
    }

    public convenience init(_ model: LoadedModel) throws {
        try self.init(classifier: TextClassifier(model))
    }

    public convenience init(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws {
        try self.init(classifier: TextClassifier(folder: folder, threads: threads, precision: precision))
    }

    /// Relevance of each document to the query, in input order.
    public func scores(query: String, documents: [String], batchSize: Int = 32) throws -> [Float] {
        guard !documents.isEmpty else { return [] }
        return try classifier.logits([String](repeating: query, count: documents.count), pairs: documents, batchSize: batchSize)
            .map { sigmoid($0[0]) }
    }

    /// Documents best first (ties keep input order); `topK` nil keeps all.
    public func rerank(query: String, documents: [String], topK: Int? = nil, batchSize: Int = 32) throws -> [Result] {
        let scores = try scores(query: query, documents: documents, batchSize: batchSize)
        let order = bestFirst(scores)
        return order.prefix(topK ?? order.count).map { Result(index: $0, score: scores[$0], text: documents[$0]) }
    }
}
