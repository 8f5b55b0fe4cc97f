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
        let weightsURL = source.appendingPathComponent("model.safetensors")  // Hugging Face's name
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

        var finalConfig = config
        finalConfig.hasMaskedLMHead = names[TensorNames.join(TensorNames.maskedLMTransform, TensorNames.dense, "weight")] != nil
        var out: [SafeTensorsWriter.Entry] = []
        var used: Set<String> = []
        func copy(_ name: String, _ shape: [Int], from original: String? = nil) throws {
            out.append(.init(name: name, shape: shape, floats: try tensor(original ?? name, shape)))
            used.insert(original ?? name)
        }
        // A decoder equal to the word embeddings is tied: stored once, as the embeddings.
        let decoderName = TensorNames.join(TensorNames.maskedLMDecoder, "weight")
        if finalConfig.hasMaskedLMHead, names[decoderName] != nil {
            let shape = [config.vocabSize, config.hiddenSize]
            used.insert(decoderName)
            finalConfig.hasUntiedDecoder = try tensor(decoderName, shape) != tensor(TensorNames.join(TensorNames.wordEmbeddings, "weight"), shape)
        }
        for module in TensorNames.modules(finalConfig) {
            switch module.kind {
            case .table:
                try copy(module.name + ".weight", [module.rows, module.cols])
            case .layerNorm:
                try copy(module.name + ".weight", [module.cols])
                try copy(module.name + ".bias", [module.cols])
            case .linear where module.name.hasSuffix("." + TensorNames.qkv):
                // One GEMM for Q, K and V: the three projections stacked by output channel.
                let prefix = String(module.name.dropLast(TensorNames.qkv.count))
                let h = module.cols
                var weight: [Float] = [], bias: [Float] = []
                for part in [TensorNames.query, TensorNames.key, TensorNames.value] {
                    weight += try tensor(prefix + part + ".weight", [h, h])
                    bias += try tensor(prefix + part + ".bias", [h])
                    used.formUnion([prefix + part + ".weight", prefix + part + ".bias"])
                }
                out.append(.init(name: module.name + ".weight", shape: [module.rows, h], floats: weight))
                out.append(.init(name: module.name + ".bias", shape: [module.rows], floats: bias))
            case .linear:
                try copy(module.name + ".weight", [module.rows, module.cols])
                try copy(module.name + ".bias", [module.rows])
            }
        }
        if finalConfig.hasMaskedLMHead {
            // The output bias is saved as cls.predictions.bias, or (older checkpoints) as decoder.bias.
            let legacy = TensorNames.join(TensorNames.maskedLMDecoder, "bias")
            try copy(TensorNames.maskedLMBias, [config.vocabSize], from: names[TensorNames.maskedLMBias] != nil ? nil : legacy)
        }

        let dropped = names.keys.filter { !used.contains($0) }.sorted().map { names[$0]! }
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        try SafeTensorsWriter.write(out, metadata: ["format": "swiftbert", "format_version": formatVersion],
                                    to: destination.appendingPathComponent(WeightFiles.fp32).path)
        try readSentenceTransformersSettings(source, into: &finalConfig)
        try finalConfig.validate(path: source.appendingPathComponent("config.json").path)
        try finalConfig.write(to: destination.appendingPathComponent("config.json"))
        try copyTokenizer(from: source, to: destination)
        return Report(config: finalConfig, tensorCount: out.count, droppedTensors: dropped)
    }

    /// Hugging Face's config.json, checked to describe a BERT encoder.
    static func readConfig(_ folder: URL) throws -> BertConfig {
        let url = folder.appendingPathComponent("config.json")
        let data: Data
        do {
            data = try readBoundedFile(url, limit: 4 << 20, what: "config.json")
        } catch CocoaError.fileReadNoSuchFile {
            throw BertError.notABertCheckpoint(path: folder.path, reason: "config.json is missing; give the folder of a Hugging Face checkpoint")
        }
        return try readConfig(data, path: url.path, folder: folder.path)
    }

    /// The same from the file's bytes (the converter's path, and the fuzzer's); validated.
    static func readConfig(_ data: Data, path: String, folder: String) throws -> BertConfig {
        guard case let .object(json)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw BertError.invalidConfig(path: path, reason: "not a JSON object; give the checkpoint's own config.json")
        }
        let modelType = json["model_type"]?.string ?? ""
        let architectures = (json["architectures"]?.array ?? []).compactMap(\.string)
        guard modelType == "bert" || architectures.contains(where: { $0.hasPrefix("Bert") }) else {
            throw BertError.notABertCheckpoint(path: folder, reason: "model_type is '\(printable(modelType))', architectures \(printable("\(architectures)")); SwiftBERT runs BERT encoders only")
        }
        if let kind = json["position_embedding_type"]?.string, kind != "absolute" {
            throw BertError.invalidConfig(path: path, reason: "position_embedding_type '\(printable(kind))' is not supported (absolute only); use a BERT checkpoint with absolute positions")
        }
        func int(_ key: String, _ fallback: Int? = nil) throws -> Int {
            switch json[key] {
            case nil, .null?:
                if let fallback { return fallback }
                throw BertError.invalidConfig(path: path, reason: "missing field '\(key)'; give the checkpoint's own config.json")
            case let .number(value)? where value == value.rounded() && abs(value) <= 1e15:
                return Int(value)
            case let other?:
                throw BertError.invalidConfig(path: path, reason: "\(key) is \(printable("\(other)")), not an integer; fix config.json")
            }
        }
        let maxPositions = try int("max_position_embeddings")
        var eps: Float = 1e-12
        if case let .number(value)? = json["layer_norm_eps"] { eps = Float(value) }
        let config = BertConfig(
            vocabSize: try int("vocab_size"), hiddenSize: try int("hidden_size"),
            numHiddenLayers: try int("num_hidden_layers"), numAttentionHeads: try int("num_attention_heads"),
            intermediateSize: try int("intermediate_size"), maxPositionEmbeddings: maxPositions,
            typeVocabSize: try int("type_vocab_size", 2),
            layerNormEps: eps,
            hiddenAct: json["hidden_act"]?.string ?? "gelu",
            pooling: .mean, maxSequenceLength: maxPositions,
            hasMaskedLMHead: false, hasUntiedDecoder: false)
        // Before any tensor is looked at: sizes drive loops and the shapes checked against the file.
        try config.validate(path: path)
        return config
    }

    /// sentence-transformers' modules.json, 1_Pooling/config.json and sentence_bert_config.json, when present.
    static func readSentenceTransformersSettings(_ folder: URL, into config: inout BertConfig) throws {
        func json(_ path: String) -> JSONValue? {
            guard let data = try? readBoundedFile(folder.appendingPathComponent(path), limit: 4 << 20, what: path) else { return nil }
            return try? JSONDecoder().decode(JSONValue.self, from: data)
        }
        if case let .number(length)? = json("sentence_bert_config.json")?["max_seq_length"], length >= 1, length <= 1e9 {
            config.maxSequenceLength = min(Int(length), config.maxPositionEmbeddings)
        }
        let modules = json("modules.json")?.array ?? []
        guard let pooling = modules.first(where: { $0["type"]?.string?.hasSuffix("Pooling") == true }),
              let path = pooling["path"]?.string, let settings = json(path + "/config.json") else { return }
        if settings["pooling_mode_cls_token"]?.bool == true {
            config.pooling = .cls
        } else if settings["pooling_mode_mean_tokens"]?.bool == true {
            config.pooling = .mean
        } else {
            throw BertError.notABertCheckpoint(path: folder.path, reason: "\(printable(path))/config.json asks for a pooling mode SwiftBERT does not implement (mean and cls only); use a model with mean or CLS pooling")
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
