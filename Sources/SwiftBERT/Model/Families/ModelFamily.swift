import Foundation

/// One architecture SwiftBERT runs: how its Hugging Face config.json is recognised and read,
/// how a converted folder of it loads, and what it runs in. `ModelFamilies.all` is the one
/// table the converter, the loader, `bert info` and `bert models` dispatch through: a new
/// architecture is a folder under Model/Families/ and a line there (docs/architecture.md).
package protocol ModelFamily: Sendable {
    /// The family's name as its authors write it ("BERT", "MobileBERT").
    var name: String { get }
    /// The checkpoints it reads, by the names their authors give them (for messages and docs).
    var variants: [Architecture] { get }
    /// Whether a Hugging Face config.json (its `model_type`, else its `architectures`) is this
    /// family's. The table asks the families in order; the first that claims it converts it.
    func reads(modelType: String, architectures: [String]) -> Bool
    /// The converted config from a Hugging Face config.json this family reads, validated.
    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig
    /// Its own fields in config.json, beside the shared ones (nil: none; BERT's variants).
    var configType: (any FamilyConfig.Type)? { get }
    /// Whether a converted config.json is this family's.
    func describes(_ config: EncoderConfig) -> Bool
    /// The precisions its encoder runs in.
    var precisions: [Precision] { get }
    /// The encoder of a converted folder of this family.
    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel
    /// Converts a checkpoint of this family itself, when its tensors do not fit the BERT-shaped
    /// module table the converter walks (`TensorNames.modules`); nil leaves it to that table.
    func convert(source: URL, config: ModelConfig, to destination: URL) throws -> Converter.Report?
    /// The converted tensors of a config of this family, in file order (what the converter
    /// writes and `bert quantize` reads its matrices from); nil: BERT's table
    /// (`TensorNames.bertModules`).
    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]?
    /// A checkpoint tensor's name as the BERT-shaped converter knows it (`TensorNames`), for a
    /// family that goes through that converter under other names.
    func canonicalName(_ name: String, config: ModelConfig) -> String
    /// Whether the tokenizer's token type ids reach the model (`EncoderConfig.usesTokenTypes`).
    func usesTokenTypes(_ config: EncoderConfig) -> Bool
    /// The longest sequence the model takes, [CLS] and [SEP] included (`EncoderConfig.positionLimit`).
    func positionLimit(_ config: EncoderConfig) -> Int
    /// The hidden_act values its modules run besides BERT's exact GELU ("gelu").
    var otherActivations: Set<String> { get }
    /// Whether a checkpoint of it may have no token-type table (the converter then writes one
    /// all-zero row, which adds nothing).
    var mayLackTokenTypeTable: Bool { get }
    /// Checks of its own fields, before any weight is touched (`EncoderConfig.validate` calls it);
    /// `fail` adds what to do.
    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws
    /// What a token costs in one layer's Linear layers, by profile stage (nil: its layers do not
    /// split as the stages do, and no rate is given).
    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds?
}

extension ModelFamily {
    var configType: (any FamilyConfig.Type)? { nil }
    /// A converted config is the family's when it holds the family's own section; a family
    /// without one (BERT and its variants, whose fields are all shared ones) claims those that
    /// hold none.
    func describes(_ config: EncoderConfig) -> Bool {
        configType.map(config.familyConfigs.holds) ?? config.familyConfigs.isEmpty
    }
    func convert(source: URL, config: ModelConfig, to destination: URL) throws -> Converter.Report? { nil }
    func tensorModules(_ config: ModelConfig) -> [TensorNames.Module]? { nil }
    func canonicalName(_ name: String, config: ModelConfig) -> String { name }
    func usesTokenTypes(_ config: EncoderConfig) -> Bool { true }
    /// The rows of the position table, less the padding_idx + 1 rows RoBERTa's positions skip.
    func positionLimit(_ config: EncoderConfig) -> Int { config.maxPositionEmbeddings - (config.paddingIdx.map { $0 + 1 } ?? 0) }
    var otherActivations: Set<String> { [] }
    var mayLackTokenTypeTable: Bool { false }
    func validate(_ config: EncoderConfig, fail: (String) -> SwiftBERTError) throws {}
    func layerMultiplyAdds(_ config: EncoderConfig) -> LayerMultiplyAdds? { .bert(config) }
}

/// The families SwiftBERT runs, in the order they are asked.
package enum ModelFamilies {
    package static let all: [any ModelFamily] = [
        RotaryFamily(),
        GemmaFamily(),
        Qwen3Family(),
        DebertaFamily(),
        MobileBertFamily(),
        BertFamily(),  // last: it also claims a config.json whose only clue is a Bert* class name
    ]

    /// The family that reads a Hugging Face config.json, or nil when none does.
    package static func family(modelType: String, architectures: [String]) -> (any ModelFamily)? {
        all.first { $0.reads(modelType: modelType, architectures: architectures) }
    }

    /// The family of a converted config.json. BERT's when no other claims it: a folder converted
    /// before `architecture` was written holds a BERT.
    package static func family(of config: EncoderConfig) -> any ModelFamily {
        all.first { $0.describes(config) } ?? BertFamily()
    }

    /// Every checkpoint name the families read, for "SwiftBERT runs …" messages.
    static var supportedNames: String {
        let names = all.flatMap(\.variants).map(\.displayName)
        return names.dropLast().joined(separator: ", ") + " and " + (names.last ?? "")
    }
}
