import Foundation

/// The features `bert train-classifier` learns from, and the folder it writes.
public enum ClassifierExport {
    /// BERT's pooler output, tanh(W·h[CLS] + b): what BertForSequenceClassification feeds its
    /// classifier, so a classifier trained on these features drops into that class unchanged.
    public static func features(_ model: any EncoderModel, _ tokenizer: Tokenizer, _ texts: [String], batchSize: Int = 32,
                                progress: ((Int) -> Void)? = nil) throws -> [[Float]] {
        guard model.config.heads.hasPooler == true, !model.config.encoder.isDistilBERT else {
            throw SwiftBERTError.invalidInput(reason: "\(model.folder.lastPathComponent) has no BERT pooler (pooler.dense); train-classifier needs a BERT checkpoint that kept it (convert the Hugging Face folder again with this version of `bert convert`)")
        }
        let pooler = try BertPooler(model.headScope, model.config)
        let limit = model.config.encoder.maxSequenceLength
        var out = [[Float]](repeating: [], count: texts.count)
        let order = texts.indices.sorted { texts[$0].utf8.count < texts[$1].utf8.count }
        var done = 0
        for start in stride(from: 0, to: order.count, by: max(1, batchSize)) {
            let chunk = Array(order[start..<min(start + max(1, batchSize), order.count)])
            let encodings = chunk.map { tokenizer.encode(texts[$0], maxLength: limit) }
            let output = try model.encode(encodings.map(\.ids), typeIds: encodings.map(\.typeIds))
            let pooled = pooler(output, threads: model.threads), h = output.hiddenSize
            for (s, index) in chunk.enumerated() { out[index] = Array(pooled[s * h..<(s + 1) * h]) }
            done += chunk.count
            progress?(done)
        }
        return out
    }

    /// Writes a Hugging Face BertForSequenceClassification folder: the encoder and pooler of
    /// `model` under transformers' names (Q/K/V split again), the trained classifier, a
    /// config.json with id2label, and the tokenizer files. transformers loads it as it is.
    public static func writeSequenceClassifier(model: any EncoderModel, classifier: ClassifierTraining.Result,
                                               labels: [String], to destination: URL) throws {
        let c = model.config, h = c.encoder.hiddenSize
        guard model.precision == .fp32 else {
            throw SwiftBERTError.invalidInput(reason: "the exported encoder must be the float32 one; load the model with precision fp32")
        }
        guard labels.count == classifier.classes, classifier.features == h else {
            throw SwiftBERTError.invalidInput(reason: "the classifier has \(classifier.classes) classes of \(classifier.features) features; expected \(labels.count) of \(h)")
        }
        // The encoder and its pooler, from the table of names: `bert.` + each module's name,
        // with Q, K and V split again (they are stacked by output channel).
        var encoder = c
        (encoder.heads.hasMaskedLMHead, encoder.heads.hasUntiedDecoder, encoder.heads.sentence.denseLayers) = (false, false, nil)
        (encoder.heads.task, encoder.heads.hasPooler) = (nil, true)
        let weights = model.weights, names = TensorNames.self
        var entries: [SafeTensorsWriter.Entry] = []
        func copy(_ name: String) throws {
            guard let info = weights.tensors[name] else {
                throw SwiftBERTError.invalidInput(reason: "\(model.folder.lastPathComponent) has no tensor '\(name)'; the exported classifier needs a BERT encoder with its pooler (convert the Hugging Face folder again with this version)")
            }
            entries.append(.init(name: "bert." + name, shape: info.shape, floats: Array(try weights.floats(name))))
        }
        for module in names.modules(encoder) {
            let parameters = module.kind == .table ? ["weight"] : ["weight", "bias"]
            if module.name.hasSuffix("." + names.qkv) {
                let prefix = String(module.name.dropLast(names.qkv.count))
                for parameter in parameters {
                    let values = try weights.floats(names.join(module.name, parameter))
                    let part = values.count / 3
                    for (i, projection) in [names.query, names.key, names.value].enumerated() {
                        entries.append(.init(name: "bert." + names.join(prefix + projection, parameter),
                                             shape: parameter == "weight" ? [h, h] : [h], floats: Array(values[i * part..<(i + 1) * part])))
                    }
                }
            } else {
                for parameter in parameters { try copy(names.join(module.name, parameter)) }
            }
        }
        entries.append(.init(name: names.join(names.classifier, "weight"), shape: [labels.count, h], floats: classifier.weight))
        entries.append(.init(name: names.join(names.classifier, "bias"), shape: [labels.count], floats: classifier.bias))
        let fm = FileManager.default
        try SwiftBERTError.writing(destination.path) { try fm.createDirectory(at: destination, withIntermediateDirectories: true) }
        try SafeTensorsWriter.write(entries, metadata: ["format": "pt"], to: destination.appendingPathComponent("model.safetensors").path)
        let config: OrderedJSON = .object([
            ("architectures", .array([.string("BertForSequenceClassification")])), ("model_type", .string("bert")),
            ("vocab_size", .int(c.encoder.vocabSize)), ("hidden_size", .int(h)), ("num_hidden_layers", .int(c.encoder.numHiddenLayers)),
            ("num_attention_heads", .int(c.encoder.numAttentionHeads)), ("intermediate_size", .int(c.encoder.intermediateSize)),
            ("max_position_embeddings", .int(c.encoder.maxPositionEmbeddings)), ("type_vocab_size", .int(c.encoder.typeVocabSize)),
            ("layer_norm_eps", .float(c.encoder.layerNormEps)), ("hidden_act", .string(c.encoder.hiddenAct)),
            ("position_embedding_type", .string("absolute")), ("pad_token_id", .int(0)),
            ("hidden_dropout_prob", .double(0.1)), ("attention_probs_dropout_prob", .double(0.1)), ("initializer_range", .double(0.02)),
            ("id2label", .object(labels.enumerated().map { ("\($0.offset)", .string($0.element)) })),
            ("label2id", .object(labels.enumerated().map { ($0.element, .int($0.offset)) })),
        ])
        let configFile = destination.appendingPathComponent("config.json")
        try SwiftBERTError.writing(configFile.path) { try Data((config.text + "\n").utf8).write(to: configFile) }
        try Converter.copyTokenizer(from: model.folder, to: destination)
    }
}
