#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// Text Embeddings Inference's API: embeddings (dense, sparse, multi-vector, all tokens),
/// similarity, classification, reranking, fill-mask, tokenize/decode, /info and TEI's root route.
extension Endpoints {
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
    func teiEmbedChunks(_ request: TEIEmbedRequest) async throws -> [UInt8] {
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
            let pooling = try choice(request.chunk_pooling ?? ChunkPooling.none.rawValue, of: ChunkPooling.self, param: "chunk_pooling")
            let prompt = try prompt(request.prompt_name, model: model)
            do {
                let chunker = try TextChunker(tokenizer: model.tokenizer, maxTokens: size, overlap: request.overlap ?? 0, prompt: prompt,
                                              modelLimit: model.maxLength)
                let chunks = try chunker.chunks(of: texts)
                // Every chunk is a sequence of its own: --max-inputs bounds them, not the texts
                // (one long text with a small chunk would be thousands).
                guard chunks.count <= configuration.maxInputs else {
                    throw APIError.invalid("the request's \(texts.count) input\(texts.count == 1 ? " is" : "s are") \(chunks.count) chunks after chunking; at most \(configuration.maxInputs) sequences, counted after chunking, are allowed in one request (--max-inputs); send fewer or shorter texts, or a larger \"chunk\"", param: "chunk", status: 413)
                }
                return (model, chunks, self.promptLength(prompt, model: model), pooling, texts.count)
            } catch let SwiftBERTError.invalidInput(reason) {
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

    /// POST /embed_sparse (TEI): [[{"index", "value"}]], lexical weights over the vocabulary
    /// (SPLADE, or BGE-M3's sparse head).
    func embedSparse(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences) = try await tokenRequest(body)
        let vectors = try await run(sequences, head: try sparseHead(model), on: model)
        // Sized once the weights are known (a SPLADE vector can hold any share of the
        // vocabulary) and before the JSON, which is about 5 times their size, is built.
        try checkResponseSize(Self.sparseJSONBytes(vectors) + 2, route: "/embed_sparse",
                              of: "\(vectors.reduce(0) { $0 + $1.indices.count }) weights")
        return try await offload {
            let json = JSONWriter(capacity: vectors.reduce(0) { $0 + $1.indices.count * 32 } + 16)
            json.array { for vector in vectors { json.sparse(vector) } }
            return json.bytes
        }
    }

    /// POST /embed_multi_vector: [[[Float]]], BGE-M3's ColBERT vectors, one per token after [CLS].
    func embedMultiVector(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences) = try await tokenRequest(body)
        let head = try multiVectorHead(model)
        try checkResponseSize(Self.multiVectorJSONBytes(sequences, dimension: head.dimension) + 2, route: "/embed_multi_vector",
                              of: "\(sequences.reduce(0) { $0 + $1.count }) tokens × \(head.dimension) numbers")
        let vectors = try await run(sequences, head: head, on: model)
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
        for name in request.outputs { outputs.insert(try choice(name, of: OutputName.self, param: "outputs").output) }
        guard !outputs.isEmpty else {
            throw APIError.invalid("outputs is empty; name one or more of \(names(of: OutputName.self).joined(separator: ", "))", param: "outputs")
        }
        var dense = model.embedder.head
        dense.normalize = request.normalize ?? dense.normalize
        let head = RetrievalHead(dense: dense, sparse: outputs.contains(.sparse) ? try sparseHead(model) : nil,
                                 multiVector: outputs.contains(.multiVector) ? try multiVectorHead(model) : nil, outputs: outputs)
        // The dense and multi-vector parts are sized before the forward pass, the sparse part
        // once its weights are known; all before the JSON is built.
        let denseBytes = outputs.contains(.dense) ? sequences.count * (model.dimension * Self.floatJSONBytes + 12) : 0
        let multiVectorBytes = outputs.contains(.multiVector) ? Self.multiVectorJSONBytes(sequences, dimension: model.multiVector?.dimension ?? 0) + sequences.count * 18 : 0
        let fixedBytes = denseBytes + multiVectorBytes + sequences.count * 3 + 2
        let what = "\(sequences.count) texts, \(sequences.reduce(0) { $0 + $1.count }) tokens"
        try checkResponseSize(fixedBytes, route: "/embed_outputs", of: what)
        let results = try await run(sequences, head: head, promptLength: promptLength, on: model)
        if outputs.contains(.sparse) {
            let sparse = results.compactMap(\.sparse)
            try checkResponseSize(fixedBytes + Self.sparseJSONBytes(sparse) + sparse.count * 10, route: "/embed_outputs",
                                  of: "\(what), \(sparse.reduce(0) { $0 + $1.indices.count }) sparse weights")
        }
        return try await offload {
            let json = JSONWriter(capacity: sequences.reduce(0) { $0 + $1.count } * (model.multiVector?.dimension ?? 0) * 13 + results.count * model.dimension * 13 + 16)
            json.array {
                for result in results {
                    json.object {
                        if let vector = result.dense { json.key(OutputName.dense.rawValue); json.floats(vector) }
                        if let vector = result.sparse { json.key(OutputName.sparse.rawValue); json.sparse(vector) }
                        if let vectors = result.multiVector { json.key(OutputName.multi_vector.rawValue); json.array { for v in vectors { json.floats(v) } } }
                    }
                }
            }
            return json.bytes
        }
    }

