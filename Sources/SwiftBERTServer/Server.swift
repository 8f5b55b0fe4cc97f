#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import ServiceLifecycle
import SwiftBERT

/// `bert serve`: the HTTP server on Hummingbird. It listens at once (GET /health answers 503
/// until the models are loaded), routes requests to `Endpoints`, and on SIGTERM or SIGINT
/// stops accepting, answers every request it accepted, and returns.
public enum BertServer {
    /// Runs until SIGTERM/SIGINT. `report` gets the lines a user should see (listening, ready,
    /// stopped); the caller prints them. Throws when the server cannot listen, and when a model
    /// cannot be loaded (after closing the port: nothing could be served).
    public static func run(_ configuration: ServerConfiguration, report: @escaping @Sendable (String) -> Void) async throws {
        guard !configuration.models.isEmpty else { throw SwiftBERTError.invalidInput(reason: "no model to serve; give --model NAME[,NAME...]") }
        let metrics = ServerMetrics.bootstrap()
        let registry = ModelRegistry()
        let endpoints = Endpoints(registry: registry, configuration: configuration, metrics: metrics)
        let handler = Handler(configuration: configuration, metrics: metrics)
        let router = makeRouter(endpoints, handler: handler, configuration: configuration, metrics: metrics, registry: registry)

        var logger = Logger(label: "bert-serve")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning

        // Loading maps and repacks weights for seconds: a thread of its own, not the event loops.
        // It yields nil when the models are ready, or the error that stops the server.
        let (loadOutcome, loaded) = AsyncStream.makeStream(of: (any Error)?.self)
        let loader = Thread {
            do {
                let started = Date()
                let publicNames = ServedModel.publicNames(configuration.models)
                let models = try configuration.models.enumerated().map { index, given in
                    try ServedModel(given: given, name: publicNames[index], alias: index == 0 ? configuration.servedModelName : nil,
                                    configuration: configuration, metrics: metrics)
                }
                registry.set(.ready(models))
                let names = models.map { "\($0.name) (\($0.loaded.encoder.precision.rawValue), \($0.loaded.heads.map(\.rawValue).joined(separator: " ")))" }
                report("ready in \((Date().timeIntervalSince(started) * 10).rounded() / 10) s: \(names.joined(separator: ", "))")
                loaded.yield(nil)
            } catch {
                registry.set(.failed("\(error)"))
                loaded.yield(error)
            }
            loaded.finish()
        }
        loader.start()

        // At most --max-connections open at once; more wait in the listen backlog (not refused) until
        // one closes. A response that says `Connection: close` (408) closes its connection once written.
        let app = Application(
            router: router,
            // The idle timeout closes silent connections; a silent body gets its 408 first.
            server: .http1(configuration: .init(additionalChannelHandlers: [ExpectContinue(bodyLimit: configuration.bodyLimit), ParseErrorBody(), ClientGone(),
                                                                            CloseAfterResponse(), WriteDeadline(configuration.writeTimeout)],
                                                idleTimeout: .seconds(Int64(max(1, configuration.requestTimeout.seconds * 2,
                                                                                configuration.readTimeout.seconds + 5))))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "SwiftBERT",
                                 availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                report("listening on http://\(configuration.host):\(port)")
            },
            logger: logger)
        // Graceful shutdown on SIGTERM and SIGINT, as Hummingbird's runService, and on a model that
        // cannot load: nothing could be served, so the port closes and the caller gets the error
        // (a supervisor restarts, or the user fixes --model). A library never calls exit.
        // ServiceGroup shuts its services down last to first: the watch hears of the shutdown
        // first, and starts the --shutdown-grace clock.
        let (shutdownStarted, shutdown) = AsyncStream.makeStream(of: Void.self)
        let services = ServiceGroup(configuration: .init(services: [app, ShutdownWatch(started: shutdown)],
                                                         gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let loadFailure = Task { () -> (any Error)? in
            for await case let error? in loadOutcome {
                await services.triggerGracefulShutdown()
                return error
            }
            return nil
        }
        let serving = Task { try await services.run() }
        let grace = configuration.shutdownGrace
        let graceOver = Task { () -> Bool in
            for await _ in shutdownStarted {
                try? await Task.sleep(for: grace)
                return !Task.isCancelled
            }
            return false
        }
        // Whichever comes first: every accepted request answered, or the grace over. A request
        // that outlives the grace (a client trickling its body, a long tokenisation) cannot hold
        // the process: it is cut, and the caller's process ends.
        let ending = await first(serving, graceOver)
        graceOver.cancel()
        for model in registry.models ?? [] { model.batcher.stop() }
        switch ending {
        case let .finished(result):
            try result.get()
            loadFailure.cancel()
            if let error = await loadFailure.value { throw error }
            report("stopped after answering every accepted request")
        case .graceOver:
            serving.cancel()
            loadFailure.cancel()
            let cut = handler.inFlight.count
            report("stopped after --shutdown-grace \(grace.seconds) s: cut \(cut) request\(cut == 1 ? "" : "s") still in flight")
        }
    }

    enum Ending { case finished(Result<Void, any Error>), graceOver }

    /// The first of: `serving` returning, or `graceOver` returning true.
    static func first(_ serving: Task<Void, any Error>, _ graceOver: Task<Bool, Never>) async -> Ending {
        let once = ResumeOnce<Ending>()
        return await withCheckedContinuation { continuation in
            once.set(continuation)
            Task { once.resume(.finished(await serving.result)) }
            Task { if await graceOver.value { once.resume(.graceOver) } }
        }
    }

    static func makeRouter(_ endpoints: Endpoints, handler: Handler, configuration: ServerConfiguration, metrics: ServerMetrics,
                           registry: ModelRegistry) -> Router<ClientRequestContext> {
        let router = Router(context: ClientRequestContext.self)
        if let origin = configuration.corsOrigin {
            router.add(middleware: CORSMiddleware(allowOrigin: origin == "*" ? .all : .custom(origin)))
        }
        router.add(middleware: UnroutedRequests())
        for route in Route.all {
            let respond: @Sendable (Request, ClientRequestContext) async -> Response = { request, context in
                let turn = configuration.trustedProxies.turn(peer: context.peer, forwardedFor: request.headers[values: .xForwardedFor])
                return await handler.respond(request, from: turn, on: context.connection, route: route.path, shape: route.shape,
                                             readsBody: route.method == .post) {
                    try await route.endpoint(endpoints, $0)
                }
            }
            switch route.method {
            case .get:
                router.get(RouterPath(route.path), use: respond)
                router.head(RouterPath(route.path)) { withoutBody(await respond($0, $1)) }
            case .post: router.post(RouterPath(route.path), use: respond)
            }
        }
        // Probes, scrapers and the documents: no API key, no request metrics of their own.
        // Each answers HEAD as GET without the body.
        func get(_ path: String, _ respond: @escaping @Sendable (Request, ClientRequestContext) async -> Response) {
            router.get(RouterPath(path), use: respond)
            router.head(RouterPath(path)) { withoutBody(await respond($0, $1)) }
        }
        get("/health") { _, _ in
            switch registry.current {
            case .ready: return jsonResponse(200, Array(#"{"status":"ok"}"#.utf8))
            case .loading: return jsonResponse(503, Array(#"{"status":"loading"}"#.utf8))
            case let .failed(message):
                let json = JSONWriter()
                json.object { json.key("status"); json.string("failed"); json.key("error"); json.string(message) }
                return jsonResponse(503, json.bytes)
            }
        }
        get("/metrics") { request, _ in
            if let refusal = handler.refusal(request, shape: .tei) { return refusal }
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: metrics.prometheusText())))
        }
        let documents = OpenAPIDocuments(requiresKey: configuration.apiKey != nil, registry: registry)
        get("/openapi.json") { _, _ in jsonResponse(200, documents.current) }
        get("/docs") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: apiDocsPage)))
        }
        return router
    }
}

