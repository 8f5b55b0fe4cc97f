import Foundation

/// Turns a Hugging Face BERT folder into SwiftBERT's format: one float32 safetensors file with
/// canonical names (no `bert.` prefix, LayerNorm weight/bias, Q/K/V fused into one matrix),
/// our config.json, the vocabulary, and the pooling mode. Everything costly is done here, once.
public enum Converter {
    public static let formatVersion = "1"

    /// What a conversion read and wrote.
    public struct Report: Sendable {
        public let config: ModelConfig
        public let tensorCount: Int
        public let droppedTensors: [String]
    }

    @discardableResult
    public static func convert(huggingFaceFolder source: URL, to destination: URL) throws -> Report {
        let fm = FileManager.default
        guard fm.fileExists(atPath: source.path) else {
            throw SwiftBERTError.fileNotFound(path: source.path, hint: "Give the folder of a Hugging Face BERT checkpoint.")
        }
        try checkDestination(destination, source: source)
        let config = try readConfig(source)
        let family = ModelFamilies.family(of: config.encoder)
        if let report = try family.convert(source: source, config: config, to: destination) { return report }
        let file = try CheckpointShards(folder: source)
        let weightsPath = file.path

        // Canonical name -> name in the checkpoint.
        var names: [String: String] = [:]
        for original in file.names {
            var name = original
            if name.hasPrefix("bert.") { name.removeFirst(5) }
            if name.hasPrefix("mobilebert.") { name.removeFirst("mobilebert.".count) }
            if name.hasSuffix("LayerNorm.gamma") { name = String(name.dropLast(5)) + "weight" }
            if name.hasSuffix("LayerNorm.beta") { name = String(name.dropLast(4)) + "bias" }
            if config.encoder.isDistilBERT { name = distilBERTName(name) }
            if config.encoder.isRoberta { name = robertaName(name) }
            if config.encoder.architecture == .mpnet { name = mpnetName(name) }
            if config.encoder.rotary != nil, let family = config.encoder.architecture { name = rotaryName(name, family, classifies: config.heads.task != nil) }
            name = family.canonicalName(name, config: config)
            // Two tensors under one name would leave the choice to dictionary order.
            if let other = names[name] {
                throw SwiftBERTError.invalidWeights(path: weightsPath, reason: "tensors '\(printable(other))' and '\(printable(original))' both read as '\(printable(name))'; the checkpoint mixes two layouts: keep one of them")
            }
            names[name] = original
        }
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] {
            guard let original = names[name] else {
                throw SwiftBERTError.unsupportedCheckpoint(path: weightsPath, reason: "missing tensor '\(name)'")
            }
            let info = file.info(original)!
            guard info.shape == shape else {
                throw SwiftBERTError.invalidWeights(path: weightsPath, reason: "tensor '\(original)' has shape \(info.shape), config.json implies \(shape)")
            }
            return try file.floatArray(original)
        }

