#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// OpenAI's API: POST /v1/embeddings and GET /v1/models.
extension Endpoints {
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
        let base64 = try choice(request.encoding_format ?? EncodingFormat.float.rawValue, of: EncodingFormat.self, param: "encoding_format") == .base64
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
    func refusedTokenIds() -> APIError {
        APIError.invalid("input holds token ids, and this server takes text: OpenAI clients tokenise with tiktoken, whose ids are not this model's, and would get wrong vectors. Send the text itself. LangChain's OpenAIEmbeddings sends token ids by default: create it with check_embedding_ctx_length=False. If your ids come from this model's own tokenizer (POST /tokenize), start the server with --accept-token-ids.",
                         param: "input", status: 400)
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
}
#endif
