import Foundation

/// DeBERTa-v2 and v3 (transformers' DebertaV2Model and its masked-LM, sequence and token
/// classification heads; `DebertaConfig`), run by `DebertaEncoderModel`. Its checkpoint goes
/// through the BERT converter under BERT's names (`Converter.debertaName`), with the relative
/// embeddings added to the module table.
struct DebertaFamily: ModelFamily {
    var name: String { "DeBERTa" }
    var variants: [Architecture] { [.debertaV2] }
    var configType: (any FamilyConfig.Type)? { DebertaConfig.self }
    var precisions: [Precision] { Precision.allCases.filter { $0 != .int8Static } }  // int8-static calibrates BertModel only

    func reads(modelType: String, architectures: [String]) -> Bool {
        modelType == "deberta-v2" || (modelType.isEmpty && architectures.contains { $0.hasPrefix("DebertaV2") })
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        try Converter.readDebertaConfig(json, architectures: architectures, path: path, folder: folder)
    }

    /// DeBERTa-v3 has no token types (one all-zero row); v2-style checkpoints may have two.
    func usesTokenTypes(_ config: EncoderConfig) -> Bool { config.typeVocabSize >= 2 }
    var mayLackTokenTypeTable: Bool { true }

    /// Without absolute positions, relative ones alone, which clamp at the far buckets: up to
    /// `DebertaConfig.maximumPositions`.
    func positionLimit(_ config: EncoderConfig) -> Int {
        guard let deberta = config.deberta, !deberta.positionBiasedInput else { return config.maxPositionEmbeddings }
        return max(config.maxPositionEmbeddings, DebertaConfig.maximumPositions)
    }

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws { try config.deberta?.validate(config, fail: fail) }

    /// BERT's: the projections of the relative position table, once per layer and not per
    /// token, are left out.
    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds? { .bert(config) }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try DebertaEncoderModel(folder: folder, threads: threads, precision: precision)
    }

    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]? {
        config.encoder.deberta.map { TensorNames.debertaModules(config, $0) }
    }

    func canonicalName(_ name: String, config: ModelConfig) -> String { Converter.debertaName(name) }
}

extension Architecture {
    /// DeBERTa-v2 and v3 (`DebertaEncoderModel`, described by `EncoderConfig.deberta`): disentangled attention.
    public static let debertaV2 = Architecture("deberta-v2", displayName: "DeBERTa-v2", className: "DebertaV2")
}

extension EncoderConfig {
    /// The DeBERTa encoder's own fields; nil for every other family.
    public var deberta: DebertaConfig? { get { familyConfigs[DebertaConfig.self] } set { familyConfigs[DebertaConfig.self] = newValue } }
}
