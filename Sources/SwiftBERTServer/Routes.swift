#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation

/// Every route of the API, in one table: the router registers these, a wrong method or an
/// unknown path is answered from it (405 with Allow, or 404, both JSON), and GET /openapi.json
/// is written from it, with each request's schema taken from its request type (`Documented`).
struct Route: Sendable {
    enum Method: String, Sendable { case get = "GET", post = "POST" }

    let method: Method
    let path: String
    let summary: String
    /// Which API's error JSON the route answers with.
    let shape: ErrorShape
    /// The request body's type, for the OpenAPI document; nil: no body.
    let request: (any Documented.Type)?
    /// What a 200 holds.
    let response: Schema
    /// The head a served model needs for this route to answer it (nil: every model answers it).
    var needs: Capability? = nil
    let endpoint: @Sendable (Endpoints, [UInt8]) async throws -> [UInt8]

    /// The heads some routes need; a model without one answers those routes 422, saying which
    /// checkpoint has it.
    enum Capability: Sendable {
        case sparse, multiVector, fillMask, classifier, reranker

        func isServed(by model: ServedModel) -> Bool {
            switch self {
            case .sparse: model.sparse != nil
            case .multiVector: model.multiVector != nil
            case .fillMask: model.fillMask != nil
            case .classifier: model.classifier != nil
            case .reranker: model.reranks
            }
        }
    }

