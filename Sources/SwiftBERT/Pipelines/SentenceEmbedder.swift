import Foundation

/// What a text is to an embedding model: a query, a document searched for it, or a text to
/// classify or to cluster. Models such as EmbeddingGemma and Qwen3-Embedding prompt each
/// differently.
public enum TextRole: String, Sendable, CaseIterable {
    case query, document, classification, clustering

    /// The names of the model prompt a text in this role takes, in order of preference: the
    /// role's own name; for the two task roles also as MTEB capitalises it (EmbeddingGemma's
    /// "Classification"). Query and document take exactly "query" and "document", as
    /// sentence-transformers' `encode_query` and `encode_document` do.
    public var promptNames: [String] {
        switch self {
        case .query, .document: [rawValue]
        case .classification, .clustering: [rawValue, rawValue.prefix(1).uppercased() + rawValue.dropFirst()]
        }
    }

    /// The prompt among `prompts` a text in this role takes: the first of `promptNames` there,
    /// nil for none (then no prompt at all, not the model's default one).
    public func promptName(among prompts: [String: String]) -> String? {
        promptNames.first { prompts[$0] != nil }
    }
}

/// Text in, sentence vectors out: tokenizer, encoder, then sentence-transformers' modules
/// (Pooling, Dense, Normalize) as the model's folder lists them, with its prompts.
public final class SentenceEmbedder: ModelPipeline, @unchecked Sendable {
    /// The encoder, loaded from the model folder.
    public let model: any EncoderModel
    /// The model's tokenizer, from its tokenizer.json (or vocab.txt).
    public let tokenizer: Tokenizer

    /// How texts are embedded; every field defaults to what the model folder says.
    public struct Options: Sendable {
        /// nil: the model's own pooling (from its sentence-transformers files).
        public var pooling: Pooling?
        /// nil: as the model's folder says (its Normalize module; true for folders without modules.json).
        public var normalize: Bool?
        /// Tokens per input, [CLS] and [SEP] included; nil: the model's max_seq_length.
        public var maxLength: Int?
        /// Sequences per forward pass; bounds memory, not results.
        public var batchSize: Int
        /// One of the model's prompts by name (config_sentence_transformers.json), put before every text.
        public var promptName: String?
        /// A prompt given as text; wins over `promptName`. "" means no prompt, not even the default one.
        public var prompt: String?
        /// TEI's `truncate`: false refuses a text longer than the limit (a typed error naming
        /// it) instead of cutting it.
        public var truncates: Bool
        /// TEI's `truncation_direction` "Left": a long text loses its start, not its end.
        public var truncatesLeft: Bool
        /// Matryoshka: the first `dimensions` values of each vector, normalised again when the
        /// vectors are (`SentenceHead.dimensions`); nil: the model's whole dimension.
        public var dimensions: Int?
        public init(pooling: Pooling? = nil, normalize: Bool? = nil, maxLength: Int? = nil, batchSize: Int = 32,
                    promptName: String? = nil, prompt: String? = nil, truncates: Bool = true, truncatesLeft: Bool = false,
                    dimensions: Int? = nil) {
            self.pooling = pooling; self.normalize = normalize; self.maxLength = maxLength; self.batchSize = batchSize
            self.promptName = promptName; self.prompt = prompt; self.truncates = truncates; self.truncatesLeft = truncatesLeft
            self.dimensions = dimensions
        }
    }

    /// Vectors in input order, and which inputs were cut to the maximum length.
    public struct Embeddings: Sendable {
        /// One vector per input text, in input order.
        public let vectors: [[Float]]
        /// Indices of the inputs that were cut to the maximum length.
        public let truncated: [Int]
    }

    /// sentence-transformers' Pooling, Dense and Normalize modules, as the model folder says.
    public let head: SentenceHead

    /// The checkpoint's sparse head (SPLADE or BGE-M3's lexical weights); nil: it has none.
    public let sparse: SparseHead?
    /// The checkpoint's ColBERT head (BGE-M3); nil: it has none.
    public let multiVector: MultiVectorHead?

