#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import Synchronization
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
    /// which the HTTP handlers need free), shared fairly among clients (`FairLanes`).
    /// Two sets of lanes, by the request body's size: tokenising takes time linear in the bytes
    /// (docs/robustness.md), so a small body never waits behind a large one's work, and clients
    /// sending large bodies, however many, hold at most the large lanes; among them, a client
    /// holds at most its share once another waits.
    private static let laneCount = max(2, ProcessInfo.processInfo.activeProcessorCount)
    private static let smallLanes = FairLanes(label: "bert-serve-requests-small", count: laneCount) {
        ServerMetrics.requestsWaitingForALane(lanes: "small", $0)
    }
    private static let largeLanes = FairLanes(label: "bert-serve-requests-large", count: laneCount) {
        ServerMetrics.requestsWaitingForALane(lanes: "large", $0)
    }
    /// The largest body that takes a small lane: about a millisecond of tokenising at worst.
    static let smallBodyBytes = 16 << 10

    /// Runs `body` on one of the lanes (by the size of the request's body: `RequestBody.bytes`;
    /// in its client's turn: `RequestBody.client`) and returns its result. The request's deadline
    /// goes with it: tokenising (`encode`, /tokenize) checks it before each text, so that a
    /// request that waited for a lane, or whose texts take long to decode and tokenise, ends at
    /// its deadline. (Counts and sizes are checked first: a 413 says more than a 503.) So does
    /// its client's going (the task is cancelled: Handler.respond): a job still waiting for a
    /// lane is skipped, and one running stops at its next text, instead of holding a lane that
    /// the same client's next request waits for.
    func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let lanes = RequestBody.bytes <= Self.smallBodyBytes ? Self.smallLanes : Self.largeLanes
        let end = RequestEnd(deadline: RequestDeadline.current)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lanes.submit(client: RequestBody.client) {
                    guard !end.clientGone else { return continuation.resume(throwing: CancellationError()) }
                    RequestDeadline.onThisThread = end
                    continuation.resume(with: Result { try body() })
                    RequestDeadline.onThisThread = nil
                }
            }
        } onCancel: {
            end.clientHasGone()
        }
    }

    func models() throws -> [ServedModel] {
        guard let models = registry.models else {
            throw APIError.overloaded("the models are still loading; retry when GET /health answers 200")
        }
        return models
    }

    /// The model a request names (its name, an alias, or a Hugging Face id ending in either);
    /// nil picks the first model given to `bert serve`.
    func model(_ name: String?) throws -> ServedModel {
        let models = try models()
        guard let name else { return models[0] }
        if let model = models.first(where: { $0.answers(to: name) }) { return model }
        throw APIError.unknownModel(name, available: models.map(\.name))
    }

    /// TEI's truncation_direction: "Right" (default) cuts the end of a long text, "Left" its start.
    func truncatesLeft(_ direction: String?) throws -> Bool {
        switch direction?.lowercased() {
        case nil, "right": return false
        case "left": return true
        case _?:
            throw APIError.invalid("truncation_direction must be \"Left\" or \"Right\"; got \"\(direction ?? "")\"", param: "truncation_direction")
        }
    }

    func checkCount(_ count: Int, param: String = "inputs") throws {
        guard count > 0 else { throw APIError.invalid("the input is empty; send at least one text", param: param) }
        guard count <= configuration.maxInputs else {
            throw APIError.invalid("\(count) inputs in one request; at most \(configuration.maxInputs) sequences, counted after chunking, are allowed (--max-inputs)", param: param, status: 413)
        }
    }

    /// 413 before tokenising when the sequences could never fit the model's queue: waiting never
    /// helps, so this answer comes before the deadline's 503 (which says retrying is safe).
    func checkFitsTheQueue(_ count: Int, model: ServedModel) throws {
        let limits = model.batcher.limits
        guard count > limits.perClientCapacity else { return }
        throw mapFailure(Batcher.Failure.largerThanQueue(sequences: count, capacity: limits.queueCapacity, perClient: limits.perClientCapacity), model: model)
    }

    /// The most bytes a Float takes in JSON ("-1.17549435e-38") and its comma.
    static let floatJSONBytes = 16

    /// The most bytes one sparse weight takes in JSON: `{"index":` (9), an Int32 (10 digits),
    /// `,"value":` (9), a Float at its longest (15), `}` and a comma.
    static let sparseEntryJSONBytes = 45

    /// An upper bound on sparse vectors' JSON: their weights, and each vector's brackets and comma.
    static func sparseJSONBytes(_ vectors: [SparseVector]) -> Int {
        vectors.reduce(0) { $0 + $1.indices.count * sparseEntryJSONBytes + 3 }
    }

    /// An upper bound on per-token vectors' JSON (/embed_all's, every token; ColBERT's, at most
    /// every token): `dimension` numbers per token, each vector and each text with its brackets
    /// and comma.
    static func multiVectorJSONBytes(_ sequences: [[Int32]], dimension: Int) -> Int {
        sequences.reduce(0) { $0 + $1.count * (dimension * floatJSONBytes + 3) + 3 }
    }

    /// 413 when an answer of `size` bytes (an upper bound, computed before it is built) is over
    /// --max-response-bytes: building it would hold that much memory per request.
    func checkResponseSize(_ size: Int, route: String, of what: String) throws {
        guard size > configuration.maxResponseBytes else { return }
        throw APIError.invalid("the answer of \(route) would be up to \(size) bytes (\(what)), over the limit of \(configuration.maxResponseBytes) bytes (--max-response-bytes); send fewer or shorter texts per request", status: 413)
    }

    /// `allowing`: how this route's request asks for truncation.
    func tooLong(_ index: Int, _ count: Int, _ limit: Int, param: String, allowing: String = "send \"truncate\": true") -> APIError {
        APIError.invalid("input \(index) is \(count) tokens long, over the model's limit of \(limit); shorten it or \(allowing)", param: param, status: 413)
    }

    /// Token ids of each text (or text pair), after `prompt`, cut to `limit` tokens (default: the
    /// model's) when `truncate`, else refused (413) when too long; a cut from the left takes the
    /// text's start and keeps the prompt.
    func encode(_ texts: [(text: String, pair: String?)], model: ServedModel, truncate: Bool, fromLeft: Bool = false,
                prompt: String? = nil, param: String = "inputs", limit: Int? = nil,
                allowing: String = "send \"truncate\": true") throws -> [Encoding] {
        try checkCount(texts.count, param: param)
        try checkFitsTheQueue(texts.count, model: model)
        let limit = min(limit ?? model.maxLength, model.maxLength)
        let kept = prompt?.unicodeScalars.count ?? 0
        return try texts.enumerated().map { index, item in
            try RequestDeadline.check()
            let encoding = model.tokenizer.encode((prompt ?? "") + item.text, pair: item.pair, maxLength: truncate ? limit : nil,
                                                  truncatesLeft: fromLeft, keepingStart: kept)
            guard encoding.count <= limit else { throw tooLong(index, encoding.count, limit, param: param, allowing: allowing) }
            return encoding
        }
    }

    /// Token-id lists as given: this model's ids, checked against its vocabulary.
    func checkedIds(_ lists: [[Int]], model: ServedModel, truncate: Bool, fromLeft: Bool, param: String) throws -> [[Int32]] {
        try checkCount(lists.count, param: param)
        try checkFitsTheQueue(lists.count, model: model)
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

    /// The prompt a request selects by name, as sentence-transformers does; nil: the server's
    /// --default-prompt or --default-prompt-name, else the model's default prompt.
    func prompt(_ name: String?, model: ServedModel) throws -> String? {
        do {
            return try model.embedder.prompt(for: name.map { .init(promptName: $0) } ?? model.unnamedPrompt)
        } catch let SwiftBERTError.invalidInput(reason) {
            throw APIError.invalid(reason, param: "prompt_name")
        }
    }

    /// Tokens of `prompt` at the start of a framed text, [CLS] included (what include_prompt false leaves out).
    func promptLength(_ prompt: String?, model: ServedModel) -> Int {
        model.embedder.promptLength(prompt, maxLength: model.maxLength)
    }

    /// `head` over `sequences` through the model's batcher, its failures as API errors.
    func run<H: Head>(_ sequences: [[Int32]], typeIds: [[Int32]]? = nil, head: H, promptLength: Int = 0,
                              on model: ServedModel) async throws -> [H.Output] {
        do {
            // What is left of the request's deadline, after decoding and tokenising.
            let timeout = RequestDeadline.current.map { ContinuousClock.now.duration(to: $0) } ?? configuration.requestTimeout
            guard timeout > .zero else { throw RequestTimeout() }
            return try await model.batcher.run(sequences, typeIds: typeIds, head: head,
                                               batch: HeadBatch(threads: model.loaded.encoder.threads, promptLength: promptLength),
                                               timeout: timeout)
        } catch {
            throw mapFailure(error, model: model)
        }
    }

    func mapFailure(_ error: Error, model: ServedModel) -> Error {
        switch error {
        case let Batcher.Failure.queueFull(capacity):
            metrics.rejected(model: model.name)
            return APIError.overloaded("the queue of \(model.name) is full (\(capacity) sequences waiting); the request was not processed; retry after a moment")
        case let Batcher.Failure.largerThanQueue(sequences, capacity, perClient):
            return APIError.invalid("the request has \(sequences) inputs (sequences, counted after chunking), more than the \(perClient) one client may have in the queue of \(model.name) (three quarters of --queue-capacity \(capacity)); send at most \(perClient) per request", status: 413)
        case let Batcher.Failure.clientShareFull(waiting, perClient):
            metrics.rejected(model: model.name)
            return APIError(status: 429, message: "this client already has \(waiting) sequences waiting in the queue of \(model.name), and one client may have at most \(perClient) (three quarters of --queue-capacity: the rest stays for other clients); the request was not processed; retry when your earlier requests are answered",
                            type: "rate_limit_error", code: "too_many_requests", retryAfter: 1)
        case let Batcher.Failure.longerThanTimeout(tokens, tokensPerSecond, limit):
            let fits = Int(tokensPerSecond * limit * 0.9)
            return APIError.invalid("the request's \(tokens) tokens need more than --request-timeout (\(limit) s) of \(model.name)'s time: it runs at most \(Int(tokensPerSecond)) tokens a second here; the request was not processed; send at most about \(fits) tokens per request (texts × their tokens), or start the server with a longer --request-timeout", status: 413)
        case let Batcher.Failure.behindTooMuchWork(seconds, limit):
            metrics.rejected(model: model.name)
            let wait = max(1, Int((seconds - limit).rounded(.up)))
            return APIError(status: 503, message: "\(model.name) has more work queued than it could finish with this request within --request-timeout (\(limit) s): at least \(String(format: "%.1f", seconds)) s; the request was not processed; retry after about \(wait) s, or send fewer texts per request",
                            type: "server_overloaded", code: "overloaded", retryAfter: wait)
        case let Batcher.Failure.wouldMakeOthersLate(seconds, limit):
            metrics.rejected(model: model.name)
            let wait = max(1, Int(seconds.rounded(.up)))
            return APIError(status: 503, message: "taking this request now would make requests queued before it at \(model.name) miss --request-timeout (\(limit) s); the request was not processed; retry after about \(wait) s, or send fewer texts per request",
                            type: "server_overloaded", code: "overloaded", retryAfter: wait)
        case Batcher.Failure.stopped:
            return APIError.overloaded("the server is shutting down; the request was not processed")
        case is RequestTimeout:
            return APIError.timedOut(configuration.requestTimeout)
        case let SwiftBERTError.invalidInput(reason):
            return APIError.invalid(reason)
        default:
            return error
        }
    }

    /// Sentence vectors for token-id sequences: the model's pooling and Dense modules, then the
    /// cut to `dimensions` (Matryoshka) and L2 normalisation when asked.
    func sentenceVectors(_ sequences: [[Int32]], model: ServedModel, promptLength: Int, dimensions: Int?,
                                 normalize: Bool) async throws -> [[Float]] {
        if let dimensions, dimensions < 1 || dimensions > model.dimension {
            throw APIError.invalid("dimensions must be between 1 and \(model.dimension), the model's dimension; got \(dimensions)", param: "dimensions")
        }
        var head = model.embedder.head
        (head.dimensions, head.normalize) = (dimensions, normalize)
        return try await run(sequences, head: head, promptLength: promptLength, on: model)
    }

    /// Texts of a /embed_sparse or /embed_all request, tokenised.
    func tokenRequest(_ body: [UInt8]) async throws -> (ServedModel, [[Int32]]) {
        let (_, model, sequences, _) = try await textRequest(TEITokenRequest.self, body)
        return (model, sequences)
    }

    /// A request of a text route, decoded, with its texts tokenised and its prompt's length.
    func textRequest<Request: TextRouteRequest>(_ type: Request.Type, _ body: [UInt8]) async throws
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

    func classifier(of model: ServedModel, route: String) throws -> TextClassifier {
        guard let classifier = model.classifier else {
            throw APIError.invalid("\(model.name) has no sequence-classification head, so it cannot serve \(route); serve a *ForSequenceClassification checkpoint (for /rerank, a cross-encoder)", param: "model", status: 422)
        }
        return classifier
    }

    /// Classifier logits for texts or (text, pair) items, in order.
    func logits(_ items: [(text: String, pair: String?)], model: ServedModel, classifier: TextClassifier,
                        truncate: Bool, fromLeft: Bool, param: String) async throws -> (rows: [[Float]], tokens: Int) {
        let encodings = try await offload { [self] in
            try encode(items, model: model, truncate: truncate, fromLeft: fromLeft, param: param)
        }
        let rows = try await run(encodings.map(\.ids), typeIds: encodings.map(\.typeIds), head: classifier.head, on: model)
        return (rows, encodings.reduce(0) { $0 + $1.count })
    }

    /// Cross-encoder scores of each document against the query, in document order, and the tokens read.
    func rerankScores(query: String, documents: [String], model: ServedModel, truncate: Bool, fromLeft: Bool,
                              raw: Bool, param: String) async throws -> (scores: [Float], tokens: Int) {
        let classifier = try classifier(of: model, route: "reranking")
        guard model.reranks else {
            throw APIError.invalid("\(model.name) has \(classifier.labels.count) labels; reranking needs a cross-encoder with one (use /predict for this model)", param: "model", status: 422)
        }
        let (rows, tokens) = try await logits(documents.map { (query, $0) }, model: model, classifier: classifier, truncate: truncate,
                                              fromLeft: fromLeft, param: param)
        return (rows.map { raw ? $0[0] : sigmoid($0[0]) }, tokens)
    }
}