    static let all: [Route] = [
        Route(method: .post, path: "/v1/embeddings", summary: "OpenAI embeddings: text in, sentence vectors out (float or base64).",
              shape: .openAI, request: OpenAIEmbeddingRequest.self,
              response: .object([("object", .string, true), ("data", .array(.object([("object", .string, true), ("index", .integer, true), ("embedding", .oneOf([.array(.number), .string]), true)])), true), ("model", .string, true), ("usage", .object([("prompt_tokens", .integer, true), ("total_tokens", .integer, true)]), true)])) { try await $0.openAIEmbeddings($1) },
        Route(method: .post, path: "/embeddings", summary: "The same as /v1/embeddings.", shape: .openAI, request: OpenAIEmbeddingRequest.self,
              response: .ref("/v1/embeddings")) { try await $0.openAIEmbeddings($1) },
        Route(method: .post, path: "/v2/embed", summary: "Cohere v2 embed (cohere.ClientV2): sentence vectors by input_type, as float, base64, binary or ubinary, and int8 or uint8 when the server has a calibration (--calibration).",
              shape: .openAI, request: CohereEmbedRequest.self, response: cohereEmbedResponse) { try await $0.cohereEmbed($1, version: 2) },
        Route(method: .post, path: "/v1/embed", summary: "Cohere v1 embed (cohere.Client): as /v2/embed; without embedding_types, \"embeddings\" is the float vectors.",
              shape: .openAI, request: CohereEmbedRequest.self, response: cohereEmbedResponse) { try await $0.cohereEmbed($1, version: 1) },
        Route(method: .post, path: "/v1/rerank", summary: "Cohere/Jina rerank: documents by relevance to the query (a cross-encoder).",
              shape: .openAI, request: CohereRerankRequest.self,
              response: .object([("model", .string, true), ("results", .array(.object([("index", .integer, true), ("relevance_score", .number, true), ("document", .object([("text", .string, true)]), false)])), true), ("usage", .object([("total_tokens", .integer, true)]), true)]),
              needs: .reranker) { try await $0.cohereRerank($1) },
        Route(method: .post, path: "/v2/rerank", summary: "Cohere v2 rerank (cohere.ClientV2): documents by relevance to the query (a cross-encoder).",
              shape: .openAI, request: CohereV2RerankRequest.self,
              response: .object([("id", .string, true), ("results", .array(.object([("index", .integer, true), ("relevance_score", .number, true)])), true),
                                 ("meta", .object([("api_version", .object([("version", .string, true)]), false),
                                                   ("tokens", .object([("input_tokens", .integer, false), ("output_tokens", .integer, false)]), false)]), false)]),
              needs: .reranker) { try await $0.cohereV2Rerank($1) },
        Route(method: .get, path: "/v1/models", summary: "OpenAI: the models this server serves.", shape: .openAI, request: nil,
              response: .object([("object", .string, true), ("data", .array(.object([("id", .string, true), ("object", .string, true), ("created", .integer, true), ("owned_by", .string, true)])), true)])) { endpoints, _ in try endpoints.openAIModels() },
        Route(method: .post, path: "/", summary: "TEI's root: /predict (or /rerank with a query) for a classifier, /embed for any other model.",
              shape: .tei, request: TEIEmbedRequest.self, response: .oneOf([.ref("/embed"), .ref("/predict"), .ref("/rerank")])) { try await $0.root($1) },
        Route(method: .post, path: "/embed", summary: "TEI: sentence vectors, one per input (text or this model's token ids).",
              shape: .tei, request: TEIEmbedRequest.self,
              // With "chunk" (and chunk_pooling "none"): per input, a record per chunk.
              response: .oneOf([.array(.array(.number)),
                                .array(.array(.object([("start", .integer, true), ("end", .integer, true), ("tokens", .integer, true),
                                                       ("embedding", .array(.number), true)])))])) { try await $0.teiEmbed($1) },
        Route(method: .post, path: "/embed_sparse", summary: "TEI: lexical weights over the vocabulary (SPLADE, or BGE-M3's sparse head), one sparse vector per input.",
              shape: .tei, request: TEITokenRequest.self, response: .array(sparseVector), needs: .sparse) { try await $0.embedSparse($1) },
        Route(method: .post, path: "/embed_multi_vector", summary: "BGE-M3's ColBERT vectors: one L2-normalised vector per token after [CLS], per input.",
              shape: .tei, request: TEITokenRequest.self, response: .array(.array(.array(.number))), needs: .multiVector) { try await $0.embedMultiVector($1) },
        Route(method: .post, path: "/embed_outputs", summary: "Dense, sparse and multi-vector outputs, those named in `outputs`, from one forward pass.",
              shape: .tei, request: OutputsRequest.self,
              response: .array(.object(OutputName.allCases.map { name in
                  switch name {
                  case .dense: return (name.rawValue, .array(.number), false)
                  case .sparse: return (name.rawValue, sparseVector, false)
                  case .multi_vector: return (name.rawValue, .array(.array(.number)), false)
                  }
              }))) { try await $0.embedOutputs($1) },
        Route(method: .post, path: "/embed_all", summary: "TEI: every token's last hidden state, per input.",
              shape: .tei, request: TEITokenRequest.self, response: .array(.array(.array(.number)))) { try await $0.embedAll($1) },
        Route(method: .post, path: "/similarity", summary: "TEI: cosine similarity of the source sentence with each sentence.",
              shape: .tei, request: SimilarityRequest.self, response: .array(.number)) { try await $0.similarity($1) },
        Route(method: .post, path: "/predict", summary: "TEI: every label with its score, for a text, a pair, or a batch of them.",
              shape: .tei, request: PredictRequest.self,
              response: .oneOf([.array(.object([("score", .number, true), ("label", .string, true)])), .array(.array(.object([("score", .number, true), ("label", .string, true)])))]), needs: .classifier) { try await $0.predict($1) },
        Route(method: .post, path: "/rerank", summary: "TEI: texts by relevance to the query, best first (a cross-encoder; sigmoid scores unless raw_scores).",
              shape: .tei, request: RerankRequest.self,
              response: .array(.object([("index", .integer, true), ("score", .number, true), ("text", .string, false)])), needs: .reranker) { try await $0.rerank($1) },
        Route(method: .post, path: "/tokenize", summary: "TEI: tokens with ids and code-point offsets.", shape: .tei, request: TokenizeRequest.self,
              response: .array(.array(.object([("id", .integer, true), ("text", .string, true), ("special", .boolean, true), ("start", .nullable(.integer), true), ("stop", .nullable(.integer), true)])))) { try await $0.tokenize($1) },
        Route(method: .post, path: "/decode", summary: "TEI: the text of token ids.", shape: .tei, request: DecodeRequest.self,
              response: .array(.string)) { try await $0.decode($1) },
        Route(method: .post, path: "/fill", summary: "Masked-word prediction: the top-k tokens for each mask token.", shape: .tei, request: FillRequest.self,
              response: .object([("model", .string, true), ("predictions", .array(.object([("position", .integer, true), ("candidates", .array(.object([("token", .string, true), ("id", .integer, true), ("probability", .number, true)])), true)])), true)]),
              needs: .fillMask) { try await $0.fill($1) },
        Route(method: .get, path: "/info", summary: "TEI: the model, its heads and the server's limits.", shape: .tei, request: nil,
              response: .object([("model_id", .string, true), ("model_type", .object([]), true), ("max_input_length", .integer, true), ("models", .array(.object([])), true),
                                  ("kernels", .object([("fp32_linear", .string, true), ("int8_linear", .string, true), ("bf16_linear", .string, true),
                                                       ("matrix_unit", .string, true)]), true)])) { endpoints, _ in try endpoints.info() },
    ]