        var finalConfig = config
        finalConfig.heads.hasMaskedLMHead = names[TensorNames.join(TensorNames.maskedLMTransform, TensorNames.dense, "weight")] != nil
        try checkTaskHead(config, hasClassifier: names[TensorNames.join(TensorNames.classifier, "weight")] != nil)
        // BERT's pooler comes before a sequence classifier; a plain encoder's is kept too (h×h,
        // small) for `bert train-classifier`, whose features are its output.
        if !config.encoder.isDistilBERT, config.encoder.rotary == nil, config.heads.task?.kind == .sequenceClassification
            || (config.heads.task?.kind == nil && names[TensorNames.join(TensorNames.pooler, "weight")] != nil) {
            finalConfig.heads.hasPooler = true
        }
        var out: [SafeTensorsWriter.Entry] = []
        var used: Set<String> = []
        func copy(_ name: String, _ shape: [Int], from original: String? = nil) throws {
            out.append(.init(name: name, shape: shape, floats: try tensor(original ?? name, shape)))
            used.insert(original ?? name)
        }
        // The rotary families leave out biases (NomicBERT all, ModernBERT all, GTE its gate):
        // a zero bias adds nothing, exactly, and keeps one Linear and one LayerNorm in the engine.
        func copyBias(_ name: String, _ size: Int) throws {
            if config.encoder.rotary != nil, names[name] == nil {
                out.append(.init(name: name, shape: [size], floats: [Float](repeating: 0, count: size)))
            } else {
                try copy(name, [size])
            }
        }
        /// Rows of several tensors stacked (the fused projections), each half or third [rows × cols].
        func stacked(_ parts: [String], rows: Int, cols: Int) throws -> [Float] {
            used.formUnion(parts)
            return try parts.flatMap { try tensor($0, [rows, cols]) }
        }
        // A decoder equal to the word embeddings is tied: stored once, as the embeddings.
        let decoderName = TensorNames.join(TensorNames.maskedLMDecoder, "weight")
        if finalConfig.heads.hasMaskedLMHead, config.encoder.mobileBert != nil {
            finalConfig.heads.hasUntiedDecoder = true  // the embeddings widened by cls.predictions.dense
        } else if finalConfig.heads.hasMaskedLMHead, names[decoderName] != nil {
            let shape = [config.encoder.vocabSize, config.encoder.hiddenSize]
            used.insert(decoderName)
            finalConfig.heads.hasUntiedDecoder = try tensor(decoderName, shape) != tensor(TensorNames.join(TensorNames.wordEmbeddings, "weight"), shape)
        }
        // Every module of the table: the encoder, the masked-LM transform, the task head. (The
        // config has no Dense modules yet: SentenceTransformersFolder reads them, with their
        // tensors, below.)
        for module in TensorNames.modules(finalConfig) {
            switch module.kind {
            case .table where module.name == TensorNames.tokenTypeEmbeddings
                && (config.encoder.lacksTokenTypeTable || (family.mayLackTokenTypeTable && names[module.name + ".weight"] == nil)):
                // DistilBERT, MPNet, ModernBERT, some GTEs and DeBERTa-v3 have no token types:
                // one all-zero type row adds nothing, exactly.
                out.append(.init(name: module.name + ".weight", shape: [module.rows, module.cols],
                                 floats: [Float](repeating: 0, count: module.rows * module.cols)))
            case .table where module.name == TensorNames.maskedLMDecoder && config.encoder.mobileBert != nil:
                let (v, h, e) = (module.rows, module.cols, config.encoder.mobileBert!.embeddingSize)
                // transformers ties decoder.weight to the word embeddings and may not save it.
                let embeddings = names[decoderName] ?? TensorNames.join(TensorNames.wordEmbeddings, "weight")
                let extraRows = TensorNames.join(TensorNames.maskedLMExtraRows, "weight")
                out.append(.init(name: decoderName, shape: [v, h], floats: mobileBertDecoder(
                    embeddings: try tensor(embeddings, [v, e]), extraRows: try tensor(extraRows, [h - e, v]),
                    vocabulary: v, embedding: e, hidden: h)))
                used.formUnion([embeddings, extraRows])
            case .table:
                try copy(module.name + ".weight", [module.rows, module.cols])
            case .layerNorm:
                try copy(module.name + ".weight", [module.cols])
                try copyBias(module.name + ".bias", module.cols)
            case .linear where module.name.hasSuffix("." + TensorNames.qkv) && names[module.name + ".weight"] != nil:
                // Q, K and V already fused (ModernBERT's Wqkv, nomic's and Alibaba's remote code).
                try copy(module.name + ".weight", [module.rows, module.cols])
                try copyBias(module.name + ".bias", module.rows)
            case .linear where module.name.hasSuffix("." + TensorNames.gateUp):
                // The activated projection's rows first, then the multiplied one's: ModernBERT's
                // Wi is so already; GTE's remote up_gate_proj is the other way round; NomicBERT
                // and transformers 5.x keep gate_proj and up_proj apart.
                let prefix = String(module.name.dropLast(TensorNames.gateUp.count)), (f, h) = (module.rows / 2, module.cols)
                let weight: [Float]
                if names[module.name + ".weight"] != nil {
                    weight = try stacked([module.name + ".weight"], rows: module.rows, cols: h)
                } else if names[prefix + "up_gate.weight"] != nil {
                    let upGate = try stacked([prefix + "up_gate.weight"], rows: module.rows, cols: h)
                    weight = Array(upGate[(f * h)...] + upGate[..<(f * h)])
                } else {
                    weight = try stacked([prefix + "gate.weight", prefix + "up.weight"], rows: f, cols: h)
                }
                if names[module.name + ".bias"] != nil || names[prefix + "up_gate.bias"] != nil || names[prefix + "gate.bias"] != nil {
                    throw SwiftBERTError.unsupportedCheckpoint(path: weightsPath, reason: "the gated feed-forward network has biases, which SwiftBERT's rotary encoders do not take; use a checkpoint without them")
                }
                out.append(.init(name: module.name + ".weight", shape: [module.rows, h], floats: weight))
                out.append(.init(name: module.name + ".bias", shape: [module.rows], floats: [Float](repeating: 0, count: module.rows)))
            case .linear where module.name.hasSuffix("." + TensorNames.qkv):
                // One GEMM for Q, K and V: the three projections stacked by output channel.
                let prefix = String(module.name.dropLast(TensorNames.qkv.count))
                let h = module.cols
                var weight: [Float] = [], bias: [Float] = []
                for part in [TensorNames.query, TensorNames.key, TensorNames.value] {
                    weight += try tensor(prefix + part + ".weight", [h, h])
                    // NomicBERT's projections have no bias.
                    bias += config.encoder.rotary != nil && names[prefix + part + ".bias"] == nil
                        ? [Float](repeating: 0, count: h) : try tensor(prefix + part + ".bias", [h])
                    used.formUnion([prefix + part + ".weight", prefix + part + ".bias"])
                }
                out.append(.init(name: module.name + ".weight", shape: [module.rows, h], floats: weight))
                out.append(.init(name: module.name + ".bias", shape: [module.rows], floats: bias))
            case .linear:
                try copy(module.name + ".weight", [module.rows, module.cols])
                try copyBias(module.name + ".bias", module.rows)
            }
        }
        if finalConfig.heads.hasMaskedLMHead {
            // The output bias is saved as cls.predictions.bias, or (older checkpoints) as decoder.bias.
            let legacy = TensorNames.join(TensorNames.maskedLMDecoder, "bias")
            if config.encoder.rotary != nil, names[TensorNames.maskedLMBias] == nil, names[legacy] == nil {
                try copyBias(TensorNames.maskedLMBias, config.encoder.vocabSize)  // ModernBERT without decoder_bias
            } else {
                try copy(TensorNames.maskedLMBias, [config.encoder.vocabSize], from: names[TensorNames.maskedLMBias] != nil ? nil : legacy)
            }
        }
        out += try SentenceTransformersFolder.read(source, into: &finalConfig)
        out += try readRetrievalHeads(source, into: &finalConfig)
        return try writeFolder(out, config: finalConfig, names: names, used: used, source: source, destination: destination)
    }

    /// The destination must be a folder, new or not, other than the checkpoint's own: converting
    /// in place would write model.safetensors over the weights being read.
    static func checkDestination(_ destination: URL, source: URL) throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: destination.path, isDirectory: &isFolder), !isFolder.boolValue {
            throw SwiftBERTError.outputFailed(path: destination.path, reason: "it is a file, not a folder; give a folder to write the converted model into")
        }
        if destination.resolvingSymlinksInPath().standardizedFileURL.path == source.resolvingSymlinksInPath().standardizedFileURL.path {
            throw SwiftBERTError.outputFailed(path: destination.path, reason: "it is the checkpoint's own folder, whose files converting would overwrite; give another folder")
        }
    }

    /// The last step of every family's conversion: the converted tensors (one float32 file), the
    /// config (validated against the checkpoint's), the tokenizer files. The checkpoint's tensors
    /// that nothing read (`names` by converted name, less `used`) are reported as dropped.
    static func writeFolder(_ tensors: [SafeTensorsWriter.Entry], config: ModelConfig, names: [String: String], used: Set<String>,
                            source: URL, destination: URL) throws -> Report {
        let dropped = names.keys.filter { !used.contains($0) }.sorted().map { names[$0]! }
        try SwiftBERTError.writing(destination.path) { try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true) }
        try SafeTensorsWriter.write(tensors, metadata: ["format": "swiftbert", "format_version": formatVersion],
                                    to: destination.appendingPathComponent(WeightFiles.fp32).path)
        try config.validate(path: source.appendingPathComponent("config.json").path)
        try config.write(to: destination.appendingPathComponent("config.json"))
        try copyTokenizer(from: source, to: destination)
        return Report(config: config, tensorCount: tensors.count, droppedTensors: dropped)
    }

    /// Hugging Face's config.json, checked to describe a BERT encoder.
    static func readConfig(_ folder: URL) throws -> ModelConfig {
        let url = folder.appendingPathComponent("config.json")
        let data: Data
        do {
            data = try readBoundedFile(url, limit: 4 << 20, what: "config.json")
        } catch CocoaError.fileReadNoSuchFile {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder.path, reason: "config.json is missing; give the folder of a Hugging Face checkpoint")
        }
        return try readConfig(data, path: url.path, folder: folder.path)
    }

    /// The same from the file's bytes (the converter's path, and the fuzzer's); validated. The
    /// family that reads it (`ModelFamilies`) makes the config.
    static func readConfig(_ data: Data, path: String, folder: String) throws -> ModelConfig {
        guard case let .object(json)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw SwiftBERTError.invalidConfig(path: path, reason: "not a JSON object; give the checkpoint's own config.json")
        }
        let modelType = json["model_type"]?.string ?? ""
        let architectures = (json["architectures"]?.array ?? []).compactMap(\.string)
        guard let family = ModelFamilies.family(modelType: modelType, architectures: architectures) else {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "model_type is '\(printable(modelType))', architectures \(printable("\(architectures)")); SwiftBERT runs \(ModelFamilies.supportedNames) encoders (docs/models.md)")
        }
        return try family.readConfig(json, modelType: modelType, architectures: architectures, path: path, folder: folder)
    }

    /// The BERT variant a config.json names by model_type, or by architectures without one (nil: none).
    static func bertVariant(modelType: String, architectures: [String]) -> Architecture? {
        func named(_ type: String, _ prefix: String) -> Bool {
            modelType == type || (modelType.isEmpty && architectures.contains(where: { $0.hasPrefix(prefix) }))
        }
        if named("distilbert", "DistilBert") { return .distilBERT }
        if named("mpnet", "MPNet") { return .mpnet }
        // XLM-RoBERTa's classes are RoBERTa's under another name (transformers copies them).
        if named("xlm-roberta", "XLMRoberta") { return .xlmRoberta }
        if named("roberta", "Roberta") { return .roberta }
        if modelType == "bert" || architectures.contains(where: { $0.hasPrefix("Bert") }) { return .bert }
        return nil
    }

    /// A rotary encoder's config.json (NomicBERT, GTE, ModernBERT), with its classification head.
    static func readRotaryConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String, folder: String) throws -> ModelConfig {
        guard let family = rotaryFamily(modelType: modelType, architectures: architectures) else {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "model_type '\(printable(modelType))' is not a rotary encoder's")
        }
        let classifies = architectures.contains(where: { $0.contains("ForSequenceClassification") || $0.contains("ForTokenClassification") })
        if classifies, family != .modernBERT {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "\(printable(architectures.joined(separator: ", "))): classification heads on \(family.displayName) are not supported yet (the encoder and its sentence embeddings are); convert the base model")
        }
        var config = try rotaryConfig(family, json, path: path)
        let pooling = family == .modernBERT ? try classifierPooling(json, path: path) : .cls
        if classifies {
            config.heads.task = TaskHeadConfig(kind: architectures.contains(where: { $0.contains("ForTokenClassification") }) ? .tokenClassification : .sequenceClassification)
            config.heads.task?.classifierPooling = pooling
            config.heads.task?.labels = try readLabels(json, path: path)
            config.heads.task?.problemType = json["problem_type"]?.string
        }
        try config.validate(path: path)
        return config
    }

    /// A config.json of BERT's layers (BERT, DistilBERT, RoBERTa, XLM-R, MPNet), or MobileBERT's
    /// (BERT's fields and its own), with its classification head.
    static func readBertConfig(_ json: [String: JSONValue], modelType: String, architectures: [String], path: String,
                               isMobileBERT: Bool) throws -> ModelConfig {
        let variant = isMobileBERT ? nil : bertVariant(modelType: modelType, architectures: architectures)
        let isDistilBERT = variant == .distilBERT, isMPNet = variant == .mpnet
        let roberta: Architecture? = variant == .roberta || variant == .xlmRoberta ? variant : nil
        if roberta != nil, json["is_decoder"]?.bool == true {
            throw SwiftBERTError.invalidConfig(path: path, reason: "is_decoder is true: a causal RoBERTa decoder, which SwiftBERT does not run; use an encoder checkpoint")
        }
        if let kind = json["position_embedding_type"]?.string, kind != "absolute" {
            throw SwiftBERTError.invalidConfig(path: path, reason: "position_embedding_type '\(printable(kind))' is not supported (absolute only); use a BERT checkpoint with absolute positions")
        }
        func int(_ key: String, _ fallback: Int? = nil) throws -> Int {
            switch json[key] {
            case nil, .null?:
                if let fallback { return fallback }
                throw SwiftBERTError.invalidConfig(path: path, reason: "missing field '\(key)'; give the checkpoint's own config.json")
            case let .number(value)? where value == value.rounded() && abs(value) <= 1e15:
                return Int(value)
            case let other?:
                throw SwiftBERTError.invalidConfig(path: path, reason: "\(key) is \(printable("\(other)")), not an integer; fix config.json")
            }
        }
        let maxPositions = try int("max_position_embeddings")
        var eps: Float = 1e-12
        if case let .number(value)? = json["layer_norm_eps"] { eps = Float(value) }
        // DistilBERT names its sizes differently (dim, n_layers, n_heads, hidden_dim, activation).
        let key = isDistilBERT
            ? ["hidden_size": "dim", "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads", "intermediate_size": "hidden_dim", "hidden_act": "activation"]
            : [:]
        func name(_ bert: String) -> String { key[bert] ?? bert }
        var config = ModelConfig(encoder: EncoderConfig(
            vocabSize: try int("vocab_size"), hiddenSize: try int(name("hidden_size")),
            numHiddenLayers: try int(name("num_hidden_layers")), numAttentionHeads: try int(name("num_attention_heads")),
            intermediateSize: try int(name("intermediate_size")), maxPositionEmbeddings: maxPositions,
            typeVocabSize: try isDistilBERT || isMPNet ? 1 : int("type_vocab_size", 2),
            layerNormEps: eps,
            hiddenAct: json[name("hidden_act")]?.string ?? "gelu",
            maxSequenceLength: maxPositions))
        if isDistilBERT { config.encoder.architecture = .distilBERT }
        if isMobileBERT { try addMobileBertFields(to: &config, json, architectures: architectures, path: path) }
        if let roberta {
            // Positions start after padding_idx (pad_token_id, 1 in every RoBERTa and XLM-R).
            config.encoder.architecture = roberta
            config.encoder.paddingIdx = try int("pad_token_id", 1)
            config.encoder.maxSequenceLength = config.encoder.positionLimit
        }
        if isMPNet {
            // MPNetEmbeddings counts positions as RoBERTa does, from padding_idx + 1.
            config.encoder.architecture = .mpnet
            config.encoder.paddingIdx = try int("pad_token_id", 1)
            config.encoder.maxSequenceLength = config.encoder.positionLimit
            config.encoder.relativeAttentionNumBuckets = try int("relative_attention_num_buckets", 32)
        }
        var withHead = config
        withHead.heads.task = try taskHead(json, architectures: architectures, path: path)
        // Before any tensor is looked at: sizes drive loops and the shapes checked against the file.
        try withHead.validate(path: path)
        return withHead
    }

    /// The classification head a *ForSequenceClassification or *ForTokenClassification class
    /// names, with its labels and problem_type; nil for any other class.
    static func taskHead(_ json: [String: JSONValue], architectures: [String], path: String) throws -> TaskHeadConfig? {
        var task: TaskHeadConfig
        if architectures.contains(where: { $0.hasSuffix("ForSequenceClassification") }) {
            task = TaskHeadConfig(kind: .sequenceClassification)
        } else if architectures.contains(where: { $0.hasSuffix("ForTokenClassification") }) {
            task = TaskHeadConfig(kind: .tokenClassification)
        } else {
            return nil
        }
        task.labels = try readLabels(json, path: path)
        task.problemType = json["problem_type"]?.string
        return task
    }

    /// DistilBERT's tensor names as the BERT names the engine loads (`TensorNames`' DistilBERT
    /// table): the same computation under other names, but for the classification head's
    /// pre_classifier, which keeps its name (ReLU, not the pooler's tanh).
    static func distilBERTName(_ name: String) -> String {
        var name = name
        if name.hasPrefix("distilbert.") { name.removeFirst("distilbert.".count) }
        for (from, to) in TensorNames.distilBERTLayerNames { name = name.replacingOccurrences(of: from, with: to) }
        for (from, to) in TensorNames.distilBERTMaskedLMNames where name.hasPrefix(from) { name = to + name.dropFirst(from.count) }
        return name
    }

    /// MPNet's tensor names (after `mpnet.`) as BERT's: the layer's `attn.q/k/v/o` and its
    /// attention LayerNorm (`TensorNames.mpnetLayerNames`); the heads are RoBERTa's.
    static func mpnetName(_ name: String) -> String {
        var name = name
        if name.hasPrefix("mpnet.") { name.removeFirst("mpnet.".count) }
        for (from, to) in TensorNames.mpnetLayerNames { name = name.replacingOccurrences(of: from, with: to) }
        return robertaName(name)
    }

    /// RoBERTa's and XLM-R's tensor names (after `roberta.`, if the checkpoint has it) as the
    /// BERT names the engine loads: the encoder's are BERT's already; the lm_head is BERT's
    /// masked-LM head (dense, GELU, LayerNorm, decoder + bias), and the sequence classifier
    /// (dense + tanh on <s>, then out_proj) is BERT's pooler and classifier.
    static func robertaName(_ name: String) -> String {
        var name = name
        if name.hasPrefix("roberta.") { name.removeFirst("roberta.".count) }
        let heads: [(String, String)] = [
            ("lm_head.dense.", "cls.predictions.transform.dense."),
            ("lm_head.layer_norm.", "cls.predictions.transform.LayerNorm."),
            ("lm_head.decoder.", "cls.predictions.decoder."), ("lm_head.bias", "cls.predictions.bias"),
            ("classifier.dense.", "pooler.dense."), ("classifier.out_proj.", "classifier."),
            // RobertaModel's own pooler is not what its classifier applies: never loaded.
            ("pooler.", "unused.roberta_pooler."),
        ]
        for (from, to) in heads where name.hasPrefix(from) { return to + name.dropFirst(from.count) }
        return name
    }

    /// id2label in id order ({"0": "negative", ...}); LABEL_<i> names when only num_labels is given.
    static func readLabels(_ json: [String: JSONValue], path: String) throws -> [String] {
        if case let .object(map)? = json["id2label"], !map.isEmpty {
            var labels = [String?](repeating: nil, count: map.count)
            for (key, value) in map {
                guard let id = Int(key), id >= 0, id < map.count, labels[id] == nil, let name = value.string else {
                    throw SwiftBERTError.invalidConfig(path: path, reason: "id2label must map the ids 0..<\(map.count) to names; '\(printable(key))' does not fit: fix config.json")
                }
                labels[id] = name
            }
            return labels.map { $0! }
        }
        if case let .number(count)? = json["num_labels"], count >= 1, count <= 1e6, count == count.rounded() {
            return (0..<Int(count)).map { "LABEL_\($0)" }
        }
        return ["LABEL_0", "LABEL_1"]  // transformers' default num_labels
    }

    /// A classifier in the checkpoint needs a *ForSequenceClassification / *ForTokenClassification
    /// architecture to say how it is used, and such a head needs labels.
    static func checkTaskHead(_ config: ModelConfig, hasClassifier: Bool) throws {
        if hasClassifier, config.heads.task?.kind == nil {
            throw SwiftBERTError.unsupportedCheckpoint(path: "config.json", reason: "the checkpoint holds classifier.weight but its architectures name no ForSequenceClassification or ForTokenClassification class; fix config.json's architectures")
        }
        if config.heads.task != nil, (config.heads.task?.labels?.count ?? 0) < 1 {
            throw SwiftBERTError.invalidConfig(path: "config.json", reason: "a classification head needs id2label (or num_labels); fix config.json")
        }
    }

    static func copyTokenizer(from source: URL, to destination: URL) throws {
        let fm = FileManager.default
        let files = ["tokenizer.json", "vocab.txt", "tokenizer_config.json"].filter {
            fm.fileExists(atPath: source.appendingPathComponent($0).path)
        }
        guard files.contains("tokenizer.json") || files.contains("vocab.txt") else {
            throw SwiftBERTError.unsupportedCheckpoint(path: source.path, reason: "neither tokenizer.json nor vocab.txt is present")
        }
        for name in files {
            let target = destination.appendingPathComponent(name)
            try? fm.removeItem(at: target)
            // The file itself, not a symlink to it (Hugging Face's cache links snapshots to blobs).
            try SwiftBERTError.writing(target.path) { try fm.copyItem(at: source.appendingPathComponent(name).resolvingSymlinksInPath(), to: target) }
        }
    }
}