/// Hummingbird's basic context and the peer's IP address. Whose turn a request's CPU work takes
/// (`FairLanes`) is the peer, or, when the peer is one of --trusted-proxies, the client its
/// `X-Forwarded-For` names, an IPv6 client by its /64 (`TrustedProxies.turn`, in the router,
/// where the headers are): behind a proxy every connection has the proxy's address, and all its
/// clients would share one turn.
struct ClientRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let peer: String
    /// The request's connection, whose `ClientGone` cancels the request's work when the client goes.
    let connection: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress?.ipAddress ?? ""
        connection = source.channel
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

/// A request no route takes: 405 with the methods its path answers (Allow), or 404; JSON either
/// way, as every other error of this server.
struct UnroutedRequests: RouterMiddleware {
    func handle(_ request: Request, context: ClientRequestContext,
                next: (Request, ClientRequestContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let path = request.uri.path
            let shape = Route.all.first { $0.path == path }?.shape ?? (path.hasPrefix("/v1/") ? .openAI : .tei)
            if let methods = Route.methodsByPath[path] {
                var response = Handler.errorResponse(APIError(status: 405, message: "\(path) takes \(methods.joined(separator: ", ")), not \(request.method.rawValue)", type: "invalid_request_error"), shape: shape)
                response.headers[.allow] = methods.joined(separator: ", ")
                return response
            }
            return Handler.errorResponse(APIError(status: 404, message: "no route \(request.method.rawValue) \(path); GET /openapi.json lists every route", type: "invalid_request_error", code: "not_found"), shape: shape)
        }
    }
}

