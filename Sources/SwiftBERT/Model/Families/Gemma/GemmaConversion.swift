import Foundation

// EmbeddingGemma's checkpoint (transformers' Gemma3TextModel, as sentence-transformers saves
// it: `embed_tokens`, `layers.N.self_attn.q_proj`, …, `norm`, with or without `model.`) becomes
// one float32 file under the names below, the sentence-transformers Dense modules beside it.

extension TensorNames {
    /// Inside a Gemma layer: RMSNorms before and after each block, and Q's and K's own RMSNorms
    /// (per head). They are stored as the checkpoint's `weight`; the scale is 1 + weight.
    static let gemmaInputNorm = "input_norm", gemmaPostAttentionNorm = "post_attention_norm"
    static let gemmaPreFeedForwardNorm = "pre_feedforward_norm", gemmaPostFeedForwardNorm = "post_feedforward_norm"
    static let queryNorm = "q_norm", keyNorm = "k_norm"

    /// The converted tensors of a Gemma encoder: what `bert quantize` reads its matrices from.
    /// `qkv` stacks Q [heads·d] over K and V [kv heads·d each]; `gate_up` the gate's rows over up's.
    static func gemmaModules(_ config: BertConfig, _ gemma: GemmaEncoderConfig) -> [Module] {
        let h = config.hiddenSize, ffn = config.intermediateSize, d = gemma.headDim
        let queries = config.numAttentionHeads * d, qkvRows = queries + 2 * gemma.keyValueHeads * d
        var modules = [Module(name: wordEmbeddings, kind: .table, rows: config.vocabSize, cols: h)]
        for l in 0..<config.numHiddenLayers {
            let p = layer(l)
            modules += [
                Module(name: join(p, gemmaInputNorm), kind: .layerNorm, rows: 1, cols: h),
                Module(name: join(p, attention, selfAttention, qkv), kind: .linear, rows: qkvRows, cols: h),
                Module(name: join(p, attention, selfAttention, queryNorm), kind: .layerNorm, rows: 1, cols: d),
                Module(name: join(p, attention, selfAttention, keyNorm), kind: .layerNorm, rows: 1, cols: d),
                Module(name: join(p, attention, output, dense), kind: .linear, rows: h, cols: queries),
                Module(name: join(p, gemmaPostAttentionNorm), kind: .layerNorm, rows: 1, cols: h),
                Module(name: join(p, gemmaPreFeedForwardNorm), kind: .layerNorm, rows: 1, cols: h),
                Module(name: join(p, mlp, gateUp), kind: .linear, rows: 2 * ffn, cols: h),
                Module(name: join(p, mlp, down), kind: .linear, rows: h, cols: ffn),
                Module(name: join(p, gemmaPostFeedForwardNorm), kind: .layerNorm, rows: 1, cols: h),
            ]
        }
        modules.append(Module(name: finalNorm, kind: .layerNorm, rows: 1, cols: h))
        for (index, layer) in (config.sentence.denseLayers ?? []).enumerated() {
            modules.append(Module(name: sentenceDense(index), kind: .linear, rows: layer.outFeatures, cols: layer.inFeatures))
        }
        return modules
    }
}

extension Converter {
    /// Whether a config.json is a Gemma 3 text model's.
    static func isGemma(modelType: String, architectures: [String]) -> Bool {
        modelType == "gemma3_text" || (modelType.isEmpty && architectures.contains { $0.hasPrefix("Gemma3Text") })
    }

