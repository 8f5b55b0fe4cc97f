#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import Hummingbird
import Logging
import NIOCore
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
        let router = makeRouter(endpoints, configuration: configuration, metrics: metrics, registry: registry)

        var logger = Logger(label: "bert-serve")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning

        // Loading maps and repacks weights for seconds: a thread of its own, not the event loops.
        // It yields nil when the models are ready, or the error that stops the server.
        let (loadOutcome, loaded) = AsyncStream.makeStream(of: (any Error)?.self)
        let loader = Thread {
            do {
                let started = Date()
                let models = try configuration.models.enumerated().map { index, name in
                    try ServedModel(name: name, alias: index == 0 ? configuration.servedModelName : nil,
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

        let app = Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: .seconds(Int64(max(1, configuration.requestTimeout.seconds * 2))))),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "SwiftBERT"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                report("listening on http://\(configuration.host):\(port)")
            },
            logger: logger)
        // Graceful shutdown on SIGTERM and SIGINT, as Hummingbird's runService, and on a model that
        // cannot load: nothing could be served, so the port closes and the caller gets the error
        // (a supervisor restarts, or the user fixes --model). A library never calls exit.
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let loadFailure = Task { () -> (any Error)? in
            for await case let error? in loadOutcome {
                await services.triggerGracefulShutdown()
                return error
            }
            return nil
        }
        try await services.run()
        loadFailure.cancel()
        if let error = await loadFailure.value { throw error }
        for model in registry.models ?? [] { model.batcher.stop() }
        report("stopped after answering every accepted request")
    }

    static func makeRouter(_ endpoints: Endpoints, configuration: ServerConfiguration, metrics: ServerMetrics,
                           registry: ModelRegistry) -> Router<BasicRequestContext> {
        let router = Router()
        if let origin = configuration.corsOrigin {
            router.add(middleware: CORSMiddleware(allowOrigin: origin == "*" ? .all : .custom(origin)))
        }
        router.add(middleware: UnroutedRequests())
        let handler = Handler(configuration: configuration, metrics: metrics)
        for route in Route.all {
            let respond: @Sendable (Request, BasicRequestContext) async -> Response = { request, _ in
                await handler.respond(request, route: route.path, shape: route.shape, readsBody: route.method == .post) {
                    try await route.endpoint(endpoints, $0)
                }
            }
            switch route.method {
            case .get: router.get(RouterPath(route.path), use: respond)
            case .post: router.post(RouterPath(route.path), use: respond)
            }
        }
        // Probes, scrapers and the documents: no API key, no request metrics of their own.
        let health: @Sendable (Request, BasicRequestContext) async -> Response = { _, _ in
            switch registry.current {
            case .ready: return jsonResponse(200, Array(#"{"status":"ok"}"#.utf8))
            case .loading: return jsonResponse(503, Array(#"{"status":"loading"}"#.utf8))
            case let .failed(message):
                let json = JSONWriter()
                json.object { json.key("status"); json.string("failed"); json.key("error"); json.string(message) }
                return jsonResponse(503, json.bytes)
            }
        }
        router.get("/health", use: health)
        router.head("/health") { request, context in
            let response = await health(request, context)
            return Response(status: response.status, headers: response.headers)
        }
        router.get("/metrics") { request, _ in
            if let refusal = handler.refusal(request, shape: .tei) { return refusal }
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: metrics.prometheusText())))
        }
        let document = openAPIDocument(version: Endpoints.version)
        router.get("/openapi.json") { _, _ in jsonResponse(200, document) }
        router.get("/docs") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(string: apiDocsPage)))
        }
        return router
    }
}

/// A request no route takes: 405 with the methods its path answers (Allow), or 404; JSON either
/// way, as every other error of this server.
struct UnroutedRequests: RouterMiddleware {
    func handle(_ request: Request, context: BasicRequestContext,
                next: (Request, BasicRequestContext) async throws -> Response) async throws -> Response {
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

    func respond(_ request: Request, route: String, shape: ErrorShape, readsBody: Bool = true,
                 _ endpoint: @Sendable ([UInt8]) async throws -> [UInt8]) async -> Response {
        let started = ContinuousClock.now
        let response: Response
        if let refusal = refusal(request, shape: shape) {
            response = refusal
        } else {
            do {
                let body = readsBody ? try await readBody(request) : []
                response = jsonResponse(200, try await endpoint(body))
            } catch let error as APIError {
                response = Self.errorResponse(error, shape: shape)
            } catch {
                response = Self.errorResponse(APIError(status: 500, message: "internal error: \(error)", type: "server_error"), shape: shape)
            }
        }
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code, duration: started.duration(to: .now))
        return response
    }

    /// The whole body, as valid UTF-8. Whatever goes wrong reading it is the client's doing:
    /// too large (413), cut short of its Content-Length or a broken stream (400), not UTF-8 (400).
    private func readBody(_ request: Request) async throws -> [UInt8] {
        let limit = configuration.bodyLimit
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > limit { throw tooLarge(declared) }
        var buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw tooLarge(nil)
        } catch {
            throw APIError.invalid("the request body could not be read to its end\(declared.map { " (Content-Length \($0) bytes)" } ?? ""): the client closed or cut the stream (\(error)); send the whole body", status: 400)
        }
        let body = buffer.readBytes(length: buffer.readableBytes) ?? []
        if let declared, body.count < declared {
            throw APIError.invalid("the request body is \(body.count) bytes, shorter than its Content-Length of \(declared); send the whole body", status: 400)
        }
        let firstBad = firstInvalidUTF8Byte(body[...])  // 1-based; past the end when all is valid
        if firstBad <= body.count {
            throw APIError.invalid("the request body is not valid UTF-8 (the first bad byte is at offset \(firstBad - 1)); JSON must be UTF-8", status: 400)
        }
        return body
    }

    private func tooLarge(_ length: Int?) -> APIError {
        APIError.invalid("the request body\(length.map { " (\($0) bytes)" } ?? "") is over the limit of \(configuration.bodyLimit) bytes (--body-limit); send fewer or shorter inputs per request", status: 413)
    }

    /// 401 when an API key is set and the request does not carry it as `Authorization: Bearer KEY`.
    func refusal(_ request: Request, shape: ErrorShape) -> Response? {
        guard let key = configuration.apiKey else { return nil }
        let header = request.headers[.authorization] ?? ""
        let prefix = "Bearer "
        let given = header.hasPrefix(prefix) ? String(header.dropFirst(prefix.count)) : ""
        if constantTimeEqual(Array(given.utf8), Array(key.utf8)) { return nil }
        var response = Self.errorResponse(APIError(status: 401, message: "missing or wrong API key; send the header `Authorization: Bearer KEY`",
                                              type: "invalid_request_error", code: "invalid_api_key"), shape: shape)
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    static func errorResponse(_ error: APIError, shape: ErrorShape) -> Response {
        var response = jsonResponse(error.status, shape.body(error))
        if let seconds = error.retryAfter { response.headers[.retryAfter] = String(seconds) }
        return response
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
