import Foundation

/// Qwen3 as an embedder: Qwen3-Embedding (transformers' Qwen3Model, causal attention,
/// last-token pooling; `Qwen3Config`), run by `Qwen3EncoderModel`. Its checkpoint is converted as
/// every Llama-style one (`Converter.convertLlamaStyle`).
struct Qwen3Family: ModelFamily {
    var name: String { "Qwen3" }
    var variants: [Architecture] { [.qwen3] }
    var configType: (any FamilyConfig.Type)? { Qwen3Config.self }
    var precisions: [Precision] { Precision.allCases.filter { $0 != .int8Static } }  // int8-static calibrates BertModel only

    func reads(modelType: String, architectures: [String]) -> Bool {
        modelType == "qwen3" || (modelType.isEmpty && architectures.contains { $0.hasPrefix("Qwen3") })
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        try Converter.readQwen3Config(json, architectures: architectures, path: path, folder: folder)
    }

    func usesTokenTypes(_ config: EncoderConfig) -> Bool { false }
    func positionLimit(_ config: EncoderConfig) -> Int { config.maxPositionEmbeddings }
    var otherActivations: Set<String> { ["silu"] }

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws { try config.qwen3?.validate(config, fail: fail) }

    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds? {
        config.qwen3.map { .groupedQuery(config, headDim: $0.headDim, keyValueHeads: $0.keyValueHeads) }
    }

    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]? {
        config.encoder.qwen3.map { TensorNames.llamaStyleModules(config, headDim: $0.headDim, keyValueHeads: $0.keyValueHeads, layout: Converter.qwen3Layout) }
    }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try Qwen3EncoderModel(folder: folder, threads: threads, precision: precision)
    }

    func convert(source: URL, config: ModelConfig, to destination: URL) throws -> Converter.Report? {
        guard let qwen3 = config.encoder.qwen3 else { throw SwiftBERTError.invalidInput(reason: "not a Qwen3 config") }
        return try Converter.convertLlamaStyle(source: source, config: config, headDim: qwen3.headDim, keyValueHeads: qwen3.keyValueHeads,
                                               layout: Converter.qwen3Layout, to: destination)
    }
}

extension Architecture {
    /// Qwen3 as an embedder (Qwen3-Embedding: `Qwen3EncoderModel`, described by `EncoderConfig.qwen3`).
    public static let qwen3 = Architecture("qwen3", displayName: "Qwen3", className: "Qwen3")
}

extension EncoderConfig {
    /// The Qwen3 encoder's own fields; nil for every other family.
    public var qwen3: Qwen3Config? { get { familyConfigs[Qwen3Config.self] } set { familyConfigs[Qwen3Config.self] = newValue } }
}
