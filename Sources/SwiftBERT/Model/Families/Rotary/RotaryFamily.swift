import Foundation

/// The rotary-position encoders: NomicBERT, GTE and ModernBERT (`RotaryEncoderConfig`), run by
/// `RotaryEncoderModel`.
struct RotaryFamily: ModelFamily {
    var name: String { "rotary encoders" }
    var variants: [Architecture] { [.nomicBERT, .gte, .modernBERT] }
    var configType: (any FamilyConfig.Type)? { RotaryEncoderConfig.self }
    var precisions: [Precision] { Precision.allCases }

    func reads(modelType: String, architectures: [String]) -> Bool {
        Converter.rotaryFamily(modelType: modelType, architectures: architectures) != nil
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        try Converter.readRotaryConfig(json, modelType: modelType, architectures: architectures, path: path, folder: folder)
    }

    /// ModernBERT has no token types, and a model with one type row takes only type 0.
    func usesTokenTypes(_ config: EncoderConfig) -> Bool { config.architecture != .modernBERT && config.typeVocabSize >= 2 }
    /// Rotary positions: max_position_embeddings.
    func positionLimit(_ config: EncoderConfig) -> Int { config.maxPositionEmbeddings }
    /// NomicBERT's gate runs SiLU.
    var otherActivations: Set<String> { ["silu"] }
    /// NomicBERT and some GTEs have none.
    var mayLackTokenTypeTable: Bool { true }

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws { try config.rotary?.validate(config, fail: fail) }

    /// BERT's projections, and a gated feed-forward network.
    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds? { LayerMultiplyAdds.bert(config).gated(config) }

    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]? {
        config.encoder.rotary.map { TensorNames.rotaryModules(config, $0) }
    }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try RotaryEncoderModel(folder: folder, threads: threads, precision: precision)
    }
}

extension Architecture {
    /// The rotary-position encoders (`RotaryEncoderModel`, described by `EncoderConfig.rotary`):
    /// NomicBERT (SwiGLU, no biases), GTE (GeGLU) and ModernBERT (pre-LN, GeGLU, alternating
    /// global and sliding-window layers, no biases).
    public static let nomicBERT = Architecture("nomic_bert", displayName: "NomicBERT", className: "NomicBert")
    public static let gte = Architecture("gte", displayName: "GTE", className: "Gte")
    public static let modernBERT = Architecture("modernbert", displayName: "ModernBERT", className: "ModernBert")
}

extension EncoderConfig {
    /// The rotary-position encoders' own fields; nil for every other family.
    public var rotary: RotaryEncoderConfig? { get { familyConfigs[RotaryEncoderConfig.self] } set { familyConfigs[RotaryEncoderConfig.self] = newValue } }
}
