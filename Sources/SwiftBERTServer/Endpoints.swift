#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// The API itself, independent of the HTTP framework: a request body in, a JSON body out, or an
/// APIError. Every forward pass goes through the model's one Batcher, whatever the route; the
/// CPU work of a request (decoding, tokenising, writing JSON) runs on `work`, never on the
/// threads that serve connections, so /health answers while long requests are tokenised.
struct Endpoints: Sendable {
    let registry: ModelRegistry
    let configuration: ServerConfiguration
    let metrics: ServerMetrics

    static let version = swiftBERTVersion

    /// Threads for requests' CPU work, apart from Swift's cooperative pool (one thread per core,
    /// which the HTTP handlers need free). Serial queues, because libdispatch gives them threads
    /// of their own (overcommit) even when every core is busy; a concurrent queue shares the
    /// cores' threads with the cooperative pool, and two long requests stalled /health.
    private static let work = (0..<max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)).map {
        DispatchQueue(label: "bert-serve-requests-\($0)")
    }
    private static let nextQueue = RoundRobin()

    /// Runs `body` on one of the `work` queues and returns its result.
    private func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let queue = Self.work[Self.nextQueue.next() % Self.work.count]
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    private func models() throws -> [ServedModel] {
        guard let models = registry.models else {
            throw APIError.overloaded("the models are still loading; retry when GET /health answers 200")
        }
        return models
    }

    /// The model a request names (its name, an alias, or a Hugging Face id ending in either);
    /// nil picks the first model given to `bert serve`.
    private func model(_ name: String?) throws -> ServedModel {
        let models = try models()
        guard let name else { return models[0] }
        if let model = models.first(where: { $0.answers(to: name) }) { return model }
        throw APIError.unknownModel(name, available: models.map(\.name))
    }

    // MARK: - Tokens

    /// TEI's truncation_direction: "Right" (default) cuts the end of a long text, "Left" its start.
    private func truncatesLeft(_ direction: String?) throws -> Bool {
        switch direction?.lowercased() {
        case nil, "right": return false
        case "left": return true
        case _?:
            throw APIError.invalid("truncation_direction must be \"Left\" or \"Right\"; got \"\(direction ?? "")\"", param: "truncation_direction")
        }
    }

    private func checkCount(_ count: Int, param: String = "inputs") throws {
        guard count > 0 else { throw APIError.invalid("the input is empty; send at least one text", param: param) }
        guard count <= configuration.maxInputs else {
            throw APIError.invalid("\(count) inputs in one request; at most \(configuration.maxInputs) are allowed (--max-inputs)", param: param, status: 413)
        }
    }

    private func tooLong(_ index: Int, _ count: Int, _ limit: Int, param: String) -> APIError {
        APIError.invalid("input \(index) is \(count) tokens long, over the model's limit of \(limit); shorten it or send \"truncate\": true", param: param, status: 413)
    }

    /// Token ids of each text (or text pair), cut to the model's limit when `truncate`, else
    /// refused (413) when too long.
    private func encode(_ texts: [(text: String, pair: String?)], model: ServedModel, truncate: Bool, fromLeft: Bool = false,
                        prompt: String? = nil, param: String = "inputs") throws -> [Encoding] {
        try checkCount(texts.count, param: param)
        let limit = model.maxLength
        return try texts.enumerated().map { index, item in
            let encoding = model.tokenizer.encode((prompt ?? "") + item.text, pair: item.pair, maxLength: truncate ? limit : nil,
                                                  truncatesLeft: fromLeft)
            guard encoding.count <= limit else { throw tooLong(index, encoding.count, limit, param: param) }
            return encoding
        }
    }

    /// Token-id lists as given: this model's ids, checked against its vocabulary.
    private func checkedIds(_ lists: [[Int]], model: ServedModel, truncate: Bool, fromLeft: Bool, param: String) throws -> [[Int32]] {
        try checkCount(lists.count, param: param)
        let vocabulary = model.tokenizer.vocabularySize, limit = model.maxLength
        return try lists.enumerated().map { index, ids in
            guard !ids.isEmpty else { throw APIError.invalid("input \(index) is an empty list of token ids", param: param) }
            if let bad = ids.first(where: { $0 < 0 || $0 >= vocabulary }) {
                throw APIError.invalid("input \(index) holds token id \(bad), outside the model's vocabulary of \(vocabulary); ids come from POST /tokenize", param: param)
            }
            var sequence = ids.map { Int32($0) }
            if sequence.count > limit {
                guard truncate else { throw tooLong(index, sequence.count, limit, param: param) }
                // Keep the framing tokens ([CLS] … [SEP]) when the tokenizer put them there.
                let first = sequence[0], last = sequence[sequence.count - 1]
                sequence = fromLeft ? Array(sequence.suffix(limit)) : Array(sequence.prefix(limit))
                if fromLeft, first == model.tokenizer.clsId { sequence[0] = first }
                if !fromLeft, last == model.tokenizer.sepId { sequence[limit - 1] = last }
            }
            return sequence
        }
    }

    /// The prompt a request selects by name, as sentence-transformers does; nil: the model's default.
    private func prompt(_ name: String?, model: ServedModel) throws -> String? {
        do {
            return try model.embedder.prompt(for: .init(promptName: name))
        } catch let BertError.invalidInput(reason) {
            throw APIError.invalid(reason, param: "prompt_name")
        }
    }

    /// Tokens of `prompt` at the start of a framed text, [CLS] included (what include_prompt false leaves out).
    private func promptLength(_ prompt: String?, model: ServedModel) -> Int {
        model.embedder.promptLength(prompt, maxLength: model.maxLength)
    }

    // MARK: - The batcher

    /// `head` over `sequences` through the model's batcher, its failures as API errors.
    private func run<H: Head>(_ sequences: [[Int32]], typeIds: [[Int32]]? = nil, head: H, promptLength: Int = 0,
                              on model: ServedModel) async throws -> [H.Output] {
        do {
            return try await model.batcher.run(sequences, typeIds: typeIds, head: head,
                                               batch: HeadBatch(threads: model.loaded.encoder.threads, promptLength: promptLength),
                                               timeout: configuration.requestTimeout)
        } catch {
            throw mapFailure(error, model: model)
        }
    }

    private func mapFailure(_ error: Error, model: ServedModel) -> Error {
        switch error {
        case let Batcher.Failure.queueFull(capacity):
            metrics.rejected(model: model.name)
            return APIError.overloaded("the queue of \(model.name) is full (\(capacity) sequences waiting); the request was not processed; retry after a moment")
        case let Batcher.Failure.largerThanQueue(sequences, capacity):
            return APIError.invalid("the request has \(sequences) inputs, more than the \(capacity) the queue of \(model.name) can ever hold (--queue-capacity); send at most \(capacity) per request", status: 413)
        case Batcher.Failure.stopped:
            return APIError.overloaded("the server is shutting down; the request was not processed")
        case let timeout as RequestTimeout:
            return APIError.overloaded("the request waited \(timeout.seconds) s for the model and was not processed (--request-timeout); retrying is safe")
        case let BertError.invalidInput(reason):
            return APIError.invalid(reason)
        default:
            return error
        }
    }

    // MARK: - Embeddings

    /// Sentence vectors for token-id sequences: the model's pooling and Dense modules, then the
    /// cut to `dimensions` (Matryoshka) and L2 normalisation when asked.
    private func sentenceVectors(_ sequences: [[Int32]], model: ServedModel, promptLength: Int, dimensions: Int?,
                                 normalize: Bool) async throws -> [[Float]] {
        if let dimensions, dimensions < 1 || dimensions > model.dimension {
            throw APIError.invalid("dimensions must be between 1 and \(model.dimension), the model's dimension; got \(dimensions)", param: "dimensions")
        }
        var head = model.embedder.head
        head.normalize = false  // after the cut
        var vectors = try await run(sequences, head: head, promptLength: promptLength, on: model)
        for i in vectors.indices {
            if let dimensions { vectors[i] = Array(vectors[i].prefix(dimensions)) }
            if normalize { l2Normalize(&vectors[i]) }
        }
        return vectors
    }

    /// POST /v1/embeddings (OpenAI).
    func openAIEmbeddings(_ body: [UInt8]) async throws -> [UInt8] {
        let (request, model, sequences, promptLength) = try await offload { [self] () throws -> (OpenAIEmbeddingRequest, ServedModel, [[Int32]], Int) in
            let request = try decodeBody(OpenAIEmbeddingRequest.self, from: body)
            let model = try self.model(request.model)
            let sequences: [[Int32]]
            var prompt: String?
            switch request.input {
            case let .texts(texts):
                // The model's default prompt, as `bert embed` puts it (OpenAI's API names none).
                prompt = try self.prompt(nil, model: model)
                sequences = try encode(texts.map { ($0, nil) }, model: model, truncate: request.truncate ?? true, prompt: prompt, param: "input").map(\.ids)
            case let .tokenIDs(lists):
                guard configuration.acceptsTokenIds else { throw refusedTokenIds() }
                sequences = try checkedIds(lists, model: model, truncate: request.truncate ?? true, fromLeft: false, param: "input")
            }
            return (request, model, sequences, self.promptLength(prompt, model: model))
        }
        let base64: Bool
        switch request.encoding_format ?? "float" {
        case "float": base64 = false
        case "base64": base64 = true
        case let other: throw APIError.invalid("encoding_format must be \"float\" or \"base64\"; got \"\(other)\"", param: "encoding_format")
        }
        let vectors = try await sentenceVectors(sequences, model: model, promptLength: promptLength, dimensions: request.dimensions, normalize: true)
        let tokens = sequences.reduce(0) { $0 + $1.count }
        return try await offload {
            let json = JSONWriter(capacity: vectors.count * (base64 ? model.dimension * 6 : model.dimension * 13) + 256)
            json.object {
                json.key("object"); json.string("list")
                json.key("data")
                json.array {
                    for (index, vector) in vectors.enumerated() {
                        json.object {
                            json.key("object"); json.string("embedding")
                            json.key("index"); json.number(index)
                            json.key("embedding")
                            if base64 { json.string(base64LittleEndian(vector)) } else { json.floats(vector) }
                        }
                    }
                }
                json.key("model"); json.string(model.name)
                json.key("usage")
                json.object {
                    json.key("prompt_tokens"); json.number(tokens)
                    json.key("total_tokens"); json.number(tokens)
                }
            }
            return json.bytes
        }
    }

    /// Token ids on the OpenAI route are a client's tokens for OpenAI's models (tiktoken), not
    /// this model's: embedding them would answer 200 with vectors of noise.
    private func refusedTokenIds() -> APIError {
        APIError.invalid("input holds token ids, and this server takes text: OpenAI clients tokenise with tiktoken, whose ids are not this model's, and would get wrong vectors. Send the text itself. LangChain's OpenAIEmbeddings sends token ids by default: create it with check_embedding_ctx_length=False. If your ids come from this model's own tokenizer (POST /tokenize), start the server with --accept-token-ids.",
                         param: "input", status: 400)
    }

    /// POST /embed (TEI): [[Float]]. Token-id inputs are this model's ids (TEI's semantics).
    func teiEmbed(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(TEIEmbedRequest.self, from: body) }
        if request.chunks { return try await teiEmbedChunks(request) }
        let (model, sequences, promptLength) = try await offload { [self] () throws -> (ServedModel, [[Int32]], Int) in
            let model = try self.model(request.model)
            let fromLeft = try truncatesLeft(request.truncation_direction)
            let truncate = request.truncate ?? false
            switch request.inputs {
            case let .texts(texts):
                let prompt = try prompt(request.prompt_name, model: model)
                let sequences = try encode(texts.map { ($0, nil) }, model: model, truncate: truncate, fromLeft: fromLeft, prompt: prompt).map(\.ids)
                return (model, sequences, self.promptLength(prompt, model: model))
            case let .tokenIDs(lists):
                return (model, try checkedIds(lists, model: model, truncate: truncate, fromLeft: fromLeft, param: "inputs"), 0)
            }
        }
        let vectors = try await sentenceVectors(sequences, model: model, promptLength: promptLength, dimensions: request.dimensions,
                                                normalize: request.normalize ?? true)
        return try await offload { jsonFloatRows(vectors, width: model.dimension) }
    }

    /// POST /embed with "chunk" (not in TEI): each text cut by TextChunker, every chunk embedded;
    /// per text, a list of {"start", "end", "tokens", "embedding"}, or ("chunk_pooling": "mean")
    /// the mean of its chunk vectors in /embed's usual shape. No chunk is ever truncated.
    private func teiEmbedChunks(_ request: TEIEmbedRequest) async throws -> [UInt8] {
        let (model, chunks, promptLength, pooling, textCount) = try await offload { [self] () throws -> (ServedModel, [TextChunk], Int, ChunkPooling, Int) in
            let model = try self.model(request.model)
            guard let size = request.chunk else {
                throw APIError.invalid("overlap and chunk_pooling need \"chunk\": the chunk size in tokens", param: "chunk")
            }
            guard case let .texts(texts) = request.inputs else {
                throw APIError.invalid("chunk cuts texts, and inputs holds token ids: send the texts", param: "inputs")
            }
            try checkCount(texts.count)
            _ = try truncatesLeft(request.truncation_direction)  // checked, though no chunk is cut
            guard let pooling = ChunkPooling(rawValue: request.chunk_pooling ?? "none") else {
                throw APIError.invalid("chunk_pooling must be \"none\" or \"mean\"; got \"\(request.chunk_pooling ?? "")\"", param: "chunk_pooling")
            }
            let prompt = try prompt(request.prompt_name, model: model)
            do {
                let chunker = try TextChunker(tokenizer: model.tokenizer, maxTokens: size, overlap: request.overlap ?? 0, prompt: prompt,
                                              modelLimit: model.maxLength)
                return (model, try chunker.chunks(of: texts), self.promptLength(prompt, model: model), pooling, texts.count)
            } catch let BertError.invalidInput(reason) {
                throw APIError.invalid(reason, param: "chunk")
            }
        }
        let normalize = request.normalize ?? true
        let vectors = try await sentenceVectors(chunks.map(\.ids), model: model, promptLength: promptLength, dimensions: request.dimensions,
                                                normalize: normalize)
        let width = request.dimensions ?? model.dimension
        return try await offload {
            if pooling == .mean {
                return jsonFloatRows(TextChunker.meanVectors(vectors, of: chunks, textCount: textCount, normalize: normalize), width: width)
            }
            let json = JSONWriter(capacity: chunks.count * (width * 13 + 64) + 16)
            var next = 0
            json.array {
                for text in 0..<textCount {
                    json.array {
                        while next < chunks.count, chunks[next].textIndex == text {
                            json.object {
                                json.key("start"); json.number(chunks[next].start)
                                json.key("end"); json.number(chunks[next].end)
                                json.key("tokens"); json.number(chunks[next].tokenCount)
                                json.key("embedding"); json.floats(vectors[next])
                            }
                            next += 1
                        }
                    }
                }
            }
            return json.bytes
        }
    }

    /// Texts of a /embed_sparse or /embed_all request, tokenised.
    private func tokenRequest(_ body: [UInt8]) async throws -> (ServedModel, [[Int32]]) {
        let (_, model, sequences, _) = try await textRequest(TEITokenRequest.self, body)
        return (model, sequences)
    }

    /// A request of a text route, decoded, with its texts tokenised and its prompt's length.
    private func textRequest<Request: TextRouteRequest>(_ type: Request.Type, _ body: [UInt8]) async throws
        -> (Request, ServedModel, [[Int32]], promptLength: Int) {
        try await offload { [self] in
            let request = try decodeBody(Request.self, from: body)
            let model = try self.model(request.model)
            let prompt = try prompt(request.prompt_name, model: model)
            let encodings = try encode(request.inputs.texts.map { ($0, nil) }, model: model, truncate: request.truncate ?? false,
                                       fromLeft: try truncatesLeft(request.truncation_direction), prompt: prompt)
            return (request, model, encodings.map(\.ids), self.promptLength(prompt, model: model))
        }
    }

    /// POST /embed_sparse (TEI): [[{"index", "value"}]], lexical weights over the vocabulary
    /// (SPLADE, or BGE-M3's sparse head).
    func embedSparse(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences) = try await tokenRequest(body)
        let vectors = try await run(sequences, head: try sparseHead(model), on: model)
        return try await offload {
            let json = JSONWriter(capacity: vectors.reduce(0) { $0 + $1.indices.count * 32 } + 16)
            json.array { for vector in vectors { json.sparse(vector) } }
            return json.bytes
        }
    }

    /// POST /embed_multi_vector: [[[Float]]], BGE-M3's ColBERT vectors, one per token after [CLS].
    func embedMultiVector(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences) = try await tokenRequest(body)
        let vectors = try await run(sequences, head: try multiVectorHead(model), on: model)
        return try await offload {
            let json = JSONWriter(capacity: vectors.reduce(0) { $0 + $1.count } * (model.multiVector?.dimension ?? 0) * 13 + 16)
            json.array { for text in vectors { json.array { for vector in text { json.floats(vector) } } } }
            return json.bytes
        }
    }

    /// POST /embed_outputs: the dense, sparse and multi-vector outputs a request names, all from
    /// one forward pass: [{"dense": [...], "sparse": [{"index", "value"}], "multi_vector": [[...]]}].
    func embedOutputs(_ body: [UInt8]) async throws -> [UInt8] {
        let (request, model, sequences, promptLength) = try await textRequest(OutputsRequest.self, body)
        var outputs: RetrievalOutputs = []
        for name in request.outputs {
            switch name {
            case "dense": outputs.insert(.dense)
            case "sparse": outputs.insert(.sparse)
            case "multi_vector": outputs.insert(.multiVector)
            default: throw APIError.invalid("outputs: '\(printable(name))' is not one of dense, sparse, multi_vector", param: "outputs")
            }
        }
        guard !outputs.isEmpty else { throw APIError.invalid("outputs is empty; name one or more of dense, sparse, multi_vector", param: "outputs") }
        var dense = model.embedder.head
        dense.normalize = request.normalize ?? dense.normalize
        let head = RetrievalHead(dense: dense, sparse: outputs.contains(.sparse) ? try sparseHead(model) : nil,
                                 multiVector: outputs.contains(.multiVector) ? try multiVectorHead(model) : nil, outputs: outputs)
        let results = try await run(sequences, head: head, promptLength: promptLength, on: model)
        return try await offload {
            let json = JSONWriter(capacity: sequences.reduce(0) { $0 + $1.count } * (model.multiVector?.dimension ?? 0) * 13 + results.count * model.dimension * 13 + 16)
            json.array {
                for result in results {
                    json.object {
                        if let vector = result.dense { json.key("dense"); json.floats(vector) }
                        if let vector = result.sparse { json.key("sparse"); json.sparse(vector) }
                        if let vectors = result.multiVector { json.key("multi_vector"); json.array { for v in vectors { json.floats(v) } } }
                    }
                }
            }
            return json.bytes
        }
    }

    /// The model's sparse head, or 422 saying which checkpoint has one.
    private func sparseHead(_ model: ServedModel) throws -> SparseHead {
        guard let sparse = model.sparse else {
            throw APIError.invalid("\(model.name) has no sparse head: sparse output needs a masked-LM (SPLADE) checkpoint such as splade-tiny, or BGE-M3 converted with its sparse_linear.pt", param: "model", status: 422)
        }
        return sparse
    }

    /// The model's ColBERT head, or 422 saying which checkpoint has one.
    private func multiVectorHead(_ model: ServedModel) throws -> MultiVectorHead {
        guard let head = model.multiVector else {
            throw APIError.invalid("\(model.name) has no multi-vector head: it needs BGE-M3 converted with its colbert_linear.pt", param: "model", status: 422)
        }
        return head
    }

    /// POST /embed_all (TEI): [[[Float]]], every token's last hidden state.
    func embedAll(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences) = try await tokenRequest(body)
        let states = try await run(sequences, head: TokenEmbeddingsHead(), on: model)
        return try await offload {
            let json = JSONWriter(capacity: sequences.reduce(0) { $0 + $1.count } * model.config.hiddenSize * 13 + 16)
            json.array { for tokens in states { json.array { for vector in tokens { json.floats(vector) } } } }
            return json.bytes
        }
    }

    /// POST /similarity (TEI): the cosine of the source sentence with each sentence.
    func similarity(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences, promptLength) = try await offload { [self] () throws -> (ServedModel, [[Int32]], Int) in
            let request = try decodeBody(SimilarityRequest.self, from: body)
            let model = try self.model(request.model)
            let prompt = try prompt(request.prompt_name, model: model)
            let texts = [request.inputs.source_sentence] + request.inputs.sentences
            guard !request.inputs.sentences.isEmpty else { throw APIError.invalid("inputs.sentences is empty; send at least one", param: "inputs.sentences") }
            let sequences = try encode(texts.map { ($0, nil) }, model: model, truncate: request.truncate ?? false,
                                       fromLeft: try truncatesLeft(request.truncation_direction), prompt: prompt).map(\.ids)
            return (model, sequences, self.promptLength(prompt, model: model))
        }
        let vectors = try await sentenceVectors(sequences, model: model, promptLength: promptLength, dimensions: nil, normalize: true)
        let json = JSONWriter()
        json.floats(vectors.dropFirst().map { cosineSimilarity(vectors[0], $0) })
        return json.bytes
    }

    // MARK: - Classification and reranking

    private func classifier(of model: ServedModel, route: String) throws -> TextClassifier {
        guard let classifier = model.classifier else {
            throw APIError.invalid("\(model.name) has no sequence-classification head, so it cannot serve \(route); serve a *ForSequenceClassification checkpoint (for /rerank, a cross-encoder)", param: "model", status: 422)
        }
        return classifier
    }

    /// Classifier logits for texts or (text, pair) items, in order.
    private func logits(_ items: [(text: String, pair: String?)], model: ServedModel, classifier: TextClassifier,
                        truncate: Bool, fromLeft: Bool, param: String) async throws -> (rows: [[Float]], tokens: Int) {
        let encodings = try await offload { [self] in
            try encode(items, model: model, truncate: truncate, fromLeft: fromLeft, param: param)
        }
        let rows = try await run(encodings.map(\.ids), typeIds: encodings.map(\.typeIds), head: classifier.head, on: model)
        return (rows, encodings.reduce(0) { $0 + $1.count })
    }

    /// POST /predict (TEI): every label with its score, best first; softmax (or sigmoid for one
    /// label or multi-label models, as `bert classify`) unless raw_scores.
    func predict(_ body: [UInt8]) async throws -> [UInt8] {
        try await predict(body, singleAsBatch: false)
    }

    /// `singleAsBatch`: one input answered as a batch of one, [[…]] (the Hugging Face Inference
    /// API's shape, which huggingface_hub's text_classification reads), not TEI's […].
    private func predict(_ body: [UInt8], singleAsBatch: Bool) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(PredictRequest.self, from: body) }
        let model = try self.model(request.model)
        let classifier = try classifier(of: model, route: "/predict")
        let (rows, _) = try await logits(request.inputs.items, model: model, classifier: classifier, truncate: request.truncate ?? false,
                                         fromLeft: try truncatesLeft(request.truncation_direction), param: "inputs")
        let raw = request.raw_scores ?? false
        let json = JSONWriter()
        func labels(_ logits: [Float]) {
            let ranked = raw ? zip(classifier.labels, logits).sorted { $0.1 > $1.1 }
                             : classifier.scores(logits).map { ($0.label, $0.score) }
            json.array {
                for (label, score) in ranked {
                    json.object { json.key("score"); json.number(score); json.key("label"); json.string(label) }
                }
            }
        }
        if request.inputs.single, !singleAsBatch { labels(rows[0]) } else { json.array { for row in rows { labels(row) } } }
        return json.bytes
    }

    /// Cross-encoder scores of each document against the query, in document order, and the tokens read.
    private func rerankScores(query: String, documents: [String], model: ServedModel, truncate: Bool, fromLeft: Bool,
                              raw: Bool, param: String) async throws -> (scores: [Float], tokens: Int) {
        let classifier = try classifier(of: model, route: "reranking")
        guard model.reranks else {
            throw APIError.invalid("\(model.name) has \(classifier.labels.count) labels; reranking needs a cross-encoder with one (use /predict for this model)", param: "model", status: 422)
        }
        let (rows, tokens) = try await logits(documents.map { (query, $0) }, model: model, classifier: classifier, truncate: truncate,
                                              fromLeft: fromLeft, param: param)
        return (rows.map { raw ? $0[0] : sigmoid($0[0]) }, tokens)
    }

    /// POST /rerank (TEI): [{"index", "score", "text"?}], best first.
    func rerank(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(RerankRequest.self, from: body) }
        let model = try self.model(request.model)
        let (scores, _) = try await rerankScores(query: request.query, documents: request.texts, model: model, truncate: request.truncate ?? false,
                                            fromLeft: try truncatesLeft(request.truncation_direction), raw: request.raw_scores ?? false, param: "texts")
        let json = JSONWriter()
        json.array {
            for index in rankedIndices(scores) {
                json.object {
                    json.key("index"); json.number(index)
                    json.key("score"); json.number(scores[index])
                    if request.return_text ?? false { json.key("text"); json.string(request.texts[index]) }
                }
            }
        }
        return json.bytes
    }

    /// POST /v1/rerank (Cohere, Jina): {"model", "results": [{"index", "relevance_score", "document"?}], "usage"}.
    func cohereRerank(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(CohereRerankRequest.self, from: body) }
        let model = try self.model(request.model)
        if let topN = request.top_n, topN < 1 { throw APIError.invalid("top_n must be at least 1; got \(topN)", param: "top_n") }
        let documents = request.documents.map(\.text)
        let (scores, tokens) = try await rerankScores(query: request.query, documents: documents, model: model, truncate: true,
                                                      fromLeft: false, raw: false, param: "documents")
        let json = JSONWriter()
        json.object {
            json.key("model"); json.string(model.name)
            json.key("results")
            json.array {
                for index in rankedIndices(scores).prefix(request.top_n ?? scores.count) {
                    json.object {
                        json.key("index"); json.number(index)
                        json.key("relevance_score"); json.number(scores[index])
                        if request.return_documents ?? false {
                            json.key("document"); json.object { json.key("text"); json.string(documents[index]) }
                        }
                    }
                }
            }
            json.key("usage"); json.object { json.key("total_tokens"); json.number(tokens) }
        }
        return json.bytes
    }

    /// Indices by score, best first; ties keep input order.
    private func rankedIndices(_ scores: [Float]) -> [Int] {
        scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
    }

    // MARK: - TEI's root

    /// POST / (TEI): what the model is decides the route: a classifier answers as /predict (one
    /// text too as a batch of one, as huggingface_hub expects), or as /rerank when the body has
    /// a "query" and the model is a cross-encoder; any other model embeds, as /embed. The model
    /// is the one the body names in "model", else the first.
    func root(_ body: [UInt8]) async throws -> [UInt8] {
        struct Probe: Decodable, Sendable { var model: String?; var query: String? }
        let probe = try await offload { try decodeBody(Probe.self, from: body) }
        let model = try model(probe.model)
        guard model.classifier != nil else { return try await teiEmbed(body) }
        if model.reranks, probe.query != nil { return try await rerank(body) }
        return try await predict(body, singleAsBatch: true)
    }
    // MARK: - Tokenize, info

    /// POST /tokenize (TEI): for each text, its tokens with ids and code-point offsets.
    func tokenize(_ body: [UInt8]) async throws -> [UInt8] {
        try await offload { [self] in try tokenizeNow(body) }
    }

    private func tokenizeNow(_ body: [UInt8]) throws -> [UInt8] {
        let request = try decodeBody(TokenizeRequest.self, from: body)
        let model = try self.model(request.model)
        let prompt = try prompt(request.prompt_name, model: model) ?? ""
        try checkCount(request.inputs.texts.count)
        let json = JSONWriter()
        json.array {
            for text in request.inputs.texts {
                let encoding = model.tokenizer.encode(prompt + text, addSpecialTokens: request.add_special_tokens ?? true)
                let specials: Set<Int32> = [model.tokenizer.clsId, model.tokenizer.sepId, model.tokenizer.padId, model.tokenizer.maskId]
                json.array {
                    for i in 0..<encoding.count {
                        json.object {
                            json.key("id"); json.number(Int(encoding.ids[i]))
                            json.key("text"); json.string(encoding.tokens[i])
                            json.key("special"); json.bool(specials.contains(encoding.ids[i]) && encoding.offsets[i].isEmpty)
                            json.key("start"); encoding.offsets[i].isEmpty ? json.null() : json.number(encoding.offsets[i].lowerBound)
                            json.key("stop"); encoding.offsets[i].isEmpty ? json.null() : json.number(encoding.offsets[i].upperBound)
                        }
                    }
                }
            }
        }
        return json.bytes
    }

    /// POST /decode (TEI): the text of each list of token ids.
    func decode(_ body: [UInt8]) async throws -> [UInt8] {
        try await offload { [self] in
            let request = try decodeBody(DecodeRequest.self, from: body)
            let model = try self.model(request.model)
            try checkCount(request.ids.lists.count, param: "ids")
            let vocabulary = model.tokenizer.vocabularySize
            let json = JSONWriter()
            try json.array {
                for (index, ids) in request.ids.lists.enumerated() {
                    if let bad = ids.first(where: { $0 < 0 || $0 >= vocabulary }) {
                        throw APIError.invalid("ids \(index) holds token id \(bad), outside the model's vocabulary of \(vocabulary)", param: "ids")
                    }
                    json.string(model.tokenizer.decode(ids.map { Int32($0) }, skipSpecialTokens: request.skip_special_tokens ?? true))
                }
            }
            return json.bytes
        }
    }

    /// GET /v1/models (OpenAI): every model of this server.
    func openAIModels() throws -> [UInt8] {
        let models = try models()
        let json = JSONWriter()
        json.object {
            json.key("object"); json.string("list")
            json.key("data")
            json.array {
                for model in models {
                    json.object {
                        json.key("id"); json.string(model.name)
                        json.key("object"); json.string("model")
                        json.key("created"); json.number(0)
                        json.key("owned_by"); json.string("swiftbert")
                    }
                }
            }
        }
        return json.bytes
    }

    /// GET /info (TEI's fields, plus every model of this server).
    func info() throws -> [UInt8] {
        let models = try models()
        let json = JSONWriter()
        func describe(_ model: ServedModel) {
            json.key("model_id"); json.string(model.name)
            json.key("model_dtype"); json.string(model.loaded.encoder.precision.rawValue)
            json.key("model_type")
            json.object {
                if let classifier = model.classifier {
                    // TEI's shape: a cross-encoder is a "reranker", any other classifier a "classifier".
                    json.key(model.reranks ? "reranker" : "classifier")
                    json.object {
                        json.key("id2label")
                        json.object { for (id, label) in classifier.labels.enumerated() { json.key(String(id)); json.string(label) } }
                        json.key("label2id")
                        json.object { for (id, label) in classifier.labels.enumerated() { json.key(label); json.number(id) } }
                    }
                } else {
                    json.key("embedding")
                    json.object { json.key("pooling"); json.string(model.embedder.head.pooling.rawValue) }
                }
            }
            json.key("architecture"); json.string((model.config.architecture ?? .bert).rawValue)
            json.key("heads"); json.array { for head in model.loaded.heads { json.string(head.rawValue) } }
            json.key("dimension"); json.number(model.dimension)
            json.key("max_input_length"); json.number(model.maxLength)
            json.key("fill_mask"); json.bool(model.fillMask != nil)
            json.key("prompts"); json.array { for name in model.prompts.keys.sorted() { json.string(name) } }
        }
        json.object {
            describe(models[0])
            json.key("max_batch_tokens"); json.number(configuration.maxBatchTokens)
            json.key("max_client_batch_size"); json.number(configuration.maxInputs)
            json.key("max_queue_sequences"); json.number(configuration.queueCapacity)
            json.key("max_wait_ms"); json.number(Int(configuration.maxWait.seconds * 1000))
            json.key("version"); json.string(Self.version)
            json.key("models")
            json.array { for model in models { json.object { describe(model) } } }
        }
        return json.bytes
    }

    // MARK: - Fill-mask

    /// POST /fill: the top-k tokens for each [MASK], with ids and probabilities.
    func fill(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(FillRequest.self, from: body) }
        let models = try models()
        let model: ServedModel
        if let name = request.model {
            model = try self.model(name)
        } else {
            guard let first = models.first(where: { $0.fillMask != nil }) else {
                throw APIError.invalid("none of this server's models (\(models.map(\.name).joined(separator: ", "))) has a masked-LM head; start `bert serve --model` with one, e.g. splade-tiny", status: 404)
            }
            model = first
        }
        guard let fillMask = model.fillMask else {
            throw APIError.invalid("\(model.name) has no masked-LM head, so it cannot fill masks; use a BertForMaskedLM model such as splade-tiny", param: "model")
        }
        let topK = request.top_k ?? 5
        guard (1...1000).contains(topK) else { throw APIError.invalid("top_k must be between 1 and 1000; got \(topK)", param: "top_k") }
        let text = request.inputs, wordsOnly = request.words_only ?? false
        let predictions: [FillMask.Prediction]
        do {
            predictions = try await model.batcher.run(timeout: configuration.requestTimeout) {
                try fillMask.predict(text, topK: topK, wordsOnly: wordsOnly)
            }
        } catch let BertError.invalidInput(reason) {
            throw APIError.invalid(reason, param: "inputs")
        } catch {
            throw mapFailure(error, model: model)
        }
        let json = JSONWriter()
        json.object {
            json.key("model"); json.string(model.name)
            json.key("predictions")
            json.array {
                for prediction in predictions {
                    json.object {
                        json.key("position"); json.number(prediction.position)
                        json.key("candidates")
                        json.array {
                            for candidate in prediction.candidates {
                                json.object {
                                    json.key("token"); json.string(candidate.token)
                                    json.key("id"); json.number(Int(candidate.id))
                                    json.key("probability"); json.number(candidate.probability)
                                }
                            }
                        }
                    }
                }
            }
        }
        return json.bytes
    }
}

/// A counter any thread may bump: which request queue takes the next request.
final class RoundRobin: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.withLock { value &+= 1; return value & Int.max } }
}

/// Rows of floats as a JSON array of arrays.
func jsonFloatRows(_ rows: [[Float]], width: Int) -> [UInt8] {
    let json = JSONWriter(capacity: rows.count * width * 13 + 16)
    json.array { for row in rows { json.floats(row) } }
    return json.bytes
}

/// float32 little-endian bytes, base64: what the openai client decodes with numpy.frombuffer.
func base64LittleEndian(_ v: [Float]) -> String {
    var bytes = [UInt8]()
    bytes.reserveCapacity(v.count * 4)
    for x in v { withUnsafeBytes(of: x.bitPattern.littleEndian) { bytes += $0 } }
    return Data(bytes).base64EncodedString()
}
#endif