    /// A sparse vector's JSON: its non-zero entries, ids ascending.
    /// Cohere's embed answer: per asked-for type, one embedding per text (v1 without
    /// embedding_types: the float vectors themselves).
    static let cohereEmbedResponse = Schema.object([
        ("id", .string, true),
        ("embeddings", .oneOf([.array(.array(.number)),
                               .object([("float", .array(.array(.number)), false), ("base64", .array(.string), false),
                                        ("int8", .array(.array(.integer)), false), ("uint8", .array(.array(.integer)), false),
                                        ("binary", .array(.array(.integer)), false), ("ubinary", .array(.array(.integer)), false)])]), true),
        ("texts", .array(.string), true),
        ("meta", .object([("api_version", .object([("version", .string, true)]), true),
                          ("billed_units", .object([("input_tokens", .integer, true)]), true)]), true),
        ("response_type", .enumeration(["embeddings_floats", "embeddings_by_type"]), true)])

    static let sparseVector = Schema.array(.object([("index", .integer, true), ("value", .number, true)]))

    /// Paths served outside the table (no request body): probes, metrics, the documents. Only
    /// /metrics needs the API key.
    static let plain: [(method: String, path: String, summary: String)] = [
        ("GET", "/health", "200 once the models are loaded, 503 while loading or after a load failure."),
        ("GET", "/metrics", "Prometheus text."),
        ("GET", "/openapi.json", "This document."),
        ("GET", "/docs", "An HTML page that renders this document."),
    ]

    /// The methods each path answers, for 405's Allow header: every GET route answers HEAD too.
    static let methodsByPath: [String: [String]] = {
        var methods: [String: [String]] = [:]
        for (method, path) in all.map({ ($0.method.rawValue, $0.path) }) + plain.map({ ($0.method, $0.path) }) {
            methods[path, default: []].append(method)
            if method == "GET" { methods[path, default: []].append("HEAD") }
        }
        return methods
    }()
}

