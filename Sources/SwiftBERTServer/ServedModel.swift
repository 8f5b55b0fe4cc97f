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
    /// Sequences waiting per model, at most; a request that does not fit gets 503.
    public var queueCapacity: Int
    /// Inputs in one request, at most (OpenAI's own limit is 2048).
    public var maxInputs: Int
    public var bodyLimit: Int
    public var requestTimeout: Duration
    /// nil: no authentication.
    public var apiKey: String?

    public init(models: [String] = [ModelLocator.defaultEmbeddingModel], host: String = "127.0.0.1", port: Int = 8080,
                precision: Precision = .fp32, threads: Int? = nil, maxBatchTokens: Int = 1024,
                maxWait: Duration = .milliseconds(5), queueCapacity: Int = 8192, maxInputs: Int = 2048,
                bodyLimit: Int = 2 << 20, requestTimeout: Duration = .seconds(30), apiKey: String? = nil) {
        self.models = models; self.host = host; self.port = port; self.precision = precision; self.threads = threads
        self.maxBatchTokens = maxBatchTokens; self.maxWait = maxWait; self.queueCapacity = queueCapacity
        self.maxInputs = maxInputs; self.bodyLimit = bodyLimit; self.requestTimeout = requestTimeout; self.apiKey = apiKey
    }
}

/// One loaded model: its encoder, tokenizer, batcher, and fill-mask pipeline when it has the head.
final class ServedModel: Sendable {
    /// The name requests use in `model`: as given on the command line.
    let name: String
    let model: BertModel
    let tokenizer: BertTokenizer
    let batcher: Batcher
    let fillMask: FillMask?
    /// sentence-transformers prompts (config_sentence_transformers.json), by name.
    let prompts: [String: String]

    init(name: String, configuration: ServerConfiguration, metrics: ServerMetrics) throws {
        let folder = try ModelLocator.resolve(name)
        self.name = name
        model = try BertModel(folder: folder, threads: configuration.threads, precision: configuration.precision)
        tokenizer = try BertTokenizer.load(folder: folder)
        fillMask = model.config.hasMaskedLMHead ? try FillMask(model: model, tokenizer: tokenizer) : nil
        prompts = Self.loadPrompts(folder)
        batcher = Batcher(model: model, name: name, limits: .init(
            maxBatchTokens: configuration.maxBatchTokens, maxWait: configuration.maxWait,
            queueCapacity: configuration.queueCapacity), metrics: metrics)
        batcher.start()
    }

    var maxLength: Int { min(model.config.maxSequenceLength, model.config.maxPositionEmbeddings) }
    var dimension: Int { model.config.hiddenSize }

    private static func loadPrompts(_ folder: URL) -> [String: String] {
        let url = folder.appendingPathComponent("config_sentence_transformers.json")
        guard let data = try? Data(contentsOf: url),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let prompts = object["prompts"] as? [String: String] else { return [:] }
        return prompts
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