    public init(model: any EncoderModel, tokenizer: Tokenizer) throws {
        self.model = model
        self.tokenizer = tokenizer
        head = try SentenceHead(model)
        sparse = model.heads.contains(.sparseEmbedding) ? try SparseHead(model, tokenizer: tokenizer) : nil
        multiVector = model.heads.contains(.multiVector) ? try MultiVectorHead(model) : nil
    }

    /// `options` for texts in `role`, as sentence-transformers' `encode_query` and
    /// `encode_document` choose their prompt: where the options name none, the model's prompt of
    /// the role's name (`TextRole.promptNames`), else no prompt at all, not the model's default.
    /// EmbeddingGemma and Qwen3-Embedding retrieve with these prompts; a model without them
    /// embeds as it would without a role.
    public func options(_ options: Options, as role: TextRole) -> Options {
        guard options.promptName == nil, options.prompt == nil else { return options }
        var options = options
        let prompts = model.config.heads.sentence.prompts ?? [:]
        if let name = role.promptName(among: prompts) { options.promptName = name } else { options.prompt = "" }
        return options
    }

    /// The prompt the options select, as sentence-transformers picks it: `prompt`, else the
    /// prompt named `promptName`, else the model's default prompt; nil for none.
    public func prompt(for options: Options) throws -> String? {
        if let prompt = options.prompt { return prompt.isEmpty ? nil : prompt }
        let prompts = model.config.heads.sentence.prompts ?? [:]
        if let name = options.promptName {
            guard let text = prompts[name] else {
                let known = prompts.keys.sorted().joined(separator: ", ")
                throw SwiftBERTError.invalidInput(reason: prompts.isEmpty
                    ? "prompt name '\(printable(name))': \(model.folder.lastPathComponent) has no prompts; give the prompt's text instead (bert embed --prompt TEXT; over HTTP, put it before each input)"
                    : "prompt name '\(printable(name))' is not one of \(model.folder.lastPathComponent)'s prompts (\(known))")
            }
            return text
        }
        return model.config.heads.sentence.defaultPromptName.flatMap { prompts[$0] }
    }

    public func embed(_ text: String, options: Options = Options()) throws -> [Float] {
        try embed([text], options: options).vectors[0]
    }

    public func embed(_ texts: [String], options: Options = Options()) throws -> Embeddings {
        let (vectors, truncated) = try run(texts, options: options, head: head(for: options))
        return Embeddings(vectors: vectors, truncated: truncated)
    }

    /// Dense, sparse and multi-vector outputs (`outputs`), all from one forward pass per batch;
    /// the dense vector as `embed` gives it. Throws when the model lacks a head asked for.
    public func embed(_ texts: [String], outputs: RetrievalOutputs, options: Options = Options()) throws -> RetrievalEmbeddings {
        let head = RetrievalHead(dense: head(for: options), sparse: try outputs.contains(.sparse) ? sparseHead() : nil,
                                 multiVector: try outputs.contains(.multiVector) ? multiVectorHead() : nil, outputs: outputs)
        let (embeddings, truncated) = try run(texts, options: options, head: head)
        return RetrievalEmbeddings(embeddings: embeddings, truncated: truncated)
    }

    /// Every token's last hidden state, text by text in input order, the prompt's tokens and
    /// the special ones included, no padding: sentence-transformers' `encode(output_value=
    /// "token_embeddings")` and TEI's /embed_all. `options.normalize` true L2-normalises each
    /// token's vector; pooling and the Dense modules do not apply.
    public func tokenEmbeddings(_ texts: [String], options: Options = Options()) throws -> [[[Float]]] {
        try run(texts, options: options, head: TokenEmbeddingsHead(normalize: options.normalize ?? false)).0
    }

    /// `RetrievalHead`'s outputs in input order, and which inputs were cut to the maximum length.
    public struct RetrievalEmbeddings: Sendable {
        public let embeddings: [RetrievalEmbedding]
        public let truncated: [Int]
    }

    /// The model's sparse head (SPLADE or BGE-M3's lexical weights); throws, saying what to
    /// use, for a model without one.
    public func sparseHead() throws -> SparseHead {
        if let sparse { return sparse }
        return try SparseHead(model, tokenizer: tokenizer)  // throws the error that names the remedy
    }