/// What every API route does around its endpoint: the API key, the body limit, the error shape,
/// and the request metrics.
struct Handler: Sendable {
    let configuration: ServerConfiguration
    let metrics: ServerMetrics
    /// API requests being answered: those --shutdown-grace cuts when it runs out.
    let inFlight = AtomicCount()

    func respond(_ request: Request, from client: String, on connection: (any Channel)? = nil, route: String, shape: ErrorShape,
                 readsBody: Bool = true, _ endpoint: @escaping @Sendable ([UInt8]) async throws -> [UInt8]) async -> Response {
        let started = ContinuousClock.now
        inFlight.add(1)
        defer { inFlight.add(-1) }
        let response: Response
        if let refusal = refusal(request, shape: shape) {
            response = refusal
        } else {
            do {
                let body = readsBody ? try await readBody(request) : []
                // --request-timeout runs from here: decoding, tokenising, the model's queue.
                let deadline = ContinuousClock.now + configuration.requestTimeout
                // A task of its own, cancelled when the connection closes: a client that has gone
                // (ClientGone) leaves the model's queue, instead of holding it for others.
                let work = Task {
                    try await RequestBody.$bytes.withValue(body.count) {
                        try await RequestBody.$client.withValue(client) {
                            try await RequestDeadline.$current.withValue(deadline) { try await endpoint(body) }
                        }
                    }
                }
                let watcher = try? await connection?.pipeline.handler(type: ClientGone.self).get()
                watcher?.cancelWhenGone { work.cancel() }
                defer { watcher?.answered() }
                response = jsonResponse(200, try await withTaskCancellationHandler { try await work.value } onCancel: { work.cancel() })
            } catch is CancellationError {
                // No one reads it; the metrics count it as nginx logs a client that closed: 499.
                response = Self.errorResponse(APIError(status: 499, message: "the client closed the connection before its answer; the request was dropped", type: "invalid_request_error"), shape: shape)
            } catch let error as APIError {
                response = Self.errorResponse(error, shape: shape)
            } catch is RequestTimeout {
                response = Self.errorResponse(.timedOut(configuration.requestTimeout), shape: shape)
            } catch {
                response = Self.errorResponse(APIError(status: 500, message: "internal error: \(error)", type: "server_error"), shape: shape)
            }
        }
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code, duration: started.duration(to: .now))
        return response
    }

    /// The whole body, as valid UTF-8, within --read-timeout of the request's head. Whatever goes
    /// wrong reading it is the client's doing: too large (413), too slow (408: a body that
    /// trickles or stalls would hold a connection, and the shutdown, for as long as the client
    /// likes), cut short of its Content-Length or a broken stream (400), not UTF-8 (400).
    private func readBody(_ request: Request) async throws -> [UInt8] {
        let limit = configuration.bodyLimit
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > limit { throw tooLarge(declared) }
        let received = AtomicCount()
        var buffer: ByteBuffer
        do {
            buffer = try await withDeadline(configuration.readTimeout) {
                var buffer = ByteBuffer()
                for try await part in request.body {
                    guard buffer.readableBytes + part.readableBytes <= limit else { throw NIOTooManyBytesError(maxBytes: limit) }
                    buffer.writeImmutableBuffer(part)
                    received.add(part.readableBytes)
                }
                return buffer
            }
        } catch is NIOTooManyBytesError {
            throw tooLarge(nil)
        } catch is DeadlinePassed {
            var error = APIError(status: 408, message: "the request body did not arrive within \(configuration.readTimeout.seconds) s (--read-timeout): \(received.count) bytes came\(declared.map { " of its Content-Length of \($0)" } ?? ""); send the whole body without pausing", type: "invalid_request_error", code: "request_timeout")
            error.closesConnection = true  // the rest of the body is not read
            throw error
        } catch {
            throw APIError.invalid("the request body could not be read to its end\(declared.map { " (Content-Length \($0) bytes)" } ?? ""): the client closed or cut the stream (\(error)); send the whole body", status: 400)
        }
        let body = buffer.readBytes(length: buffer.readableBytes) ?? []
        if let declared, body.count < declared {
            throw APIError.invalid("the request body is \(body.count) bytes, shorter than its Content-Length of \(declared); send the whole body", status: 400)
        }
        if let offset = firstInvalidUTF8Offset(body[...]) {
            throw APIError.invalid("the request body is not valid UTF-8 (the first bad byte is at offset \(offset)); JSON must be UTF-8", status: 400)
        }
        return body
    }

    private func tooLarge(_ length: Int?) -> APIError {
        APIError.invalid("the request body\(length.map { " (\($0) bytes)" } ?? "") is over the limit of \(configuration.bodyLimit) bytes (--body-limit); send fewer or shorter inputs per request", status: 413)
    }

    /// 401 when an API key is set and the request does not carry it as `Authorization: Bearer KEY`.
    func refusal(_ request: Request, shape: ErrorShape) -> Response? {
        guard let key = configuration.apiKey else { return nil }
        if constantTimeEqual(Array(Self.bearerToken(request.headers[.authorization] ?? "").utf8), Array(key.utf8)) { return nil }
        var response = Self.errorResponse(APIError(status: 401, message: "missing or wrong API key; send the header `Authorization: Bearer KEY`",
                                              type: "invalid_request_error", code: "invalid_api_key"), shape: shape)
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    /// The credentials of `Authorization: Bearer TOKEN`; "" for any other scheme. The scheme's
    /// name is case-insensitive (RFC 9110 11.1): "bearer" and "BEARER" are Bearer too.
    static func bearerToken(_ header: String) -> String {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return "" }
        return String(parts[1].drop { $0 == " " })
    }

    static func errorResponse(_ error: APIError, shape: ErrorShape) -> Response {
        var response = jsonResponse(error.status, shape.body(error))
        if let seconds = error.retryAfter { response.headers[.retryAfter] = String(seconds) }
        if error.closesConnection { response.headers[.connection] = "close" }
        return response
    }
}

