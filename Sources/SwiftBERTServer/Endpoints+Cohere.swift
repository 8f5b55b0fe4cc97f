#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// Cohere's API: embed (POST /v1/embed, /v2/embed) and rerank (POST /v1/rerank, also Jina's, and /v2/rerank).
extension Endpoints {
    /// POST /v2/embed and /v1/embed (Cohere: `cohere.ClientV2(...).embed()`, `cohere.Client(...).embed()`):
    /// sentence vectors of `texts`, L2-normalised as /v1/embeddings', each text with the model's
    /// prompt for its `input_type` (search_query: "query", search_document: "document",
    /// classification, clustering; the model's default prompt when none is given), in each of
    /// `embedding_types` (default float). The answer is {"id", "embeddings": {type: [...]},
    /// "texts", "meta", "response_type": "embeddings_by_type"}; v1 without embedding_types
    /// answers "embeddings": [[...]] and "embeddings_floats", as Cohere's v1 does.
    func cohereEmbed(_ body: [UInt8], version: Int) async throws -> [UInt8] {
        let (request, model, texts, sequences, promptLength, types) = try await offload { [self] () throws
            -> (CohereEmbedRequest, ServedModel, [String], [[Int32]], Int, [CohereEmbeddingType]) in
            let request = try decodeBody(CohereEmbedRequest.self, from: body)
            let model = try self.model(request.model)
            if let images = request.images, !images.isEmpty {
                throw APIError.invalid("this server embeds text only; send the texts in \"texts\"", param: "images")
            }
            guard let texts = request.texts else { throw APIError.invalid("texts is required: the strings to embed", param: "texts") }
            var types = [CohereEmbeddingType]()
            for name in request.embedding_types ?? ["float"] {
                let type = try choice(name, of: CohereEmbeddingType.self, param: "embedding_types")
                if type == .int8 || type == .uint8 {
                    // Ranges taken from one request's vectors would give the same text other bytes
                    // in another request: they come from the operator's calibration, or not at all.
                    guard model.embeddingRanges != nil else {
                        throw APIError.invalid("embedding_types \"\(name)\" needs value ranges calibrated for the model, which this server was not given (bert serve --calibration FILE.npy): ask for \"binary\" or \"ubinary\" (the signs, 8 to a byte), or for \"float\" and quantise with ranges from your own corpus (swiftbert.quantize_embeddings or sentence-transformers' quantize_embeddings with calibration_embeddings)",
                                               param: "embedding_types")
                    }
                    if let dimensions = request.output_dimension, dimensions != model.dimension {
                        throw APIError.invalid("embedding_types \"\(name)\" uses the calibration's ranges of all \(model.dimension) dimensions, and output_dimension \(dimensions) cuts and normalises the vectors again; leave output_dimension out, or ask for float, binary or ubinary",
                                               param: "output_dimension")
                    }
                }
                if !types.contains(type) { types.append(type) }
            }
            guard !types.isEmpty else { throw APIError.invalid("embedding_types is empty; ask for at least one, e.g. [\"float\"]", param: "embedding_types") }
            let truncation = try choice((request.truncate ?? "END").uppercased(), of: CohereTruncate.self, param: "truncate")
            let prompt: String?
            if let inputType = request.input_type {
                let role = try choice(inputType, of: CohereInputType.self, param: "input_type").role
                prompt = try model.embedder.prompt(for: model.embedder.options(.init(), as: role))
            } else {
                prompt = try self.prompt(nil, model: model)
            }
            // max_tokens counts the text's own tokens: the limit adds the prompt's and the framing.
            var limit: Int?
            if let maxTokens = request.max_tokens {
                guard maxTokens >= 1 else { throw APIError.invalid("max_tokens must be at least 1; got \(maxTokens)", param: "max_tokens") }
                if truncation == .NONE {
                    for (index, text) in texts.enumerated() {
                        try RequestDeadline.check()  // as `encode`'s loop: the deadline, a client gone
                        let count = model.tokenizer.encode(text, addSpecialTokens: false).count
                        guard count <= maxTokens else {
                            throw APIError.invalid("text \(index) is \(count) tokens long, over max_tokens (\(maxTokens)), and truncate is NONE; shorten it, or send truncate END or START",
                                                   param: "texts", status: 413)
                        }
                    }
                }
                let promptTokens = prompt.map { model.tokenizer.encode($0, addSpecialTokens: false).count } ?? 0
                limit = model.tokenizer.framingCount + promptTokens + min(maxTokens, model.maxLength)
            }
            if let dimensions = request.output_dimension, dimensions < 1 || dimensions > model.dimension {
                throw APIError.invalid("output_dimension must be between 1 and \(model.dimension), the model's dimension; got \(dimensions)", param: "output_dimension")
            }
            let encodings = try encode(texts.map { ($0, nil) }, model: model, truncate: truncation != .NONE, fromLeft: truncation == .START,
                                       prompt: prompt, param: "texts", limit: limit, allowing: "send truncate END or START")
            return (request, model, texts, encodings.map(\.ids), self.promptLength(prompt, model: model), types)
        }
        let vectors = try await sentenceVectors(sequences, model: model, promptLength: promptLength, dimensions: request.output_dimension,
                                                normalize: true)
        let tokens = sequences.reduce(0) { $0 + $1.count }
        let byType = version == 2 || request.embedding_types != nil
        return try await offload {
            // The byte types through the library's quantiser (int8 and uint8 were refused without
            // ranges, and with a cut vector).
            let dimension = request.output_dimension ?? model.dimension
            var quantizers: [CohereEmbeddingType: EmbeddingQuantizer] = [:]
            for type in types {
                if let stored = type.stored { quantizers[type] = try EmbeddingQuantizer(stored, dimension: dimension, ranges: model.embeddingRanges) }
            }
            let json = JSONWriter(capacity: vectors.count * model.dimension * 14 * types.count + texts.reduce(256) { $0 + $1.utf8.count + 8 })
            try json.object {
                json.key("id"); json.string(UUID().uuidString.lowercased())
                json.key("embeddings")
                if byType {
                    try json.object {
                        for type in types {
                            json.key(type.rawValue)
                            try json.array { for vector in vectors { try writeEmbedding(json, vector, as: type, quantizer: quantizers[type]) } }
                        }
                    }
                } else {
                    json.array { for vector in vectors { json.floats(vector) } }
                }
                json.key("texts"); json.array { for text in texts { json.string(text) } }
                json.key("meta")
                json.object {
                    json.key("api_version"); json.object { json.key("version"); json.string(String(version)) }
                    json.key("billed_units"); json.object { json.key("input_tokens"); json.number(tokens) }
                }
                json.key("response_type"); json.string(byType ? "embeddings_by_type" : "embeddings_floats")
            }
            return json.bytes
        }
    }

