/// The converter's MobileBERT steps: its config fields, and the masked-LM decoder as one matrix.
extension Converter {
    /// model_type mobilebert (or a MobileBert* architecture without model_type).
    static func isMobileBERT(modelType: String, architectures: [String]) -> Bool {
        modelType == "mobilebert" || (modelType.isEmpty && architectures.contains { $0.hasPrefix("MobileBert") })
    }

    /// MobileBERT's own fields on top of the BERT ones read from the same config.json.
    static func addMobileBertFields(to config: inout ModelConfig, _ json: [String: JSONValue], architectures: [String], path: String) throws {
        if let other = architectures.first(where: { !["MobileBertForMaskedLM", "MobileBertModel", "MobileBertForPreTraining"].contains($0) }) {
            throw SwiftBERTError.unsupportedCheckpoint(path: path, reason: "architecture '\(printable(other))' is not supported for MobileBERT; SwiftBERT runs MobileBertForMaskedLM and MobileBertModel")
        }
        config.encoder.architecture = .mobileBERT
        config.encoder.mobileBert = try MobileBertConfig.read(json, path: path)
        if json["hidden_act"] == nil { config.encoder.hiddenAct = "relu" }  // transformers' MobileBertConfig default
    }

    /// MobileBertLMPredictionHead multiplies by cat([decoder.weight.t(), dense.weight], dim=0), an
    /// [H × V] matrix: the word embeddings for the first E inputs, `cls.predictions.dense` [(H-E) × V]
    /// for the rest. Stored here as one [V × H] decoder (row v: embedding v, then column v of
    /// dense), so the head is one Linear like BERT's.
    static func mobileBertDecoder(embeddings: [Float], extraRows: [Float], vocabulary v: Int, embedding e: Int, hidden h: Int) -> [Float] {
        var decoder = [Float](repeating: 0, count: v * h)
        for row in 0..<v {
            for c in 0..<e { decoder[row * h + c] = embeddings[row * e + c] }
            for c in 0..<(h - e) { decoder[row * h + e + c] = extraRows[c * v + row] }
        }
        return decoder
    }
}