/// The GET response of a HEAD request: its status and headers, no body.
func withoutBody(_ response: Response) -> Response {
    Response(status: response.status, headers: response.headers)
}

/// A count any thread may change.
final class AtomicCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ delta: Int) { lock.withLock { value += delta } }
    var count: Int { lock.withLock { value } }
}

/// Resumes a continuation once, with the first value given; later values are dropped.
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?
    private var early: T?
    private var done = false

    func set(_ continuation: CheckedContinuation<T, Never>) {
        lock.lock()
        if let early { lock.unlock(); continuation.resume(returning: early); return }
        self.continuation = continuation
        lock.unlock()
    }

    func resume(_ value: T) {
        lock.lock()
        guard !done else { lock.unlock(); return }
        done = true
        guard let continuation else { early = value; lock.unlock(); return }
        self.continuation = nil
        lock.unlock()
        continuation.resume(returning: value)
    }
}

struct DeadlinePassed: Error {}

/// `body`'s result, or DeadlinePassed once `limit` has passed, whichever comes first; `body` is
/// then cancelled, and not waited for (a task that ignores cancellation cannot hold the caller).
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let once = ResumeOnce<Result<T, any Error>>()
    let work = Task { () -> Void in
        do { once.resume(.success(try await body())) } catch { once.resume(.failure(error)) }
    }
    let timer = Task {
        try? await Task.sleep(for: limit)
        if !Task.isCancelled { once.resume(.failure(DeadlinePassed())) }
    }
    let result = await withCheckedContinuation { once.set($0) }
    timer.cancel()
    if case .failure(is DeadlinePassed) = result { work.cancel() }
    return try result.get()
}

