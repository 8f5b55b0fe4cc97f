#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// The API itself, independent of the HTTP framework: a request body in, a JSON body out, or an
/// APIError. Forward passes go through each model's Batcher.
struct Endpoints: Sendable {
    let registry: ModelRegistry
    let configuration: ServerConfiguration
    let metrics: ServerMetrics

    static let version = "0.1.0"

    private func models() throws -> [ServedModel] {
        guard let models = registry.models else {
            throw APIError.overloaded("the models are still loading; retry when GET /health answers 200")
        }
        return models
    }

    /// The model a request names; nil picks the first one given to `bert serve`.
    private func model(_ name: String?) throws -> ServedModel {
        let models = try models()
        guard let name else { return models[0] }
        if let model = models.first(where: { $0.name == name }) { return model }
        // Also accept the folder name when the server was started with a path.
        if let model = models.first(where: { $0.model.folder.lastPathComponent == name }) { return model }
        throw APIError.unknownModel(name, available: models.map(\.name))
    }

    // MARK: - Embeddings

    /// Token ids for each text or id list, cut to the model's limit or refused (413) as asked.
    private func sequences(_ input: EmbeddingInput, model: ServedModel, truncate: Bool, prompt: String? = nil) throws -> [[Int32]] {
        guard input.count > 0 else { throw APIError.invalid("the input is empty; send at least one text", param: "input") }
        guard input.count <= configuration.maxInputs else {
            throw APIError.invalid("\(input.count) inputs in one request; at most \(configuration.maxInputs) are allowed (--max-inputs)", param: "input", status: 413)
        }
        let limit = model.maxLength
        switch input {
        case let .texts(texts):
            return try texts.enumerated().map { index, text in
                let encoding = model.tokenizer.encode((prompt ?? "") + text, maxLength: truncate ? limit : nil)
                guard encoding.count <= limit else {
                    throw APIError.invalid("input \(index) is \(encoding.count) tokens long, over the model's limit of \(limit); shorten it or send \"truncate\": true", param: "input", status: 413)
                }
                return encoding.ids
            }
        case let .tokenIDs(lists):
            let vocabulary = model.tokenizer.vocabularySize
            return try lists.enumerated().map { index, ids in
                guard !ids.isEmpty else { throw APIError.invalid("input \(index) is an empty list of token ids", param: "input") }
                if let bad = ids.first(where: { $0 < 0 || $0 >= vocabulary }) {
                    throw APIError.invalid("input \(index) holds token id \(bad), outside the model's vocabulary of \(vocabulary); ids come from POST /tokenize", param: "input")
                }
                var sequence = ids.map { Int32($0) }
                if sequence.count > limit {
                    guard truncate else {
                        throw APIError.invalid("input \(index) is \(sequence.count) tokens long, over the model's limit of \(limit); shorten it or send \"truncate\": true", param: "input", status: 413)
                    }
                    // Keep the closing [SEP] when the ids were framed by the tokenizer.
                    let last = sequence[sequence.count - 1]
                    sequence = Array(sequence.prefix(limit))
                    if last == model.tokenizer.sepId { sequence[limit - 1] = last }
                }
                return sequence
            }
        }
    }

    /// Pooled vectors, cut to `dimensions` and L2-normalised when asked.
    private func vectors(_ sequences: [[Int32]], model: ServedModel, dimensions: Int?, normalize: Bool) async throws -> [[Float]] {
        if let dimensions, dimensions < 1 || dimensions > model.dimension {
            throw APIError.invalid("dimensions must be between 1 and \(model.dimension), the model's dimension; got \(dimensions)", param: "dimensions")
        }
        var vectors: [[Float]]
        do {
            vectors = try await model.batcher.embed(sequences, pooling: nil, timeout: configuration.requestTimeout)
        } catch let failure as Batcher.Failure {
            throw mapFailure(failure, model: model)
        } catch let timeout as RequestTimeout {
            throw APIError.overloaded("the request timed out after \(timeout.seconds) s waiting for the model; the server is busy")
        } catch let error as BertError {
            throw APIError.invalid(error.description)
        }
        for i in vectors.indices {
            if let dimensions { vectors[i] = Array(vectors[i].prefix(dimensions)) }
            if normalize { vectors[i] = l2Normalized(vectors[i]) }
        }
        return vectors
    }

    private func mapFailure(_ failure: Batcher.Failure, model: ServedModel) -> APIError {
        switch failure {
        case let .queueFull(capacity):
            metrics.rejected(model: model.name)
            return APIError.overloaded("the queue of \(model.name) is full (\(capacity) sequences waiting); retry after a moment")
        case .stopped:
            return APIError.overloaded("the server is shutting down")
        }
    }

