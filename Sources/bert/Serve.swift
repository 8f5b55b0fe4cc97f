import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
#if Server
import SwiftBERTServer
#endif

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "HTTP server for embeddings and fill-mask: OpenAI- and TEI-compatible routes, dynamic batching.",
        discussion: """
            Routes: the OpenAI API (/v1/embeddings, /v1/rerank, /v1/models), Cohere's v2 rerank (/v2/rerank) and TEI's (/, /embed, \
            /embed_sparse, /embed_all, /predict, /rerank, /similarity, /tokenize, /decode, /info), \
            POST /fill (top-k for each [MASK]), GET /health, GET /metrics (Prometheus), \
            GET /openapi.json and GET /docs. Every model serves every head its checkpoint has. \
            Requests pick a model with "model" (default: the first). \
            SIGTERM or SIGINT stops accepting, answers every accepted request (for at most \
            --shutdown-grace seconds), and exits 0. \
            Reference: docs/server.md.

            Examples:
              bert serve
              bert serve --model all-MiniLM-L6-v2,splade-tiny --port 8080 --precision int8
              curl -s localhost:8080/v1/embeddings -H 'Content-Type: application/json' \\
                -d '{"input": "The cat sat on the mat.", "model": "all-MiniLM-L6-v2"}'
            """)

    @Option(help: "Models to serve, comma-separated: names (folders under weights/) or paths to converted models.")
    var model = ModelLocator.defaultEmbeddingModel

    @Option(help: "Address to bind; 0.0.0.0 listens on every interface.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (printed on stderr).")
    var port = 8080

    @OptionGroup var engine: EngineOptions

    @Option(help: "Tokens per forward pass, at most (a batch of concurrent requests).")
    var maxBatchTokens = 1024

    @Option(help: "Milliseconds a queued text may wait for others to join its batch.")
    var maxWaitMs = 5

    @Option(help: "Texts waiting per model, at most; a request that does not fit now gets 503 with Retry-After, one with more inputs than this 413.")
    var queueCapacity = 8192

    @Option(help: "Inputs in one request, at most; more gets 413.")
    var maxInputs = 2048

    @Option(help: "Request body size in bytes, at most; larger gets 413.")
    var bodyLimit = 2 << 20

    @Option(help: "Seconds a request may take, from its body's arrival: decoding, tokenising and waiting for the model; longer gets 503.")
    var requestTimeout = 30.0

    @Option(help: "Seconds a request's body may take to arrive after its head; a body that trickles or stalls gets 408 and the connection closes.")
    var readTimeout = 30.0

    @Option(help: "Seconds an answer may take to reach its client, from its first byte; a client that reads slower, or not at all, has its connection closed.")
    var writeTimeout = 30.0

    @Option(help: "Seconds requests in flight get after SIGTERM or SIGINT; then the server cuts them, says how many, and exits 0.")
    var shutdownGrace = 25.0

    @Option(help: "Open connections, at most; more wait in the listen backlog until one closes.")
    var maxConnections = 128

    @Option(help: "Bytes of one answer of /tokenize, /embed_all, /embed_sparse, /embed_multi_vector or /embed_outputs, at most; a larger one gets 413 before it is built.")
    var maxResponseBytes = 32 << 20

    @Option(help: "Require `Authorization: Bearer KEY` on every route but /health, /openapi.json and /docs (default: $SWIFTBERT_API_KEY; none when unset).")
    var apiKey: String?

    @Flag(help: "Accept token ids on /v1/embeddings as this model's ids (clients that tokenised with POST /tokenize). Off: OpenAI clients send tiktoken ids, which get 400.")
    var acceptTokenIds = false

    @Option(help: ArgumentHelp("Let browser pages from ORIGIN call the API (CORS); * for any.", valueName: "origin"))
    var corsOrigin: String?

    @Option(help: ArgumentHelp("Another name requests may give in \"model\" for the first model, such as its Hugging Face id.", valueName: "name"))
    var servedModelName: String?

    @Option(help: ArgumentHelp("The prompt put before every text whose request names none (the OpenAI route never names one), as TEI's --default-prompt-name: one of each served model's named prompts (config_sentence_transformers.json), such as \"query\". Default: the model's own default prompt, if any.", valueName: "name"))
    var defaultPromptName: String?

    @Option(help: ArgumentHelp("A prompt text put before every text whose request names none, as TEI's --default-prompt; \"\" for none, not even the model's default prompt.", valueName: "text"))
    var defaultPrompt: String?

    @Option(help: ArgumentHelp("Reverse proxies to believe, comma-separated IPv4/IPv6 addresses or CIDR blocks (127.0.0.1,10.0.0.0/8,::1). A request from one of them takes the turn on the CPU workers of the client its X-Forwarded-For names: the rightmost address that is not a trusted proxy. Other peers' X-Forwarded-For is ignored. Default: none; every client is its peer address.", valueName: "list"))
    var trustedProxies = ""

    @Option(help: ArgumentHelp("Embeddings (.npy, rows of float32, from `bert embed --format npy`) of texts like the ones to be stored, whose ranges per dimension let Cohere's /v2/embed answer embedding_types int8 and uint8 (sentence-transformers' quantize_embeddings). MODEL=FILE.npy names one of --model's models; a bare FILE.npy is for the only one. Repeatable.", valueName: "[model=]file.npy"))
    var calibration: [String] = []

    /// The longest timeout or grace, in seconds.
    static let longestWait = 365.0 * 24 * 3600

    func validate() throws {
        if !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
        if maxBatchTokens < 1 { throw ValidationError("--max-batch-tokens must be at least 1") }
        if maxWaitMs < 0 { throw ValidationError("--max-wait-ms must be 0 or more") }
        if queueCapacity < 1 { throw ValidationError("--queue-capacity must be at least 1") }
        if maxInputs < 1 { throw ValidationError("--max-inputs must be at least 1") }
        if bodyLimit < 1 { throw ValidationError("--body-limit must be at least 1") }
        // At most a year: the seconds become whole milliseconds (inf or 1e300 would trap there).
        func checkSeconds(_ flag: String, _ seconds: Double, allowsZero: Bool) throws {
            guard allowsZero ? seconds >= 0 : seconds > 0, seconds <= Self.longestWait else {
                throw ValidationError("\(flag) must be \(allowsZero ? "0 or more" : "more than 0") seconds, at most \(Int(Self.longestWait)) (a year)")
            }
        }
        try checkSeconds("--request-timeout", requestTimeout, allowsZero: false)
        try checkSeconds("--read-timeout", readTimeout, allowsZero: false)
        try checkSeconds("--write-timeout", writeTimeout, allowsZero: false)
        try checkSeconds("--shutdown-grace", shutdownGrace, allowsZero: true)
        if maxConnections < 1 { throw ValidationError("--max-connections must be at least 1") }
        if maxResponseBytes < 1 { throw ValidationError("--max-response-bytes must be at least 1") }
        if models.isEmpty { throw ValidationError("--model needs at least one name") }
        if defaultPromptName != nil, defaultPrompt != nil { throw ValidationError("give --default-prompt-name or --default-prompt, not both") }
    }

    var models: [String] { model.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }

    /// --calibration's ranges by the model they are for, as --model gives it; the files are read
    /// here, before any model loads, and their dimension checked against the model's at its load.
    func embeddingRanges() throws -> [String: EmbeddingRanges] {
        var ranges: [String: EmbeddingRanges] = [:]
        for item in calibration {
            let model: String, path: String
            // MODEL=FILE: the model part must be one of --model's (a path may hold "=" too).
            if let equals = item.firstIndex(of: "="), models.contains(String(item[..<equals])) {
                (model, path) = (String(item[..<equals]), String(item[item.index(after: equals)...]))
            } else if models.count == 1 {
                (model, path) = (models[0], item)
            } else {
                throw CLIError.usage("--calibration \(item): name the model it is for, one of \(models.joined(separator: ", ")), as MODEL=FILE.npy")
            }
            guard ranges[model] == nil else { throw CLIError.usage("--calibration is given twice for \(model); give one file per model") }
            let embeddings = try NPYReader(path: path)
            ranges[model] = try EmbeddingRanges(calibration: embeddings.readAll())
        }
        return ranges
    }

    func run() throws {
        #if Server
        // Fail fast on a bad option or unknown names, before binding the port.
        let proxies: TrustedProxies
        do { proxies = try TrustedProxies(trustedProxies) } catch { throw ValidationError(error.description) }
        for name in models { _ = try ModelLocator.resolve(name) }
        let ranges = try embeddingRanges()
        let key = apiKey ?? ProcessInfo.processInfo.environment["SWIFTBERT_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let configuration = ServerConfiguration(
            models: models, host: host, port: port, precision: engine.precision, threads: engine.threads,
            maxBatchTokens: maxBatchTokens, maxWait: .milliseconds(maxWaitMs), queueCapacity: queueCapacity,
            maxInputs: maxInputs, bodyLimit: bodyLimit, requestTimeout: .milliseconds(Int(requestTimeout * 1000)),
            readTimeout: .milliseconds(Int(readTimeout * 1000)), writeTimeout: .milliseconds(Int(writeTimeout * 1000)),
            shutdownGrace: .milliseconds(Int(shutdownGrace * 1000)),
            maxConnections: maxConnections, maxResponseBytes: maxResponseBytes, apiKey: key,
            acceptsTokenIds: acceptTokenIds, corsOrigin: corsOrigin, servedModelName: servedModelName,
            defaultPromptName: defaultPromptName, defaultPrompt: defaultPrompt,
            trustedProxies: proxies, embeddingRanges: ranges)
        let outcome = ServeOutcome()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                try await BertServer.run(configuration) { writeStandardError("bert serve: \($0)\n") }
            } catch {
                outcome.error = error
            }
            done.signal()
        }
        done.wait()
        if let error = outcome.error as? SwiftBERTError { throw error }
        // EX_UNAVAILABLE: e.g. the port is taken.
        if let error = outcome.error { throw CLIError(message: "cannot serve on \(host):\(port): \(error)", status: 69) }
        #else
        throw CLIError(message: "this bert was built without the server: build it with the package trait Server (`make bert`, or `swift build -c release --traits Server --product bert`)", status: 69)
        #endif
    }
}

private final class ServeOutcome: @unchecked Sendable {
    var error: Error?
}