/// The request this task answers, as far as its CPU work's lanes need it (Handler.respond sets
/// both; `Endpoints.offload` reads them).
enum RequestBody {
    /// The size of its body: which set of lanes.
    @TaskLocal static var bytes = 0
    /// Whose turn on the lanes it takes: its sender's address (the peer's, or the client a
    /// trusted proxy names), an IPv6 sender's /64 (`TrustedProxies.turn`).
    @TaskLocal static var client = ""
}

/// When a request must be answered: --request-timeout after its body arrived. It covers
/// decoding, tokenising and the wait for the model, not only the queue.
enum RequestDeadline {
    /// The deadline of the request this task answers (Handler.respond sets it).
    @TaskLocal static var current: ContinuousClock.Instant?

    /// The end of the request whose CPU work this thread runs (`offload` sets it).
    static var onThisThread: RequestEnd? {
        get { Thread.current.threadDictionary[key] as? RequestEnd }
        set { Thread.current.threadDictionary[key] = newValue }
    }
    private static let key = "swiftbert.request-end"

    /// Throws RequestTimeout once this thread's request is past its deadline, CancellationError
    /// once its client has gone.
    static func check() throws {
        guard let end = onThisThread else { return }
        if end.clientGone { throw CancellationError() }
        if let deadline = end.deadline, ContinuousClock.now >= deadline { throw RequestTimeout() }
    }
}

/// What ends a request's CPU work before it is done: its deadline, or its client's going.
final class RequestEnd: Sendable {
    let deadline: ContinuousClock.Instant?
    private let gone = Atomic<Bool>(false)

    init(deadline: ContinuousClock.Instant?) { self.deadline = deadline }

    var clientGone: Bool { gone.load(ordering: .relaxed) }
    func clientHasGone() { gone.store(true, ordering: .relaxed) }
}



/// Bytes of `text` as a JSON string's content (escapes counted at their longest, \\u00XX).
func jsonEscapedLength(_ text: String) -> Int {
    var length = 0
    for byte in text.utf8 { length += byte < 0x20 ? 6 : (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") ? 2 : 1) }
    return length
}

/// Characters of `value` in decimal, its sign included.
func decimalLength(_ value: Int) -> Int {
    var length = value < 0 ? 2 : 1, rest = value.magnitude
    while rest >= 10 { rest /= 10; length += 1 }
    return length
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