/// Watches for the start of a graceful shutdown (SIGTERM, SIGINT, a model that cannot load), so
/// that --shutdown-grace runs from then.
struct ShutdownWatch: Service {
    let started: AsyncStream<Void>.Continuation

    func run() async throws {
        try? await gracefulShutdown()
        started.yield()
        started.finish()
    }
}

/// After a response whose head says `Connection: close` (a 408 for a body that did not arrive),
/// closes the connection: the request's body is not read to its end, and Hummingbird would
/// otherwise wait for it before the next request. The output closes first and the input a
/// second later, so that the client reads the answer before the connection is reset.
/// Closes a connection whose client shut its sending side after a whole request and before the
/// answer: as nginx (its 499) and hyper (TEI's server) take it, the client has gone. The close
/// cancels the request's work (`Handler.respond`), so its sequences leave the model's queue
/// instead of running for no one. A client that half-closes mid-body is not gone: it gets the
/// answer for a short body (400), as before.
final class ClientGone: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    /// A request has been read to its end and its answer not yet written to its end (event loop only).
    private var awaitingAnswer = false
    /// The work of the request being answered (one at a time per connection), set by its task.
    private let lock = NSLock()
    private var cancelWork: (@Sendable () -> Void)?
    private var gone = false

    /// Calls `cancel` when the client goes (at once if it has), until `answered()`.
    func cancelWhenGone(_ cancel: @escaping @Sendable () -> Void) {
        let goneAlready = lock.withLock {
            if !gone { cancelWork = cancel }
            return gone
        }
        if goneAlready { cancel() }
    }

    func answered() { lock.withLock { cancelWork = nil } }

    private func clientWent() {
        lock.withLock { gone = true; return cancelWork.take() }?()
    }

    func channelInactive(context: ChannelHandlerContext) {
        clientWent()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end = unwrapInboundIn(data) { awaitingAnswer = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { awaitingAnswer = false }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, awaitingAnswer {
            clientWent()
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Answers `Expect: 100-continue` with `100 Continue` when the head arrives, so a client that
/// waits for it before sending its body (curl does, for bodies over 1 MiB) does not stall until
/// its own timeout (curl's is 1 s). A body declared over --body-limit gets no 100: its route
/// answers 413 at once, and the client need not send it. First of the extra handlers, so the
/// 100 goes straight to the codec, unseen by the handlers that track final answers.
final class ExpectContinue: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart
    private let bodyLimit: Int

    init(bodyLimit: Int) { self.bodyLimit = bodyLimit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case let .head(head) = unwrapInboundIn(data),
           head.headerFields[.expect]?.lowercased() == "100-continue",
           head.headerFields[.contentLength].flatMap({ Int($0) }).map({ $0 <= bodyLimit }) ?? true {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
        context.fireChannelRead(data)
    }
}

/// Gives the 400 that Hummingbird writes, empty, for a request NIO's parser cannot read (two
/// Content-Lengths, headers over 80 KiB, a garbled request line) a body that says what was
/// wrong, in TEI's error shape as unknown routes have it (no route was read).
final class ParseErrorBody: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    private var parseError: HTTPParserError?
    private var body: ByteBuffer?

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? HTTPParserError { parseError = error }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        // Hummingbird's answer to the parse error: 400, Content-Length 0 (every 400 of ours has a body).
        case var .head(response) where parseError != nil && response.status == .badRequest && response.headerFields[.contentLength] == "0":
            let bytes = ErrorShape.tei.body(.invalid(Self.message(parseError!), status: 400))
            response.headerFields[.contentLength] = "\(bytes.count)"
            response.headerFields[.contentType] = "application/json"
            body = ByteBuffer(bytes: bytes)
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case let .end(trailers) where body != nil:
            context.write(wrapOutboundOut(.body(body!)), promise: nil)
            body = nil
            parseError = nil
            context.write(wrapOutboundOut(.end(trailers)), promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }

    static func message(_ error: HTTPParserError) -> String {
        let what: String
        switch error {
        case .invalidContentLength, .unexpectedContentLength:
            what = "its Content-Length is not a single byte count (given twice, or not a number); send one Content-Length, or Transfer-Encoding: chunked"
        case .headerOverflow:
            what = "its headers are over 80 KiB, or more than 1,000; send fewer or shorter headers"
        case .invalidMethod, .invalidURL, .invalidVersion, .invalidCharactersUsed, .invalidHeaderToken, .lfExpected, .strictModeAssertion:
            what = "it is not an HTTP/1.1 request (its request line or a header is malformed: \(error)); send METHOD /path HTTP/1.1, then headers, each line ending in CRLF"
        case .invalidChunkSize, .invalidConstant:
            what = "its chunked body is malformed (\(error)); send valid chunks, or a Content-Length and the body as it is"
        default:
            what = "it could not be parsed (\(error)); send a well-formed HTTP/1.1 request"
        }
        return "the request was not read: " + what
    }
}

final class CloseAfterResponse: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    private var closing = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case let .head(head):
            closing = head.headerFields[.connection]?.lowercased() == "close"
            context.write(data, promise: promise)
        case .end where closing:
            closing = false
            let channel = context.channel
            let written = context.writeAndFlush(data)
            written.cascade(to: promise)
            written.whenComplete { _ in
                channel.close(mode: .output, promise: nil)
                channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
            }
        default:
            context.write(data, promise: promise)
        }
    }
}

