import Foundation

/// What a sentence-transformers folder says about going from token vectors to a sentence vector:
/// modules.json (which modules, in order), 1_Pooling/config.json in both of its formats,
/// 2_Dense, Normalize, sentence_bert_config.json (max_seq_length) and
/// config_sentence_transformers.json (prompts, default_prompt_name).
enum SentenceTransformersFolder {
    /// The settings folded into `config`, and the Dense modules' tensors to store.
    static func read(_ folder: URL, into config: inout ModelConfig) throws -> [SafeTensorsWriter.Entry] {
        if case let .number(length)? = json(folder, "sentence_bert_config.json")?["max_seq_length"], length >= 1, length <= 1e9 {
            config.encoder.maxSequenceLength = min(Int(length), config.encoder.positionLimit)
        }
        if case let .object(settings)? = json(folder, "config_sentence_transformers.json") {
            if case let .object(prompts)? = settings["prompts"], !prompts.isEmpty {
                var texts: [String: String] = [:]
                for (name, value) in prompts {
                    guard let text = value.string else {
                        throw SwiftBERTError.invalidConfig(path: folder.appendingPathComponent("config_sentence_transformers.json").path,
                                                      reason: "prompt '\(printable(name))' is not a string; fix the file")
                    }
                    texts[name] = text
                }
                config.heads.sentence.prompts = texts
            }
            config.heads.sentence.defaultPromptName = settings["default_prompt_name"]?.string
        }
        guard let modules = json(folder, "modules.json")?.array else { return [] }
        var dense: [SafeTensorsWriter.Entry] = []
        config.heads.sentence.normalize = false
        for module in modules {
            let type = module["type"]?.string ?? ""
            let path = module["path"]?.string ?? ""
            let kind = type.split(separator: ".").last.map(String.init) ?? ""
            switch kind {
            case "Transformer":
                continue
            case "Pooling":
                try readPooling(folder, path, into: &config)
            case "Dense":
                dense += try readDense(folder, path, index: config.heads.sentence.denseLayers?.count ?? 0, into: &config)
            case "Normalize":
                config.heads.sentence.normalize = true
            default:
                throw SwiftBERTError.unsupportedCheckpoint(path: folder.path, reason: "modules.json lists the sentence-transformers module '\(printable(type))', which SwiftBERT does not implement (it runs Transformer, Pooling, Dense and Normalize); use a model made of those")
            }
        }
        return dense
    }

    /// Both formats: `{"pooling_mode": "cls", "include_prompt": true}` (sentence-transformers 6)
    /// and the older `pooling_mode_cls_token: true, ...` booleans.
    static func readPooling(_ folder: URL, _ path: String, into config: inout ModelConfig) throws {
        let file = folder.appendingPathComponent(path).appendingPathComponent("config.json")
        guard let settings = json(folder, path + "/config.json") else {
            throw SwiftBERTError.unsupportedCheckpoint(path: file.path, reason: "the Pooling module's config.json is missing or not JSON; give the complete sentence-transformers folder")
        }
        let legacyFlags: [(String, Pooling)] = [
            ("pooling_mode_cls_token", .cls), ("pooling_mode_max_tokens", .max), ("pooling_mode_mean_tokens", .mean),
            ("pooling_mode_mean_sqrt_len_tokens", .meanSqrtLenTokens), ("pooling_mode_weightedmean_tokens", .weightedMean),
            ("pooling_mode_lasttoken", .lastToken),
        ]
        var modes: [String]
        switch settings["pooling_mode"] {
        case let .string(mode)?: modes = [mode]
        case let .array(list)?: modes = list.compactMap(\.string)
        default:
            // As sentence-transformers reads the old format: every flag set, mean when none is.
            modes = legacyFlags.filter { settings[$0.0]?.bool == true }.map { $0.1.rawValue }
            if modes.isEmpty { modes = [Pooling.mean.rawValue] }
        }
        guard modes.count == 1, let mode = Pooling(rawValue: modes[0]) else {
            let known = Pooling.allCases.map(\.rawValue).joined(separator: ", ")
            throw SwiftBERTError.unsupportedCheckpoint(path: file.path, reason: "asks for pooling \(printable(modes.joined(separator: " + "))); SwiftBERT implements one mode at a time, of \(known): use a model with one of those")
        }
        config.heads.sentence.pooling = mode
        config.heads.sentence.includePrompt = settings["include_prompt"]?.bool ?? true
    }