    private func writeEmbedding(_ json: JSONWriter, _ vector: [Float], as type: CohereEmbeddingType, quantizer: EmbeddingQuantizer?) throws {
        switch type {
        case .float: json.floats(vector)
        case .base64: json.string(base64LittleEndian(vector))
        case .int8, .uint8, .binary, .ubinary:  // each has its quantiser
            try json.array { for value in try quantizer!.values(vector) { json.number(value) } }
        }
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
            writeResults(json, scores: scores, topN: request.top_n, documents: request.return_documents ?? false ? documents : nil)
            json.key("usage"); json.object { json.key("total_tokens"); json.number(tokens) }
        }
        return json.bytes
    }

    /// POST /v2/rerank (Cohere's v2 API, `cohere.ClientV2(...).rerank()`): documents are strings,
    /// each cut to its first `max_tokens_per_doc` tokens when given; the answer is
    /// {"id", "results": [{"index", "relevance_score"}], "meta"}, scored as /v1/rerank.
    func cohereV2Rerank(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(CohereV2RerankRequest.self, from: body) }
        let model = try self.model(request.model)
        if let topN = request.top_n, topN < 1 { throw APIError.invalid("top_n must be at least 1; got \(topN)", param: "top_n") }
        var documents = request.documents
        if let maxTokens = request.max_tokens_per_doc {
            guard maxTokens >= 1 else { throw APIError.invalid("max_tokens_per_doc must be at least 1; got \(maxTokens)", param: "max_tokens_per_doc") }
            let given = documents
            documents = try await offload { [self] in
                try given.map { document in
                    try RequestDeadline.check()
                    return firstTokens(document, maxTokens, tokenizer: model.tokenizer)
                }
            }
        }
        let (scores, tokens) = try await rerankScores(query: request.query, documents: documents, model: model, truncate: true,
                                                      fromLeft: false, raw: false, param: "documents")
        let json = JSONWriter()
        json.object {
            json.key("id"); json.string(UUID().uuidString.lowercased())
            writeResults(json, scores: scores, topN: request.top_n, documents: nil)
            json.key("meta")
            json.object {
                json.key("api_version"); json.object { json.key("version"); json.string("2") }
                json.key("tokens"); json.object { json.key("input_tokens"); json.number(tokens); json.key("output_tokens"); json.number(0) }
            }
        }
        return json.bytes
    }

    /// `text` up to the end of its `count`-th token (special tokens not counted); all of it when shorter.
    func firstTokens(_ text: String, _ count: Int, tokenizer: Tokenizer) -> String {
        let encoding = tokenizer.encode(text, addSpecialTokens: false)
        guard encoding.count > count, let end = encoding.offsets.prefix(count).last(where: { !$0.isEmpty })?.upperBound else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(end)))
    }

    /// Cohere's "results" (v1 and v2): the top `topN` by score, each {"index", "relevance_score"},
    /// with {"document": {"text"}} when `documents` is given (v1's return_documents).
    private func writeResults(_ json: JSONWriter, scores: [Float], topN: Int?, documents: [String]?) {
        json.key("results")
        json.array {
            for index in bestFirst(scores).prefix(topN ?? scores.count) {
                json.object {
                    json.key("index"); json.number(index)
                    json.key("relevance_score"); json.number(scores[index])
                    if let documents { json.key("document"); json.object { json.key("text"); json.string(documents[index]) } }
                }
            }
        }
    }
}
#endif