/// Closes a connection whose answer has not reached its client `timeout` after its head was
/// written: a client that reads slowly or not at all would otherwise hold the answer's memory
/// (up to --max-response-bytes) and its connection for as long as it likes. Closing fails the
/// pending writes, which frees them, and ends the handler that waits on them.
final class WriteDeadline: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    private let timeout: TimeAmount
    /// The answer being written, counted so that a check of an earlier answer does nothing.
    private var answer = 0
    private var written = 0

    init(_ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head:
            answer += 1
            let this = answer, channel = context.channel
            let loop = context.eventLoop.assumeIsolatedUnsafeUnchecked()
            loop.scheduleTask(in: timeout) { [self] in
                guard written < this else { return }
                channel.close(promise: nil)
            }
            context.write(data, promise: promise)
        case .end:
            let this = answer
            let done = promise ?? context.eventLoop.makePromise()
            done.futureResult.assumeIsolatedUnsafeUnchecked().whenSuccess { [self] in written = max(written, this) }
            context.write(data, promise: done)
        default:
            context.write(data, promise: promise)
        }
    }
}

func jsonResponse(_ status: Int, _ body: [UInt8]) -> Response {
    Response(status: .init(code: status), headers: [.contentType: "application/json"],
             body: .init(byteBuffer: ByteBuffer(bytes: body)))
}

/// Equality whose time depends only on the lengths, not on where the bytes first differ.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(truncatingIfNeeded: a.count ^ b.count) | UInt8(a.count == b.count ? 0 : 1)
    for i in 0..<max(a.count, b.count) {
        difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
    }
    return difference == 0
}
#endif
