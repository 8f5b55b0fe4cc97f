import Foundation

/// BERT and the checkpoints that run its layers: DistilBERT (other tensor names, no token
/// types), RoBERTa and XLM-RoBERTa (positions from padding_idx + 1), MPNet (with a relative
/// position bias). One encoder, `BertModel`.
struct BertFamily: ModelFamily {
    var name: String { "BERT" }
    var variants: [Architecture] { [.bert, .distilBERT, .roberta, .xlmRoberta, .mpnet] }
    var precisions: [Precision] { Precision.allCases }

    func reads(modelType: String, architectures: [String]) -> Bool {
        Converter.bertVariant(modelType: modelType, architectures: architectures) != nil
    }

    func readConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        try Converter.readBertConfig(json, modelType: modelType, architectures: architectures, path: path, isMobileBERT: false)
    }

    func describes(_ config: EncoderConfig) -> Bool { config.mobileBert == nil && config.rotary == nil }

    /// RoBERTa's tokenizers give the model no token types (every token is type 0, pairs
    /// included); MPNet has none.
    func usesTokenTypes(_ config: EncoderConfig) -> Bool { !config.isRoberta && config.architecture != .mpnet }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try BertModel(folder: folder, threads: threads, precision: precision)
    }
}
