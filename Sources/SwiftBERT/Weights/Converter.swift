import Foundation

/// Turns a Hugging Face BERT folder into SwiftBERT's format: one float32 safetensors file with
/// canonical names (no `bert.` prefix, LayerNorm weight/bias, Q/K/V fused into one matrix),
/// our config.json, the vocabulary, and the pooling mode. Everything costly is done here, once.
public enum Converter {
    public static let formatVersion = "1"

    public struct Report: Sendable {
        public let config: BertConfig
        public let tensorCount: Int
        public let droppedTensors: [String]
    }

    @discardableResult
    public static func convert(huggingFaceFolder source: URL, to destination: URL) throws -> Report {
        let fm = FileManager.default
        guard fm.fileExists(atPath: source.path) else {
            throw BertError.fileNotFound(path: source.path, hint: "Give the folder of a Hugging Face BERT checkpoint.")
        }
        let config = try readConfig(source)
        let weightsURL = source.appendingPathComponent("model.safetensors")
        guard fm.fileExists(atPath: weightsURL.path) else {
            let hasBin = fm.fileExists(atPath: source.appendingPathComponent("pytorch_model.bin").path)
            throw BertError.notABertCheckpoint(path: source.path, reason: hasBin
                ? "only pytorch_model.bin is present; save it as model.safetensors first (transformers: model.save_pretrained(dir, safe_serialization=True))"
                : "model.safetensors is missing")
        }
        let file = try SafeTensorsFile(path: weightsURL.path)

        // Canonical name -> name in the checkpoint.
        var names: [String: String] = [:]
        for original in file.tensors.keys {
            var name = original
            if name.hasPrefix("bert.") { name.removeFirst(5) }
            if name.hasSuffix("LayerNorm.gamma") { name = String(name.dropLast(5)) + "weight" }
            if name.hasSuffix("LayerNorm.beta") { name = String(name.dropLast(4)) + "bias" }
            names[name] = original
        }
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] {
            guard let original = names[name] else {
                throw BertError.notABertCheckpoint(path: weightsURL.path, reason: "missing tensor '\(name)'")
            }
            let info = file.tensors[original]!
            guard info.shape == shape else {
                throw BertError.invalidWeights(path: weightsURL.path, reason: "tensor '\(original)' has shape \(info.shape), config.json implies \(shape)")
            }
            return try file.floatArray(original)
        }

        let h = config.hiddenSize, ffn = config.intermediateSize
        var out: [SafeTensorsWriter.Entry] = []
        var used: Set<String> = []
        func copy(_ name: String, _ shape: [Int]) throws {
            out.append(.init(name: name, shape: shape, floats: try tensor(name, shape)))
            used.insert(name)
        }

        try copy("embeddings.word_embeddings.weight", [config.vocabSize, h])
        try copy("embeddings.position_embeddings.weight", [config.maxPositionEmbeddings, h])
        try copy("embeddings.token_type_embeddings.weight", [config.typeVocabSize, h])
        try copy("embeddings.LayerNorm.weight", [h])
        try copy("embeddings.LayerNorm.bias", [h])
        for l in 0..<config.numHiddenLayers {
            let p = "encoder.layer.\(l)."
            // One GEMM for Q, K and V: rows [0,h) are Q, [h,2h) K, [2h,3h) V.
            var qkvWeight: [Float] = [], qkvBias: [Float] = []
            for part in ["query", "key", "value"] {
                qkvWeight += try tensor(p + "attention.self.\(part).weight", [h, h])
                qkvBias += try tensor(p + "attention.self.\(part).bias", [h])
                used.insert(p + "attention.self.\(part).weight"); used.insert(p + "attention.self.\(part).bias")
            }
            out.append(.init(name: p + "attention.self.qkv.weight", shape: [3 * h, h], floats: qkvWeight))
            out.append(.init(name: p + "attention.self.qkv.bias", shape: [3 * h], floats: qkvBias))
            try copy(p + "attention.output.dense.weight", [h, h])
            try copy(p + "attention.output.dense.bias", [h])
            try copy(p + "attention.output.LayerNorm.weight", [h])
            try copy(p + "attention.output.LayerNorm.bias", [h])
            try copy(p + "intermediate.dense.weight", [ffn, h])
            try copy(p + "intermediate.dense.bias", [ffn])
            try copy(p + "output.dense.weight", [h, ffn])
            try copy(p + "output.dense.bias", [h])
            try copy(p + "output.LayerNorm.weight", [h])
            try copy(p + "output.LayerNorm.bias", [h])
        }

        var finalConfig = config
        if names["cls.predictions.transform.dense.weight"] != nil {
            finalConfig.hasMaskedLMHead = true
            try copy("cls.predictions.transform.dense.weight", [h, h])
            try copy("cls.predictions.transform.dense.bias", [h])
            try copy("cls.predictions.transform.LayerNorm.weight", [h])
            try copy("cls.predictions.transform.LayerNorm.bias", [h])
            // The output bias is saved as cls.predictions.bias, or (older checkpoints) as decoder.bias.
            let biasName = names["cls.predictions.bias"] != nil ? "cls.predictions.bias" : "cls.predictions.decoder.bias"
            out.append(.init(name: "cls.predictions.bias", shape: [config.vocabSize], floats: try tensor(biasName, [config.vocabSize])))
            used.insert(biasName)
            // A decoder equal to the word embeddings is tied: store it once.
            if names["cls.predictions.decoder.weight"] != nil {
                let decoder = try tensor("cls.predictions.decoder.weight", [config.vocabSize, h])
                used.insert("cls.predictions.decoder.weight")
                if decoder != out[0].data.withUnsafeBytes({ Array($0.bindMemory(to: Float.self)) }) {
                    finalConfig.hasUntiedDecoder = true
                    out.append(.init(name: "cls.predictions.decoder.weight", shape: [config.vocabSize, h], floats: decoder))
                }
            }
        }

