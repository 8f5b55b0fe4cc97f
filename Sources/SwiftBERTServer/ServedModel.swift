#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// Everything `bert serve` is told on its command line.
public struct ServerConfiguration: Sendable {
    /// Model names or paths, as every other command names them (ModelLocator.resolve).
    public var models: [String]
    public var host: String
    /// 0: any free port (the port is printed once the server listens).
    public var port: Int
    public var precision: Precision
    public var threads: Int?
    public var maxBatchTokens: Int
    public var maxWait: Duration
    /// Sequences waiting per model, at most: a request that does not fit now gets 503, one
    /// larger than the whole queue 413.
    public var queueCapacity: Int
    /// Inputs in one request, at most (OpenAI's own limit is 2048).
    public var maxInputs: Int
    public var bodyLimit: Int
    public var requestTimeout: Duration
    /// How long a request's body may take to arrive, from its head; slower gets 408.
    public var readTimeout: Duration
    /// How long an answer may take to reach its client, from its first byte; a client that reads
    /// slower (or not at all) has its connection closed, and the answer's memory freed.
    public var writeTimeout: Duration
    /// After SIGTERM or SIGINT, how long requests in flight may take before the server cuts them and returns.
    public var shutdownGrace: Duration
    /// Open connections, at most; more wait in the listen backlog.
    public var maxConnections: Int
    /// The largest answer of the routes whose answers grow with the tokens (/tokenize, /embed_all,
    /// /embed_sparse, /embed_multi_vector, /embed_outputs); a larger one gets 413 before it is built.
    public var maxResponseBytes: Int
    /// nil: no authentication.
    public var apiKey: String?
    /// Token ids on the OpenAI route are this model's ids (the client tokenised with it). Off by
    /// default: OpenAI clients such as LangChain send tiktoken ids, which would embed as noise.
    public var acceptsTokenIds: Bool
    /// The Origin browsers may call from (Access-Control-Allow-Origin); nil: no CORS headers.
    public var corsOrigin: String?
    /// Another name requests may give in `model` for the first model (say, its Hugging Face id).
    public var servedModelName: String?
    /// The prompt a request that names none gets (TEI's --default-prompt-name): one of each model's
    /// named prompts; nil: the model's own default prompt.
    public var defaultPromptName: String?
    /// A prompt text a request that names none gets (TEI's --default-prompt); "" for none, not even
    /// the model's default. Wins over `defaultPromptName`.
    public var defaultPrompt: String?
    /// The reverse proxies whose `X-Forwarded-For` names the client, for its turn on the lanes;
    /// none by default: the client is the peer's address.
    public var trustedProxies: TrustedProxies
    /// Each dimension's range for Cohere's int8 and uint8 `embedding_types`, by the model as
    /// `models` gives it: from embeddings of texts like the ones to be stored (`bert serve
    /// --calibration`). A model without them refuses those types.
    public var embeddingRanges: [String: EmbeddingRanges]

    public init(models: [String] = [ModelLocator.defaultEmbeddingModel], host: String = "127.0.0.1", port: Int = 8080,
                precision: Precision = .fp32, threads: Int? = nil, maxBatchTokens: Int = 1024,
                maxWait: Duration = .milliseconds(5), queueCapacity: Int = 8192, maxInputs: Int = 2048,
                bodyLimit: Int = 2 << 20, requestTimeout: Duration = .seconds(30), readTimeout: Duration = .seconds(30),
                writeTimeout: Duration = .seconds(30), shutdownGrace: Duration = .seconds(25), maxConnections: Int = 128, maxResponseBytes: Int = 32 << 20,
                apiKey: String? = nil, acceptsTokenIds: Bool = false, corsOrigin: String? = nil, servedModelName: String? = nil,
                defaultPromptName: String? = nil, defaultPrompt: String? = nil, trustedProxies: TrustedProxies = .none,
                embeddingRanges: [String: EmbeddingRanges] = [:]) {
        self.models = models; self.host = host; self.port = port; self.precision = precision; self.threads = threads
        self.maxBatchTokens = maxBatchTokens; self.maxWait = maxWait; self.queueCapacity = queueCapacity
        self.maxInputs = maxInputs; self.bodyLimit = bodyLimit; self.requestTimeout = requestTimeout
        self.readTimeout = readTimeout; self.writeTimeout = writeTimeout; self.shutdownGrace = shutdownGrace; self.maxConnections = maxConnections
        self.maxResponseBytes = maxResponseBytes; self.apiKey = apiKey
        self.acceptsTokenIds = acceptsTokenIds; self.corsOrigin = corsOrigin; self.servedModelName = servedModelName
        self.defaultPromptName = defaultPromptName; self.defaultPrompt = defaultPrompt
        self.trustedProxies = trustedProxies; self.embeddingRanges = embeddingRanges
    }
}

