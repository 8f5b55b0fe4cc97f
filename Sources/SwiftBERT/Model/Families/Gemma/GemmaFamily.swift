import Foundation

/// Gemma 3 as an encoder: EmbeddingGemma (transformers' Gemma3TextModel with bidirectional
/// attention, `GemmaEncoderConfig`), run by `GemmaEncoderModel`. Its converter writes its own
/// tensors (`Converter.convertGemma`): grouped-query projections and RMSNorms have no place in
/// the BERT-shaped module table.
struct GemmaFamily: ModelFamily {
    var name: String { "Gemma 3" }
    var variants: [Architecture] { [.gemma3] }
    var configType: (any FamilyConfig.Type)? { GemmaEncoderConfig.self }
    var precisions: [Precision] { Precision.allCases.filter { $0 != .int8Static } }  // int8-static calibrates BertModel only

    func reads(modelType: String, architectures: [String]) -> Bool {
        Converter.isGemma(modelType: modelType, architectures: architectures)
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        try Converter.readGemmaConfig(json, architectures: architectures, path: path, folder: folder)
    }

    func usesTokenTypes(_ config: EncoderConfig) -> Bool { false }
    func positionLimit(_ config: EncoderConfig) -> Int { config.maxPositionEmbeddings }
    var otherActivations: Set<String> { ["gelu_pytorch_tanh"] }

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws { try config.gemma?.validate(config, fail: fail) }

    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds? {
        config.gemma.map { .groupedQuery(config, headDim: $0.headDim, keyValueHeads: $0.keyValueHeads) }
    }

    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]? {
        config.encoder.gemma.map { TensorNames.llamaStyleModules(config, headDim: $0.headDim, keyValueHeads: $0.keyValueHeads, layout: Converter.gemmaLayout) }
    }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try GemmaEncoderModel(folder: folder, threads: threads, precision: precision)
    }

    func convert(source: URL, config: ModelConfig, to destination: URL) throws -> Converter.Report? {
        try Converter.convertGemma(source: source, config: config, to: destination)
    }
}

extension Architecture {
    /// Gemma 3 as an encoder (EmbeddingGemma: `GemmaEncoderModel`, described by `EncoderConfig.gemma`).
    public static let gemma3 = Architecture("gemma3_text", displayName: "Gemma 3", className: "Gemma3Text")
}

extension EncoderConfig {
    /// The Gemma 3 encoder's own fields; nil for every other family.
    public var gemma: GemmaEncoderConfig? { get { familyConfigs[GemmaEncoderConfig.self] } set { familyConfigs[GemmaEncoderConfig.self] = newValue } }
}