        let dropped = names.keys.filter { !used.contains($0) }.sorted().map { names[$0]! }
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        try SafeTensorsWriter.write(out, metadata: ["format": "swiftbert", "format_version": formatVersion],
                                    to: destination.appendingPathComponent("model.safetensors").path)
        try readSentenceTransformersSettings(source, into: &finalConfig)
        try finalConfig.validate(path: source.appendingPathComponent("config.json").path)
        try finalConfig.write(to: destination.appendingPathComponent("config.json"))
        try copyTokenizer(from: source, to: destination)
        return Report(config: finalConfig, tensorCount: out.count, droppedTensors: dropped)
    }

    /// Hugging Face's config.json, checked to describe a BERT encoder.
    static func readConfig(_ folder: URL) throws -> BertConfig {
        let url = folder.appendingPathComponent("config.json")
        guard let data = try? Data(contentsOf: url) else {
            throw BertError.notABertCheckpoint(path: folder.path, reason: "config.json is missing")
        }
        guard let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw BertError.invalidConfig(path: url.path, reason: "not a JSON object")
        }
        let modelType = json["model_type"] as? String ?? ""
        let architectures = json["architectures"] as? [String] ?? []
        guard modelType == "bert" || architectures.contains(where: { $0.hasPrefix("Bert") }) else {
            throw BertError.notABertCheckpoint(path: folder.path, reason: "model_type is '\(modelType)', architectures \(architectures); SwiftBERT runs BERT encoders only")
        }
        if let kind = json["position_embedding_type"] as? String, kind != "absolute" {
            throw BertError.invalidConfig(path: url.path, reason: "position_embedding_type '\(kind)' is not supported (absolute only)")
        }
        func int(_ key: String, _ fallback: Int? = nil) throws -> Int {
            if let v = json[key] as? NSNumber { return v.intValue }
            if let fallback { return fallback }
            throw BertError.invalidConfig(path: url.path, reason: "missing field '\(key)'")
        }
        let maxPositions = try int("max_position_embeddings")
        return BertConfig(
            vocabSize: try int("vocab_size"), hiddenSize: try int("hidden_size"),
            numHiddenLayers: try int("num_hidden_layers"), numAttentionHeads: try int("num_attention_heads"),
            intermediateSize: try int("intermediate_size"), maxPositionEmbeddings: maxPositions,
            typeVocabSize: try int("type_vocab_size", 2),
            layerNormEps: (json["layer_norm_eps"] as? NSNumber)?.floatValue ?? 1e-12,
            hiddenAct: json["hidden_act"] as? String ?? "gelu",
            pooling: .mean, maxSequenceLength: maxPositions,
            hasMaskedLMHead: false, hasUntiedDecoder: false)
    }

    /// sentence-transformers' modules.json, 1_Pooling/config.json and sentence_bert_config.json, when present.
    static func readSentenceTransformersSettings(_ folder: URL, into config: inout BertConfig) throws {
        func json(_ path: String) -> [String: Any]? {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(path)) else { return nil }
            return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        }
        if let length = json("sentence_bert_config.json")?["max_seq_length"] as? NSNumber {
            config.maxSequenceLength = min(length.intValue, config.maxPositionEmbeddings)
        }
        let modulesData = try? Data(contentsOf: folder.appendingPathComponent("modules.json"))
        let modules = modulesData.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [[String: Any]] } ?? []
        guard let pooling = modules.first(where: { ($0["type"] as? String)?.hasSuffix("Pooling") == true }),
              let path = pooling["path"] as? String, let settings = json(path + "/config.json") else { return }
        if settings["pooling_mode_cls_token"] as? Bool == true {
            config.pooling = .cls
        } else if settings["pooling_mode_mean_tokens"] as? Bool == true {
            config.pooling = .mean
        } else {
            throw BertError.notABertCheckpoint(path: folder.path, reason: "\(path)/config.json asks for a pooling mode SwiftBERT does not implement (mean and cls only)")
        }
    }

    static func copyTokenizer(from source: URL, to destination: URL) throws {
        let fm = FileManager.default
        let files = ["tokenizer.json", "vocab.txt", "tokenizer_config.json"].filter {
            fm.fileExists(atPath: source.appendingPathComponent($0).path)
        }
        guard files.contains("tokenizer.json") || files.contains("vocab.txt") else {
            throw BertError.notABertCheckpoint(path: source.path, reason: "neither tokenizer.json nor vocab.txt is present")
        }
        for name in files {
            let target = destination.appendingPathComponent(name)
            try? fm.removeItem(at: target)
            do { try fm.copyItem(at: source.appendingPathComponent(name), to: target) }
            catch { throw BertError.outputFailed(path: target.path, reason: error.localizedDescription) }
        }
    }
}
