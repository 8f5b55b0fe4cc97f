/// What MobileBERT adds to a BERT config (transformers' MobileBertConfig): the narrow embedding
/// and its trigram projection, the bottlenecks around each layer, the stacked feed-forward
/// networks and NoNorm. Stored in the converted config.json as `mobilebert`; the shared sizes
/// (hidden_size 512, heads, intermediate_size, vocabulary, positions) stay in `ModelConfig`.
public struct MobileBertConfig: FamilyConfig {
    public static let key = "mobilebert"
    /// NoNorm (`weight * x + bias`, no statistics) or LayerNorm, for every norm of the encoder.
    /// The masked-LM transform always uses LayerNorm.
    public enum Normalization: String, Codable, Sendable {
        case noNorm = "no_norm", layerNorm = "layer_norm"
    }

    /// Width of the word-embedding table (128): narrower than hidden_size.
    public var embeddingSize: Int
    /// Each token's embedding concatenated with its right and left neighbours' before the projection.
    public var trigramInput: Bool
    /// Layers work at intra_bottleneck_size between a bottleneck in and a bottleneck out.
    public var useBottleneck: Bool
    public var intraBottleneckSize: Int
    /// Q, K and V all read the input bottleneck (else Q and K read their own or the hidden state).
    public var useBottleneckAttention: Bool
    /// Q and K read one shared bottleneck of their own; V reads the full hidden state.
    public var keyQuerySharedBottleneck: Bool
    /// Feed-forward networks per layer: num_feedforward_networks - 1 FFNLayers, then the last one.
    public var numFeedforwardNetworks: Int
    public var normalization: Normalization

    enum CodingKeys: String, CodingKey {
        case embeddingSize = "embedding_size", trigramInput = "trigram_input", useBottleneck = "use_bottleneck"
        case intraBottleneckSize = "intra_bottleneck_size", useBottleneckAttention = "use_bottleneck_attention"
        case keyQuerySharedBottleneck = "key_query_shared_bottleneck"
        case numFeedforwardNetworks = "num_feedforward_networks", normalization = "normalization_type"
    }

    /// Width of the attention and feed-forward blocks: the bottleneck's, else hidden_size.
    func trueHiddenSize(_ config: EncoderConfig) -> Int { useBottleneck ? intraBottleneckSize : config.hiddenSize }

    /// Whether the word embeddings are projected to hidden_size (transformers skips the
    /// projection only without trigrams and with embedding_size equal to hidden_size).
    func projectsEmbeddings(_ config: EncoderConfig) -> Bool { trigramInput || embeddingSize != config.hiddenSize }

    /// Hugging Face's config.json fields, with transformers' defaults (google/mobilebert-uncased's).
    static func read(_ json: [String: JSONValue], path: String) throws -> MobileBertConfig {
        func int(_ key: String, _ fallback: Int) throws -> Int {
            guard let value = json[key], value != .null else { return fallback }
            guard case let .number(number) = value, number == number.rounded(), number >= 1, number <= Double(ModelConfig.maximumSize) else {
                throw SwiftBERTError.invalidConfig(path: path, reason: "\(key) is \(printable("\(value)")), not a positive integer; fix config.json")
            }
            return Int(number)
        }
        func bool(_ key: String, _ fallback: Bool) throws -> Bool {
            guard let value = json[key], value != .null else { return fallback }
            guard case let .bool(flag) = value else {
                throw SwiftBERTError.invalidConfig(path: path, reason: "\(key) is \(printable("\(value)")), not true or false; fix config.json")
            }
            return flag
        }
        let kind = json["normalization_type"]?.string ?? Normalization.noNorm.rawValue
        guard let normalization = Normalization(rawValue: kind) else {
            throw SwiftBERTError.invalidConfig(path: path, reason: "normalization_type '\(printable(kind))' is not no_norm or layer_norm; fix config.json")
        }
        return MobileBertConfig(
            embeddingSize: try int("embedding_size", 128), trigramInput: try bool("trigram_input", true),
            useBottleneck: try bool("use_bottleneck", true), intraBottleneckSize: try int("intra_bottleneck_size", 128),
            useBottleneckAttention: try bool("use_bottleneck_attention", false),
            keyQuerySharedBottleneck: try bool("key_query_shared_bottleneck", true),
            numFeedforwardNetworks: try int("num_feedforward_networks", 4), normalization: normalization)
    }

    /// Rejects sizes the engine cannot run, before any weight is touched.
    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {
        for (name, value) in [("embedding_size", embeddingSize), ("intra_bottleneck_size", intraBottleneckSize),
                              ("num_feedforward_networks", numFeedforwardNetworks)]
        where value < 1 || value > ModelConfig.maximumSize {
            throw fail("\(name) is \(value); it must be a positive integer up to \(ModelConfig.maximumSize)")
        }
        guard trueHiddenSize(config) % config.numAttentionHeads == 0 else {
            throw fail("the attention width \(trueHiddenSize(config)) is not divisible by num_attention_heads \(config.numAttentionHeads)")
        }
        guard !useBottleneck || useBottleneckAttention || keyQuerySharedBottleneck || intraBottleneckSize == config.hiddenSize else {
            // Q and K would read the hidden state with intra_bottleneck_size inputs: transformers cannot run it either.
            throw fail("use_bottleneck without use_bottleneck_attention or key_query_shared_bottleneck needs intra_bottleneck_size equal to hidden_size")
        }
        guard embeddingSize <= config.hiddenSize else {
            // The masked-LM decoder appends hidden_size - embedding_size rows to the embeddings.
            throw fail("embedding_size \(embeddingSize) is larger than hidden_size \(config.hiddenSize)")
        }
    }
}
