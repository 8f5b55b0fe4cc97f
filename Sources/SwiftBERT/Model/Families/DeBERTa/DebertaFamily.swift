import Foundation

/// DeBERTa-v2 and v3 (transformers' DebertaV2Model and its masked-LM, sequence and token
/// classification heads; `DebertaConfig`), run by `DebertaEncoderModel`. Its checkpoint goes
/// through the BERT converter under BERT's names (`Converter.debertaName`), with the relative
/// embeddings added to the module table.
struct DebertaFamily: ModelFamily {
    var name: String { "DeBERTa" }
    var variants: [Architecture] { [.debertaV2] }
    var precisions: [Precision] { Precision.allCases.filter { $0 != .int8Static } }  // int8-static calibrates BertModel only

    func reads(modelType: String, architectures: [String]) -> Bool {
        modelType == "deberta-v2" || (modelType.isEmpty && architectures.contains { $0.hasPrefix("DebertaV2") })
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> BertConfig {
        try Converter.readDebertaConfig(json, architectures: architectures, path: path, folder: folder)
    }

    func describes(_ config: BertConfig) -> Bool { config.deberta != nil }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try DebertaEncoderModel(folder: folder, threads: threads, precision: precision)
    }

    func tensorModules(_ config: BertConfig) -> [TensorNames.Module]? {
        config.deberta.map { TensorNames.debertaModules(config, $0) }
    }

    func canonicalName(_ name: String, config: BertConfig) -> String { Converter.debertaName(name) }
}
