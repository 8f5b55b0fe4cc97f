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

    /// RoBERTa's tokenizers give the model no token types (every token is type 0, pairs
    /// included); MPNet has none.
    func usesTokenTypes(_ config: EncoderConfig) -> Bool { !config.isRoberta && config.architecture != .mpnet }

    func loadEncoder(folder: URL, threads: Int?, precision: Precision) throws -> any EncoderModel {
        try BertModel(folder: folder, threads: threads, precision: precision)
    }
}

extension Architecture {
    public static let bert = Architecture("bert", displayName: "BERT", className: "Bert")
    /// DistilBERT: BERT's layers under other tensor names, without token types.
    public static let distilBERT = Architecture("distilbert", displayName: "DistilBERT", className: "DistilBert")
    /// RoBERTa and XLM-RoBERTa: BERT's layers, with positions counted from padding_idx + 1,
    /// no token types, and the lm_head in place of cls.predictions.
    public static let roberta = Architecture("roberta", displayName: "RoBERTa", className: "Roberta")
    public static let xlmRoberta = Architecture("xlm-roberta", displayName: "XLM-RoBERTa", className: "XLMRoberta")
    /// MPNet: BERT's layers with RoBERTa's positions, no token types, and a relative position
    /// bias in every layer's attention (`EncoderConfig.relativeAttentionNumBuckets`).
    public static let mpnet = Architecture("mpnet", displayName: "MPNet", className: "MPNet")
}