    /// A Gemma 3 text config.json as the converted config: the shared fields, and `gemma`.
    /// Only the bidirectional encoder is taken: a causal Gemma is a decoder, not an embedder.
    static func readGemmaConfig(_ json: [String: JSONValue], architectures: [String], path: String, folder: String) throws -> BertConfig {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        func int(_ key: String, fallback: Int? = nil) throws -> Int {
            switch json[key] {
            case let .number(v)? where v == v.rounded() && abs(v) <= 1e15: return Int(v)
            case nil, .null?: if let fallback { return fallback }; throw fail("missing field '\(key)'; give the checkpoint's own config.json")
            case let other?: throw fail("\(key) is \(printable("\(other)")), not an integer; fix config.json")
            }
        }
        func number(_ key: String, fallback: Double? = nil) throws -> Double {
            if case let .number(v)? = json[key] { return v }
            if let fallback { return fallback }
            throw fail("missing field '\(key)'; give the checkpoint's own config.json")
        }
        if let classifier = architectures.first(where: { !$0.hasPrefix("Gemma3TextModel") && !$0.hasPrefix("Gemma3Model") }) {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "\(printable(classifier)): SwiftBERT runs the Gemma 3 encoder (Gemma3TextModel, as EmbeddingGemma) and its sentence embeddings, no other Gemma head")
        }
        guard json["use_bidirectional_attention"]?.bool == true else {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder, reason: "this Gemma 3 attends causally (use_bidirectional_attention is not true): it is a decoder; SwiftBERT runs the bidirectional encoder of EmbeddingGemma")
        }
        if let scaling = json["rope_scaling"], !scaling.isNull {
            throw fail("rope_scaling \(printable("\(scaling)")) is not supported (EmbeddingGemma's default RoPE is)")
        }
        for key in ["attn_logit_softcapping", "final_logit_softcapping"] where !(json[key]?.isNull ?? true) {
            throw fail("\(key) is set; EmbeddingGemma has none and SwiftBERT does not implement it")
        }
        if json["attention_bias"]?.bool == true { throw fail("attention_bias is true; EmbeddingGemma's projections have no bias") }
        let activation = json["hidden_activation"]?.string ?? json["hidden_act"]?.string ?? "gelu_pytorch_tanh"
        guard activation == "gelu_pytorch_tanh" else {
            throw fail("hidden_activation '\(printable(activation))' is not supported (gelu_pytorch_tanh is, as every Gemma 3)")
        }
        let layers = try int("num_hidden_layers"), heads = try int("num_attention_heads")
        let layerTypes: [GemmaEncoderConfig.LayerType]
        if let types = json["layer_types"]?.array {
            layerTypes = try types.map {
                guard let type = $0.string.flatMap(GemmaEncoderConfig.LayerType.init(rawValue:)) else {
                    throw fail("layer_types holds \(printable("\($0)")); full_attention and sliding_attention are known")
                }
                return type
            }
        } else {
            // Older configs: every sliding_window_pattern-th layer is global.
            let pattern = max(1, try int("sliding_window_pattern", fallback: try int("_sliding_window_pattern", fallback: 6)))
            layerTypes = (0..<layers).map { ($0 + 1) % pattern == 0 ? .full : .sliding }
        }
        let maxPositions = try int("max_position_embeddings")
        var config = BertConfig(
            vocabSize: try int("vocab_size"), hiddenSize: try int("hidden_size"), numHiddenLayers: layers,
            numAttentionHeads: heads, intermediateSize: try int("intermediate_size"), maxPositionEmbeddings: maxPositions,
            typeVocabSize: 1, layerNormEps: Float(try number("rms_norm_eps", fallback: 1e-6)), hiddenAct: activation,
            maxSequenceLength: maxPositions, hasMaskedLMHead: false, hasUntiedDecoder: false)
        config.architecture = .gemma3
        let headDim = try int("head_dim", fallback: 256)
        config.gemma = GemmaEncoderConfig(
            headDim: headDim, keyValueHeads: try int("num_key_value_heads", fallback: heads),
            queryScalar: try number("query_pre_attn_scalar", fallback: Double(headDim)),
            ropeTheta: try ropeTheta(json["rope_parameters"]?["full_attention"], fail) ?? number("rope_theta", fallback: 1_000_000),
            localRopeTheta: try ropeTheta(json["rope_parameters"]?["sliding_attention"], fail) ?? number("rope_local_base_freq", fallback: 10_000),
            slidingWindow: try int("sliding_window", fallback: 512), layerTypes: layerTypes)
        return config
    }

    /// transformers 5.x's rope_parameters entry of one layer type: its rope_theta (default RoPE only).
    private static func ropeTheta(_ json: JSONValue?, _ fail: (String) -> SwiftBERTError) throws -> Double? {
        guard let json, !json.isNull else { return nil }
        if let type = json["rope_type"]?.string, type != "default" {
            throw fail("rope type '\(printable(type))' is not supported (the default RoPE is)")
        }
        if case let .number(theta)? = json["rope_theta"] { return theta }
        return nil
    }

    /// A Gemma checkpoint's tensor name without the model's prefix.
    static func gemmaCheckpointName(_ name: String) -> String {
        for prefix in ["model.language_model.", "model.", "language_model."] where name.hasPrefix(prefix) {
            return String(name.dropFirst(prefix.count))
        }
        return name
    }

    /// Writes a Gemma encoder's converted folder: every tensor checked against config.json,
    /// Q, K and V stacked into one matrix and gate over up into another, zero biases for the
    /// projections (Gemma has none: adding zero changes nothing, and the engine keeps one Linear),
    /// then the sentence-transformers modules and the tokenizer.
    static func convertGemma(source: URL, config: BertConfig, to destination: URL) throws -> Report {
        guard let gemma = config.gemma else { throw SwiftBERTError.invalidInput(reason: "not a Gemma config") }
        let file = try CheckpointShards(folder: source)
        var names: [String: String] = [:]
        for original in file.names {
            let name = gemmaCheckpointName(original)
            if let other = names[name] {
                throw SwiftBERTError.invalidWeights(path: file.path, reason: "tensors '\(printable(other))' and '\(printable(original))' both read as '\(printable(name))'; the checkpoint mixes two layouts: keep one of them")
            }
            names[name] = original
        }
        var used: Set<String> = []
        func tensor(_ name: String, _ shape: [Int]) throws -> [Float] {
            guard let original = names[name] else {
                throw SwiftBERTError.unsupportedCheckpoint(path: file.path, reason: "missing tensor '\(name)'")
            }
            guard let info = file.info(original), info.shape == shape else {
                throw SwiftBERTError.invalidWeights(path: file.path, reason: "tensor '\(original)' has shape \(file.info(original)?.shape ?? []), config.json implies \(shape)")
            }
            used.insert(name)
            return try file.floatArray(original)
        }
        let (h, f, d) = (config.hiddenSize, config.intermediateSize, gemma.headDim)
        let queries = config.numAttentionHeads * d, keys = gemma.keyValueHeads * d
        func zeros(_ count: Int) -> [Float] { [Float](repeating: 0, count: count) }
        var out: [SafeTensorsWriter.Entry] = [
            .init(name: TensorNames.wordEmbeddings + ".weight", shape: [config.vocabSize, h], floats: try tensor("embed_tokens.weight", [config.vocabSize, h])),
        ]
        for l in 0..<config.numHiddenLayers {
            let source = "layers.\(l).", target = TensorNames.layer(l)
            let attention = TensorNames.join(target, TensorNames.attention)
            let qkv = TensorNames.join(attention, TensorNames.selfAttention, TensorNames.qkv)
            let mlp = TensorNames.join(target, TensorNames.mlp)
            func norm(_ from: String, _ to: String, _ size: Int) throws {
                out.append(.init(name: to + ".weight", shape: [size], floats: try tensor(source + from + ".weight", [size])))
            }
            try norm("input_layernorm", TensorNames.join(target, TensorNames.gemmaInputNorm), h)
            out.append(.init(name: qkv + ".weight", shape: [queries + 2 * keys, h], floats:
                try tensor(source + "self_attn.q_proj.weight", [queries, h]) + tensor(source + "self_attn.k_proj.weight", [keys, h])
                    + tensor(source + "self_attn.v_proj.weight", [keys, h])))
            out.append(.init(name: qkv + ".bias", shape: [queries + 2 * keys], floats: zeros(queries + 2 * keys)))
            try norm("self_attn.q_norm", TensorNames.join(attention, TensorNames.selfAttention, TensorNames.queryNorm), d)
            try norm("self_attn.k_norm", TensorNames.join(attention, TensorNames.selfAttention, TensorNames.keyNorm), d)
            let output = TensorNames.join(attention, TensorNames.output, TensorNames.dense)
            out.append(.init(name: output + ".weight", shape: [h, queries], floats: try tensor(source + "self_attn.o_proj.weight", [h, queries])))
            out.append(.init(name: output + ".bias", shape: [h], floats: zeros(h)))
            try norm("post_attention_layernorm", TensorNames.join(target, TensorNames.gemmaPostAttentionNorm), h)
            try norm("pre_feedforward_layernorm", TensorNames.join(target, TensorNames.gemmaPreFeedForwardNorm), h)
            let gateUp = TensorNames.join(mlp, TensorNames.gateUp), down = TensorNames.join(mlp, TensorNames.down)
            out.append(.init(name: gateUp + ".weight", shape: [2 * f, h], floats:
                try tensor(source + "mlp.gate_proj.weight", [f, h]) + tensor(source + "mlp.up_proj.weight", [f, h])))
            out.append(.init(name: gateUp + ".bias", shape: [2 * f], floats: zeros(2 * f)))
            out.append(.init(name: down + ".weight", shape: [h, f], floats: try tensor(source + "mlp.down_proj.weight", [h, f])))
            out.append(.init(name: down + ".bias", shape: [h], floats: zeros(h)))
            try norm("post_feedforward_layernorm", TensorNames.join(target, TensorNames.gemmaPostFeedForwardNorm), h)
        }
        out.append(.init(name: TensorNames.finalNorm + ".weight", shape: [h], floats: try tensor("norm.weight", [h])))
        var finalConfig = config
        out += try SentenceTransformersFolder.read(source, into: &finalConfig)
        return try writeFolder(out, config: finalConfig, names: names, used: used, source: source, destination: destination)
    }
}