    /// POST /v1/embeddings (OpenAI).
    func openAIEmbeddings(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try decodeBody(OpenAIEmbeddingRequest.self, from: body)
        let model = try model(request.model)
        let base64: Bool
        switch request.encoding_format ?? "float" {
        case "float": base64 = false
        case "base64": base64 = true
        case let other: throw APIError.invalid("encoding_format must be \"float\" or \"base64\"; got \"\(other)\"", param: "encoding_format")
        }
        let sequences = try sequences(request.input, model: model, truncate: request.truncate ?? true)
        let vectors = try await vectors(sequences, model: model, dimensions: request.dimensions, normalize: true)
        let tokens = sequences.reduce(0) { $0 + $1.count }
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

    /// POST /embed (TEI): [[Float]].
    func teiEmbed(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try decodeBody(TEIEmbedRequest.self, from: body)
        let model = try model(request.model)
        let prompt = try prompt(request.prompt_name, model: model)
        if let direction = request.truncation_direction, direction.lowercased() != "right" {
            throw APIError.invalid("truncation_direction \"\(direction)\" is not supported; only \"Right\"", param: "truncation_direction")
        }
        let sequences = try sequences(.texts(request.inputs.texts), model: model, truncate: request.truncate ?? false, prompt: prompt)
        let vectors = try await vectors(sequences, model: model, dimensions: request.dimensions, normalize: request.normalize ?? true)
        let json = JSONWriter(capacity: vectors.count * model.dimension * 13 + 16)
        json.array { for vector in vectors { json.floats(vector) } }
        return json.bytes
    }

    private func prompt(_ name: String?, model: ServedModel) throws -> String? {
        guard let name else { return nil }
        guard !model.prompts.isEmpty else {
            throw APIError.invalid("prompt_name \"\(name)\" given, but \(model.name) defines no prompts (its folder has no config_sentence_transformers.json with \"prompts\"); send the prompt as part of the text", param: "prompt_name")
        }
        guard let prompt = model.prompts[name] else {
            throw APIError.invalid("\(model.name) has no prompt named \"\(name)\"; it has: \(model.prompts.keys.sorted().joined(separator: ", "))", param: "prompt_name")
        }
        return prompt
    }

    // MARK: - Tokenize, info

    /// POST /tokenize (TEI): for each text, its tokens with ids and code-point offsets.
    func tokenize(_ body: [UInt8]) throws -> [UInt8] {
        let request = try decodeBody(TokenizeRequest.self, from: body)
        let model = try model(request.model)
        let prompt = try prompt(request.prompt_name, model: model) ?? ""
        guard request.inputs.texts.count <= configuration.maxInputs else {
            throw APIError.invalid("\(request.inputs.texts.count) inputs; at most \(configuration.maxInputs)", status: 413)
        }
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

    /// GET /info (TEI's fields, plus every model of this server).
    func info() throws -> [UInt8] {
        let models = try models()
        let json = JSONWriter()
        func describe(_ model: ServedModel) {
            json.key("model_id"); json.string(model.name)
            json.key("model_dtype"); json.string(model.model.precision.rawValue)
            json.key("model_type")
            json.object {
                json.key("embedding")
                json.object { json.key("pooling"); json.string(model.model.config.pooling.rawValue) }
            }
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
        let request = try decodeBody(FillRequest.self, from: body)
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
        } catch let failure as Batcher.Failure {
            throw mapFailure(failure, model: model)
        } catch let timeout as RequestTimeout {
            throw APIError.overloaded("the request timed out after \(timeout.seconds) s waiting for the model; the server is busy")
        } catch let error as BertError {
            throw APIError.invalid(error.description.replacingOccurrences(of: "invalid input: ", with: ""), param: "inputs")
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

func l2Normalized(_ v: [Float]) -> [Float] {
    var sumSquares: Float = 0
    for x in v { sumSquares += x * x }
    let inverse = 1 / max(sumSquares.squareRoot(), 1e-12)
    return v.map { $0 * inverse }
}

/// float32 little-endian bytes, base64: what the openai client decodes with numpy.frombuffer.
func base64LittleEndian(_ v: [Float]) -> String {
    var bytes = [UInt8]()
    bytes.reserveCapacity(v.count * 4)
    for x in v { withUnsafeBytes(of: x.bitPattern.littleEndian) { bytes += $0 } }
    return Data(bytes).base64EncodedString()
}
#endif
