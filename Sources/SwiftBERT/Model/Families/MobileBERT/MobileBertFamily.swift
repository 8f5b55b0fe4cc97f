import Foundation

/// MobileBERT: BERT's config.json with a bottleneck, stacked feed-forward networks and NoNorm
/// (`MobileBertConfig`), run by `MobileBertModel`.
struct MobileBertFamily: ModelFamily {
    var name: String { "MobileBERT" }
    var variants: [Architecture] { [.mobileBERT] }
    var configType: (any FamilyConfig.Type)? { MobileBertConfig.self }
    var precisions: [Precision] { MobileBertModel.precisions }

    func reads(modelType: String, architectures: [String]) -> Bool {
        Converter.isMobileBERT(modelType: modelType, architectures: architectures)
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        try Converter.readBertConfig(json, modelType: modelType, architectures: architectures, path: path, isMobileBERT: true)
    }

    /// MobileBERT is trained with ReLU; its modules run either.
    var otherActivations: Set<String> { ["relu"] }

    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws { try config.mobileBert?.validate(config, fail: fail) }

    /// None: its bottlenecks and stacked feed-forward networks are not BERT's four stages.
    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds? { nil }

    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]? {
        config.encoder.mobileBert.map { TensorNames.mobileBertModules(config, $0) }
    }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try MobileBertModel(folder: folder, threads: threads, precision: precision)
    }
}

extension Architecture {
    /// MobileBERT: its own encoder (`MobileBertModel`), described by `EncoderConfig.mobileBert`.
    public static let mobileBERT = Architecture("mobilebert", displayName: "MobileBERT", className: "MobileBert")
}

extension EncoderConfig {
    /// MobileBERT's own fields; nil for every other family.
    public var mobileBert: MobileBertConfig? { get { familyConfigs[MobileBertConfig.self] } set { familyConfigs[MobileBertConfig.self] = newValue } }
}