    /// A Dense module's config.json and weights (model.safetensors, tensors linear.weight/bias).
    static func readDense(_ folder: URL, _ path: String, index: Int, into config: inout ModelConfig) throws -> [SafeTensorsWriter.Entry] {
        let directory = folder.appendingPathComponent(path)
        guard let settings = json(folder, path + "/config.json") else {
            throw SwiftBERTError.unsupportedCheckpoint(path: directory.path, reason: "the Dense module's config.json is missing or not JSON; give the complete sentence-transformers folder")
        }
        func count(_ key: String) throws -> Int {
            guard case let .number(value)? = settings[key], value >= 1, value <= Double(ModelConfig.maximumSize), value == value.rounded() else {
                throw SwiftBERTError.invalidConfig(path: directory.appendingPathComponent("config.json").path, reason: "\(key) is missing or not a positive integer; fix the file")
            }
            return Int(value)
        }
        let activationName = settings["activation_function"]?.string ?? "torch.nn.modules.activation.Tanh"
        let activation: DenseLayerConfig.Activation
        switch activationName.split(separator: ".").last.map(String.init) ?? "" {
        case "Tanh": activation = .tanh
        case "Identity": activation = .identity
        default:
            throw SwiftBERTError.unsupportedCheckpoint(path: directory.path, reason: "the Dense module's activation is \(printable(activationName)); SwiftBERT implements Tanh and Identity")
        }
        let layer = DenseLayerConfig(inFeatures: try count("in_features"), outFeatures: try count("out_features"),
                                     hasBias: settings["bias"]?.bool ?? true, activation: activation)
        // Older sentence-transformers saved Dense modules as pytorch_model.bin.
        let safetensorsPath = directory.appendingPathComponent("model.safetensors").path
        let torchPath = directory.appendingPathComponent("pytorch_model.bin").path
        let file: any TensorSource
        if FileManager.default.fileExists(atPath: safetensorsPath) {
            file = try SafeTensorsFile(path: safetensorsPath)
        } else if FileManager.default.fileExists(atPath: torchPath) {
            file = try TorchCheckpoint(path: torchPath)
        } else {
            throw SwiftBERTError.unsupportedCheckpoint(path: directory.path, reason: "the Dense module has no model.safetensors or pytorch_model.bin; give the complete sentence-transformers folder")
        }
        let weightsPath = file.path
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] {
            guard let actual = file.shape(name) else {
                throw SwiftBERTError.unsupportedCheckpoint(path: weightsPath, reason: "missing tensor '\(name)'")
            }
            guard actual == shape else {
                throw SwiftBERTError.invalidWeights(path: weightsPath, reason: "tensor '\(name)' has shape \(actual), its config.json implies \(shape)")
            }
            return try file.floatArray(name)
        }
        let prefix = TensorNames.sentenceDense(index) + "."
        // A Dense module without bias gets a zero one (adding it changes nothing), so that it
        // loads as every Linear layer does.
        let bias = layer.hasBias ? try tensor("linear.bias", [layer.outFeatures]) : [Float](repeating: 0, count: layer.outFeatures)
        let entries = [SafeTensorsWriter.Entry(name: prefix + "weight", shape: [layer.outFeatures, layer.inFeatures],
                                               floats: try tensor("linear.weight", [layer.outFeatures, layer.inFeatures])),
                       SafeTensorsWriter.Entry(name: prefix + "bias", shape: [layer.outFeatures], floats: bias)]
        config.heads.sentence.denseLayers = (config.heads.sentence.denseLayers ?? []) + [layer]
        return entries
    }

    static func json(_ folder: URL, _ path: String) -> JSONValue? {
        guard let data = try? readBoundedFile(folder.appendingPathComponent(path), limit: 4 << 20, what: path) else { return nil }
        return try? JSONDecoder().decode(JSONValue.self, from: data)
    }
}