/// A JSON schema, enough for the API's request and response bodies.
indirect enum Schema: Sendable {
    case string, integer, number, boolean
    case array(Schema)
    /// Properties in order: name, schema, required.
    case object([(String, Schema, Bool)])
    case oneOf([Schema])
    /// The 200 response of another route.
    case ref(String)
    /// The schema, or null.
    case nullable(Schema)
    /// One of these strings.
    case enumeration([String])
    /// A string matching this ECMA-262 pattern, with what it means in words (the description).
    case pattern(String, meaning: String)
    /// An array of one item or more.
    case nonEmptyArray(Schema)

    /// A request's schema as its decoder reads it: an optional field may be null as well as
    /// absent (`decodeIfPresent`), in nested objects too.
    var acceptingNullForOptionalFields: Schema {
        switch self {
        case let .object(properties):
            return .object(properties.map { name, schema, required in
                (name, required ? schema.acceptingNullForOptionalFields : .nullable(schema.acceptingNullForOptionalFields), required)
            })
        case let .array(items): return .array(items.acceptingNullForOptionalFields)
        case let .nonEmptyArray(items): return .nonEmptyArray(items.acceptingNullForOptionalFields)
        case let .oneOf(schemas): return .oneOf(schemas.map(\.acceptingNullForOptionalFields))
        case let .nullable(schema): return .nullable(schema.acceptingNullForOptionalFields)
        default: return self
        }
    }

    func write(_ json: JSONWriter) {
        json.object {
            switch self {
            case .string: json.key("type"); json.string("string")
            case .integer: json.key("type"); json.string("integer")
            case .number: json.key("type"); json.string("number")
            case .boolean: json.key("type"); json.string("boolean")
            case let .array(items): json.key("type"); json.string("array"); json.key("items"); items.write(json)
            case let .object(properties):
                json.key("type"); json.string("object")
                json.key("properties")
                json.object { for (name, schema, _) in properties { json.key(name); schema.write(json) } }
                let required = properties.filter(\.2).map(\.0)
                if !required.isEmpty { json.key("required"); json.array { for name in required { json.string(name) } } }
            case let .oneOf(schemas): json.key("oneOf"); json.array { for schema in schemas { schema.write(json) } }
            case let .ref(path): json.key("$ref"); json.string("#/components/schemas/" + Self.componentName(path))
            case let .nullable(schema):
                json.key("oneOf"); json.array { schema.write(json); json.object { json.key("type"); json.string("null") } }
            case let .enumeration(values):
                json.key("type"); json.string("string"); json.key("enum"); json.array { for value in values { json.string(value) } }
            case let .pattern(pattern, meaning):
                json.key("type"); json.string("string"); json.key("pattern"); json.string(pattern)
                json.key("description"); json.string(meaning)
            case let .nonEmptyArray(items):
                json.key("type"); json.string("array"); json.key("items"); items.write(json); json.key("minItems"); json.number(1)
            }
        }
    }

    /// The component name of a route's response ("/v1/embeddings" → "v1_embeddings_response").
    static func componentName(_ path: String) -> String {
        path.split(separator: "/").joined(separator: "_") + "_response"
    }
}

/// A request type that describes its JSON body: next to its fields, so the OpenAPI document
/// changes with them.
protocol Documented: Decodable, Sendable {
    static var schema: Schema { get }
}