/// One loaded model (`loadModel`): its encoder and tokenizer, the batcher every route shares,
/// and the heads its checkpoint has weights for.
final class ServedModel: Sendable {
    /// The name responses and /v1/models give: as given on the command line, or for a path its
    /// folder's name (an absolute path would tell every client the server's file layout).
    let name: String
    /// Other names accepted in `model`: the folder's name, --served-model-name.
    let aliases: [String]
    let loaded: LoadedModel
    let batcher: Batcher
    /// sentence-transformers' modules and prompts: every encoder embeds.
    let embedder: SentenceEmbedder
    let fillMask: FillMask?
    /// SPLADE or BGE-M3's lexical weights (/embed_sparse), BGE-M3's ColBERT vectors (/embed_multi_vector).
    var sparse: SparseHead? { embedder.sparse }
    var multiVector: MultiVectorHead? { embedder.multiVector }
    let classifier: TextClassifier?
    /// What picks the prompt of a request that names none: the server's default prompt or prompt
    /// name, else the model's own default.
    let unnamedPrompt: SentenceEmbedder.Options
    /// The ranges of Cohere's int8 and uint8 (--calibration), of this model's dimension; nil:
    /// those types are refused.
    let embeddingRanges: EmbeddingRanges?

    /// `given` as --model names it (a name or a path); `name` what answers give (`publicNames`).
    init(given: String, name: String, alias: String?, configuration: ServerConfiguration, metrics: ServerMetrics) throws {
        // A Hugging Face folder is converted on first use, as every command does.
        let folder = try ModelLocator.folder(given, precisions: [configuration.precision])
        self.name = name
        // The path as given still names the model in requests.
        aliases = [given, folder.lastPathComponent, alias].compactMap { $0 }.filter { $0 != name }
        loaded = try loadModel(folder: folder, threads: configuration.threads, precision: configuration.precision)
        embedder = try SentenceEmbedder(loaded)
        let heads = loaded.heads
        fillMask = heads.contains(.maskedLM) ? try FillMask(loaded) : nil
        classifier = heads.contains(.sequenceClassification) ? try TextClassifier(loaded) : nil
        unnamedPrompt = .init(promptName: configuration.defaultPromptName, prompt: configuration.defaultPrompt)
        // A default prompt name the model lacks fails the start, naming the model's prompts.
        if let prompt = configuration.defaultPromptName, configuration.defaultPrompt == nil {
            let prompts = loaded.config.heads.sentence.prompts ?? [:]
            guard prompts[prompt] != nil else {
                throw SwiftBERTError.invalidInput(reason: "--default-prompt-name \(printable(prompt)): \(name) has "
                    + (prompts.isEmpty ? "no prompts" : "the prompts \(prompts.keys.sorted().joined(separator: ", "))")
                    + "; give a prompt's text with --default-prompt instead")
            }
        }
        // A calibration of another model (another dimension) fails the start.
        embeddingRanges = configuration.embeddingRanges[given]
        if let ranges = embeddingRanges, ranges.dimension != loaded.config.embeddingDimension {
            throw SwiftBERTError.invalidInput(reason: "--calibration for \(name) holds \(ranges.dimension)-dimensional vectors, and \(name)'s are \(loaded.config.embeddingDimension); calibrate with its own embeddings (bert embed --model \(given) --format npy --output FILE.npy)")
        }
        batcher = Batcher(model: loaded.encoder, name: name, limits: .init(
            maxBatchTokens: configuration.maxBatchTokens, maxWait: configuration.maxWait,
            queueCapacity: configuration.queueCapacity, requestTimeout: configuration.requestTimeout), metrics: metrics)
        batcher.start()
    }

    /// The names answers give for the models of --model, in order: a name as given, a path as
    /// its last component; a name taken before gets "-2", "-3", … ("/a/model,/b/model" are
    /// "model" and "model-2").
    static func publicNames(_ given: [String]) -> [String] {
        var taken = Set<String>()
        return given.map { item in
            let base = item.contains("/") ? URL(fileURLWithPath: item).standardizedFileURL.lastPathComponent : item
            var name = base, next = 2
            while !taken.insert(name).inserted { name = "\(base)-\(next)"; next += 1 }
            return name
        }
    }

    var tokenizer: Tokenizer { loaded.tokenizer }
    var config: ModelConfig { loaded.config }
    var maxLength: Int { min(config.encoder.maxSequenceLength, config.encoder.positionLimit) }
    var dimension: Int { config.embeddingDimension }
    var prompts: [String: String] { config.heads.sentence.prompts ?? [:] }
    /// A cross-encoder: a sequence classifier with one label, scored on (query, document) pairs.
    var reranks: Bool { classifier?.labels.count == 1 }

    /// Whether `requested` names this model: its name, an alias, or a Hugging Face id whose last
    /// part is one of them ("sentence-transformers/all-MiniLM-L6-v2").
    func answers(to requested: String) -> Bool {
        let names = [name] + aliases
        return names.contains(requested) || names.contains(String(requested.split(separator: "/").last ?? ""))
    }
}

/// The models of the process, loaded in the background so that the server answers /health
/// (503 while loading) from the start.
final class ModelRegistry: @unchecked Sendable {
    enum State {
        case loading
        case ready([ServedModel])
        case failed(String)
    }

    private let lock = NSLock()
    private var state = State.loading

    var current: State {
        lock.lock(); defer { lock.unlock() }
        return state
    }

    func set(_ state: State) {
        lock.lock(); defer { lock.unlock() }
        self.state = state
    }

    var models: [ServedModel]? {
        if case let .ready(models) = current { return models }
        return nil
    }
}
#endif
