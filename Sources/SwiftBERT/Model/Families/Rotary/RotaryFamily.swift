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

    func tensorModules(_ config: BertConfig) -> [TensorNames.Module]? {
        config.rotary.map { TensorNames.rotaryModules(config, $0) }
    }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try RotaryEncoderModel(folder: folder, threads: threads, precision: precision)
    }
}