/// The OpenAPI 3.1 document of this server's routes: with `requiresKey` (--api-key), the routes
/// of the table and /metrics declare the bearer key, else no route does; with `models` (once
/// they are loaded), a route that needs a head (`Route.needs`) is listed only where one of them
/// has it. So a client generated from the document, or a schema-driven test, sees the API this
/// server answers.
func openAPIDocument(version: String, requiresKey: Bool, models: [ServedModel]?) -> [UInt8] {
    let routes = Route.all.filter { route in
        guard let needs = route.needs, let models else { return true }
        return models.contains { needs.isServed(by: $0) }
    }
    let json = JSONWriter()
    let errorTEI = Schema.object([("error", .string, true), ("error_type", .string, true)])
    let errorOpenAI = Schema.object([("error", .object([("message", .string, true), ("type", .string, true), ("param", .nullable(.string), true),
                                                        ("code", .nullable(.string), true)]), true)])
    // The API key, when --api-key sets one: every route of the table and /metrics.
    let security = { (json: JSONWriter, keyed: Bool) in
        json.key("security"); json.array { if keyed && requiresKey { json.object { json.key("apiKey"); json.array {} } } }
    }
    /// The responses of an operation without a JSON body of its own: 200, and the statuses
    /// `others` names (401 where it takes the key).
    let bodiless = { (json: JSONWriter, ok: String, keyed: Bool, others: [(String, String)]) in
        json.key("responses")
        json.object {
            json.key("200"); json.object { json.key("description"); json.string(ok) }
            for (status, description) in (keyed && requiresKey ? [("401", "Missing or wrong API key.")] : []) + others {
                json.key(status); json.object { json.key("description"); json.string(description) }
            }
        }
    }
    // Every GET route answers HEAD: the GET's status and headers, no body.
    let head = { (json: JSONWriter, keyed: Bool, others: [(String, String)]) in
        json.key("head")
        json.object {
            json.key("summary"); json.string("As GET, without the body.")
            security(json, keyed)
            bodiless(json, "The GET's status and headers, no body.", keyed, others)
        }
    }
    json.object {
        json.key("openapi"); json.string("3.1.0")
        json.key("info")
        json.object { json.key("title"); json.string("SwiftBERT"); json.key("version"); json.string(version) }
        json.key("paths")
        json.object {
            let paths = (routes.map(\.path) + Route.plain.map(\.path)).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
            for path in paths {
                json.key(path)
                json.object {
                    for route in routes where route.path == path {
                        json.key(route.method.rawValue.lowercased())
                        json.object {
                            json.key("summary"); json.string(route.summary)
                            security(json, true)
                            if let request = route.request {
                                json.key("requestBody")
                                json.object {
                                    json.key("required"); json.bool(true)
                                    json.key("content"); json.object { json.key("application/json"); json.object { json.key("schema"); request.schema.acceptingNullForOptionalFields.write(json) } }
                                }
                            }
                            json.key("responses")
                            json.object {
                                json.key("200"); json.object {
                                    json.key("description"); json.string("OK")
                                    json.key("content"); json.object { json.key("application/json"); json.object { json.key("schema"); route.response.write(json) } }
                                }
                                let error = route.shape == .openAI ? errorOpenAI : errorTEI
                                if requiresKey {
                                    json.key("401"); json.object {
                                        json.key("description"); json.string("Missing or wrong API key.")
                                        json.key("content"); json.object { json.key("application/json"); json.object { json.key("schema"); error.write(json) } }
                                    }
                                }
                                json.key("default"); json.object {
                                    json.key("description"); json.string("An error: 4xx for the client's fault (the message says what to change), 503 when retrying later helps.")
                                    json.key("content"); json.object { json.key("application/json"); json.object { json.key("schema"); error.write(json) } }
                                }
                            }
                        }
                        if route.method == .get { head(json, true, [("default", "An error, as GET's.")]) }
                    }
                    for route in Route.plain where route.path == path {
                        let keyed = route.path == "/metrics"
                        let others = route.path == "/health" ? [("503", "Loading, or the load failed (the body says which).")] : []
                        json.key(route.method.lowercased())
                        json.object {
                            json.key("summary"); json.string(route.summary)
                            security(json, keyed)
                            bodiless(json, "OK", keyed, others)
                        }
                        head(json, keyed, others)
                    }
                }
            }
        }
        json.key("components")
        json.object {
            if requiresKey {
                json.key("securitySchemes")
                json.object {
                    json.key("apiKey")
                    json.object {
                        json.key("type"); json.string("http"); json.key("scheme"); json.string("bearer")
                        json.key("description"); json.string("`Authorization: Bearer KEY` (the scheme in any case): the key of --api-key or $SWIFTBERT_API_KEY.")
                    }
                }
            }
            json.key("schemas")
            json.object {
                // Every route's, listed or not: the root's answer refers to /predict's and /rerank's.
                for route in Route.all where route.method == .post || route.path == "/v1/models" {
                    if case .ref = route.response { continue }
                    json.key(Schema.componentName(route.path)); route.response.write(json)
                }
            }
        }
    }
    return json.bytes
}

/// GET /openapi.json's body: every route of the table while the models load, then the routes
/// they answer, written once.
final class OpenAPIDocuments: @unchecked Sendable {
    private let requiresKey: Bool
    private let registry: ModelRegistry
    private let whileLoading: [UInt8]
    private let lock = NSLock()
    private var served: [UInt8]?

    init(requiresKey: Bool, registry: ModelRegistry) {
        (self.requiresKey, self.registry) = (requiresKey, registry)
        whileLoading = openAPIDocument(version: Endpoints.version, requiresKey: requiresKey, models: nil)
    }

    var current: [UInt8] {
        guard let models = registry.models else { return whileLoading }
        lock.lock(); defer { lock.unlock() }
        if let served { return served }
        let document = openAPIDocument(version: Endpoints.version, requiresKey: requiresKey, models: models)
        served = document
        return document
    }
}
#endif