    /// The model's sparse head, or 422 saying which checkpoint has one.
    func sparseHead(_ model: ServedModel) throws -> SparseHead {
        guard let sparse = model.sparse else {
            throw APIError.invalid("\(model.name) has no sparse head: sparse output needs a masked-LM (SPLADE) checkpoint such as splade-tiny, or BGE-M3 converted with its sparse_linear.pt", param: "model", status: 422)
        }
        return sparse
    }

    /// The model's ColBERT head, or 422 saying which checkpoint has one.
    func multiVectorHead(_ model: ServedModel) throws -> MultiVectorHead {
        guard let head = model.multiVector else {
            throw APIError.invalid("\(model.name) has no multi-vector head: it needs BGE-M3 converted with its colbert_linear.pt", param: "model", status: 422)
        }
        return head
    }

    /// POST /embed_all (TEI): [[[Float]]], every token's last hidden state.
    func embedAll(_ body: [UInt8]) async throws -> [UInt8] {
        let (model, sequences) = try await tokenRequest(body)
        // Sized before the forward pass: every token's vector, each number at its longest.
        let tokens = sequences.reduce(0) { $0 + $1.count }
        try checkResponseSize(Self.multiVectorJSONBytes(sequences, dimension: model.config.encoder.hiddenSize) + 2,
                              route: "/embed_all", of: "\(tokens) tokens × \(model.config.encoder.hiddenSize) numbers")
        let states = try await run(sequences, head: TokenEmbeddingsHead(), on: model)
        return try await offload {
            let json = JSONWriter(capacity: sequences.reduce(0) { $0 + $1.count } * model.config.encoder.hiddenSize * 13 + 16)
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

    /// POST /predict (TEI): every label with its score, best first; softmax (or sigmoid for one
    /// label or multi-label models, as `bert classify`) unless raw_scores.
    func predict(_ body: [UInt8]) async throws -> [UInt8] {
        try await predict(body, singleAsBatch: false)
    }

    /// `singleAsBatch`: one input answered as a batch of one, [[…]] (the Hugging Face Inference
    /// API's shape, which huggingface_hub's text_classification reads), not TEI's […].
    func predict(_ body: [UInt8], singleAsBatch: Bool) async throws -> [UInt8] {
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

    /// POST /rerank (TEI): [{"index", "score", "text"?}], best first.
    func rerank(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(RerankRequest.self, from: body) }
        let model = try self.model(request.model)
        let (scores, _) = try await rerankScores(query: request.query, documents: request.texts, model: model, truncate: request.truncate ?? false,
                                            fromLeft: try truncatesLeft(request.truncation_direction), raw: request.raw_scores ?? false, param: "texts")
        let json = JSONWriter()
        json.array {
            for index in bestFirst(scores) {
                json.object {
                    json.key("index"); json.number(index)
                    json.key("score"); json.number(scores[index])
                    if request.return_text ?? false { json.key("text"); json.string(request.texts[index]) }
                }
            }
        }
        return json.bytes
    }

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

    /// POST /tokenize (TEI): for each text, its tokens with ids and code-point offsets.
    func tokenize(_ body: [UInt8]) async throws -> [UInt8] {
        try await offload { [self] in try tokenizeNow(body) }
    }

    func tokenizeNow(_ body: [UInt8]) throws -> [UInt8] {
        let request = try decodeBody(TokenizeRequest.self, from: body)
        let model = try self.model(request.model)
        let prompt = try prompt(request.prompt_name, model: model) ?? ""
        try checkCount(request.inputs.texts.count)
        let encodings = try request.inputs.texts.map { text in
            try RequestDeadline.check()
            return model.tokenizer.encode(prompt + text, addSpecialTokens: request.add_special_tokens ?? true)
        }
        // The answer is some 20 times the text (an object per token): sized before it is built.
        var size = 2
        for encoding in encodings {
            size += 3
            for i in 0..<encoding.count {
                size += 64 + jsonEscapedLength(encoding.tokens[i]) + decimalLength(Int(encoding.ids[i]))
                    + (encoding.offsets[i].isEmpty ? 8 : decimalLength(encoding.offsets[i].lowerBound) + decimalLength(encoding.offsets[i].upperBound))
            }
        }
        try checkResponseSize(size, route: "/tokenize", of: "\(encodings.reduce(0) { $0 + $1.count }) tokens")
        let specials: Set<Int32> = [model.tokenizer.clsId, model.tokenizer.sepId, model.tokenizer.padId, model.tokenizer.maskId]
        let json = JSONWriter(capacity: size)
        json.array {
            for encoding in encodings {
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
            json.key("architecture"); json.string((model.config.encoder.architecture ?? .bert).rawValue)
            json.key("heads"); json.array { for head in model.loaded.heads { json.string(head.rawValue) } }
            json.key("dimension"); json.number(model.dimension)
            json.key("max_input_length"); json.number(model.maxLength)
            json.key("fill_mask"); json.bool(model.fillMask != nil)
            json.key("prompts"); json.array { for name in model.prompts.keys.sorted() { json.string(name) } }
            // What a request that names no prompt gets (checked when the server started).
            json.key("default_prompt")
            if let prompt = try? prompt(nil, model: model) { json.string(prompt) } else { json.null() }
        }
        json.object {
            describe(models[0])
            json.key("max_batch_tokens"); json.number(configuration.maxBatchTokens)
            json.key("max_client_batch_size"); json.number(configuration.maxInputs)
            json.key("max_queue_sequences"); json.number(configuration.queueCapacity)
            json.key("max_wait_ms"); json.number(Int(configuration.maxWait.seconds * 1000))
            json.key("version"); json.string(Self.version)
            // What runs the Linear layers on this CPU: AMX tiles or the vector units (docs/amx.md).
            let kernels = KernelReport.current
            json.key("kernels")
            json.object {
                json.key("fp32_linear"); json.string(kernels.fp32Linear)
                json.key("int8_linear"); json.string(kernels.int8Linear)
                json.key("bf16_linear"); json.string(kernels.bf16Linear)
                json.key("matrix_unit"); json.string(kernels.matrixUnit)
            }
            json.key("models")
            json.array { for model in models { json.object { describe(model) } } }
        }
        return json.bytes
    }

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
            throw APIError.invalid("\(model.name) has no masked-LM head, so it cannot fill masks; serve a *ForMaskedLM checkpoint (splade-tiny is one)", param: "model")
        }
        let topK = request.top_k ?? 5
        guard (1...1000).contains(topK) else { throw APIError.invalid("top_k must be between 1 and 1000; got \(topK)", param: "top_k") }
        let text = request.inputs, wordsOnly = request.words_only ?? false
        // As every head: the text prepared off the event loop, the masked-LM head over a forward
        // pass shared with other requests, then its candidates.
        let encoding: Encoding
        do {
            encoding = try await offload { try fillMask.prepare(text) }
        } catch let SwiftBERTError.invalidInput(reason) {
            throw APIError.invalid(reason, param: "inputs")
        }
        let masks = try await run([encoding.ids], typeIds: [encoding.typeIds], head: fillMask.head, on: model)[0]
        let predictions = try await offload { fillMask.finish(masks, topK: topK, wordsOnly: wordsOnly) }
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
#endif