    /// The model's ColBERT head (BGE-M3); throws, saying what to use, for a model without one.
    public func multiVectorHead() throws -> MultiVectorHead {
        if let multiVector { return multiVector }
        return try MultiVectorHead(model)
    }

    /// Texts through the encoder a batch at a time, then `head`: one output per text, in input
    /// order, and the indices of the texts cut to the maximum length.
    func run<H: Head>(_ texts: [String], options: Options, head: H) throws -> ([H.Output], truncated: [Int]) {
        let limit = try maxLength(options.maxLength)
        if let dimensions = options.dimensions {
            try checkDimensions(dimensions)
        }
        let prompt = try prompt(for: options)
        // sentence-transformers puts the prompt before the text, then tokenizes and truncates
        // the whole; the prompt's length counts [CLS] and its tokens (not [SEP]). A cut from the
        // left (which sentence-transformers does not make) takes the text's start, not the prompt.
        let promptLength = self.promptLength(prompt, maxLength: limit)
        let encodings = try tokenizer.encode(texts.map { (prompt ?? "") + $0 }, limit: limit,
                                             truncation: Truncation(truncates: options.truncates, fromLeft: options.truncatesLeft),
                                             keepingStart: prompt?.unicodeScalars.count ?? 0)
        var outputs = [H.Output?](repeating: nil, count: texts.count)
        // Similar lengths together keep each pass's attention work balanced across threads.
        let order = encodings.indices.sorted { encodings[$0].ids.count < encodings[$1].ids.count }
        for start in stride(from: 0, to: order.count, by: max(1, options.batchSize)) {
            let chunk = Array(order[start..<min(start + max(1, options.batchSize), order.count)])
            let batch = HeadBatch(threads: model.threads, promptLength: promptLength)
            let output = try model.encode(chunk.map { encodings[$0].ids }, typeIds: chunk.map { encodings[$0].typeIds }, profile: nil,
                                          reading: Array(repeating: head.rowsRead(batch), count: chunk.count))
            let results = try head(output, batch)
            for (result, index) in zip(results, chunk) { outputs[index] = result }
        }
        return (outputs.map { $0! }, encodings.indices.filter { encodings[$0].wasTruncated })
    }

    /// A Matryoshka cut keeps at least one value and at most the model's dimension.
    public func checkDimensions(_ dimensions: Int) throws {
        let dimension = model.config.embeddingDimension
        guard (1...dimension).contains(dimensions) else {
            throw SwiftBERTError.invalidInput(reason: "dimensions must be between 1 and \(dimension), the model's dimension; got \(dimensions)")
        }
    }

    /// Tokens `prompt` takes at the start of a framed text, [CLS] included, not [SEP] (what
    /// include_prompt false leaves out of the pooling); 0 for no prompt.
    public func promptLength(_ prompt: String?, maxLength: Int) -> Int {
        prompt.map { tokenizer.encode($0, maxLength: maxLength).ids.count - 1 } ?? 0
    }

    /// The model's sentence head with the options' pooling and normalisation.
    public func head(for options: Options) -> SentenceHead {
        var head = self.head
        if let pooling = options.pooling { head.pooling = pooling }
        if let normalize = options.normalize { head.normalize = normalize }
        head.dimensions = options.dimensions
        return head
    }

    func maxLength(_ requested: Int?) throws -> Int {
        let limit = model.config.encoder.maxSequenceLength
        guard let requested else { return limit }
        guard requested >= 2 else { throw SwiftBERTError.invalidInput(reason: "max length \(requested) leaves no room for [CLS] and [SEP]; use 2 or more") }
        return min(requested, model.config.encoder.positionLimit)
    }
}

/// Cosine similarity of two vectors (the dot product when both are L2-normalised).
public func cosineSimilarity(_ a: [Float], _ b: [Float]) -> Float {
    var dot: Float = 0, na: Float = 0, nb: Float = 0
    for i in 0..<min(a.count, b.count) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i] }
    let norm = (na * nb).squareRoot()
    return norm > 0 ? dot / norm : 0
}
