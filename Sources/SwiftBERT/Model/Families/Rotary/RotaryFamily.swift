import Foundation

/// The rotary-position encoders: NomicBERT, GTE and ModernBERT (`RotaryEncoderConfig`), run by
/// `RotaryEncoderModel`.
struct RotaryFamily: ModelFamily {
    var name: String { "rotary encoders" }
    var variants: [Architecture] { [.nomicBERT, .gte, .modernBERT] }
    var precisions: [Precision] { Precision.allCases }

    func reads(modelType: String, architectures: [String]) -> Bool {
        Converter.rotaryFamily(modelType: modelType, architectures: architectures) != nil
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> BertConfig {
        try Converter.readRotaryConfig(json, modelType: modelType, architectures: architectures, path: path, folder: folder)
    }

    func describes(_ config: BertConfig) -> Bool { config.rotary != nil }

    /// ModernBERT has no token types, and a model with one type row takes only type 0.
    func usesTokenTypes(_ config: BertConfig) -> Bool { config.architecture != .modernBERT && config.typeVocabSize >= 2 }
    /// Rotary positions: max_position_embeddings.
    func positionLimit(_ config: BertConfig) -> Int { config.maxPositionEmbeddings }
    /// NomicBERT's gate runs SiLU.
    var otherActivations: Set<String> { ["silu"] }
    /// NomicBERT and some GTEs have none.
    var mayLackTokenTypeTable: Bool { true }

    func validate(_ config: BertConfig, fail: (String) -> SwiftBERTError) throws { try config.rotary?.validate(config, fail: fail) }

    func tensorModules(_ config: BertConfig) -> [TensorNames.Module]? {
        config.rotary.map { TensorNames.rotaryModules(config, $0) }
    }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try RotaryEncoderModel(folder: folder, threads: threads, precision: precision)
    }
}
