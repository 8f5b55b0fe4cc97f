import Foundation

// Llama-style checkpoints (Gemma 3's Gemma3TextModel, Qwen3Model: `embed_tokens`,
// `layers.N.self_attn.{q,k,v,o}_proj`, `q_norm`/`k_norm`, `mlp.{gate,up,down}_proj`, RMSNorms,
// `norm`, with or without `model.`) become one float32 file under SwiftBERT's names: Q, K and V
// stacked into one matrix, gate over up into another, zero biases for the projections (these
// families have none: adding zero changes nothing, and the engine keeps one Linear).

/// Where a Llama-style checkpoint keeps its layers' RMSNorms, by the slot each fills. Every
/// family normalises before attention (`input_layernorm`) and before the feed-forward network;
/// Gemma also normalises each block's output.
struct LlamaStyleLayout {
    var inputNorm = "input_layernorm"
    /// The norm on attention's output, before the residual sum (nil: none).
    var postAttentionNorm: String?
    /// The norm before the feed-forward network (Qwen3 calls it post_attention_layernorm).
    var preFeedForwardNorm: String
    /// The norm on the feed-forward network's output, before the residual sum (nil: none).
    var postFeedForwardNorm: String?
}

extension TensorNames {
    /// The converted tensors of a Llama-style encoder, in file order: what `bert quantize` reads
    /// its matrices from. `qkv` stacks Q [heads·d] over K and V [kv heads·d each]; `gate_up` the
    /// gate's rows over up's.
    static func llamaStyleModules(_ config: ModelConfig, headDim d: Int, keyValueHeads: Int, layout: LlamaStyleLayout) -> [Module] {
        let h = config.encoder.hiddenSize, ffn = config.encoder.intermediateSize
        let queries = config.encoder.numAttentionHeads * d, qkvRows = queries + 2 * keyValueHeads * d
        var modules = [Module(name: wordEmbeddings, kind: .table, rows: config.encoder.vocabSize, cols: h)]
        for l in 0..<config.encoder.numHiddenLayers {
            let p = layer(l)
            func norm(_ name: String, _ size: Int = h) -> Module { Module(name: name, kind: .layerNorm, rows: 1, cols: size) }
            modules += [
                norm(join(p, inputNorm)),
                Module(name: join(p, attention, selfAttention, qkv), kind: .linear, rows: qkvRows, cols: h),
                norm(join(p, attention, selfAttention, queryNorm), d),
                norm(join(p, attention, selfAttention, keyNorm), d),
                Module(name: join(p, attention, output, dense), kind: .linear, rows: h, cols: queries),
            ]
            if layout.postAttentionNorm != nil { modules.append(norm(join(p, postAttentionNorm))) }
            modules += [
                norm(join(p, preFeedForwardNorm)),
                Module(name: join(p, mlp, gateUp), kind: .linear, rows: 2 * ffn, cols: h),
                Module(name: join(p, mlp, down), kind: .linear, rows: h, cols: ffn),
            ]
            if layout.postFeedForwardNorm != nil { modules.append(norm(join(p, postFeedForwardNorm))) }
        }
        modules.append(Module(name: finalNorm, kind: .layerNorm, rows: 1, cols: h))
        for (index, layer) in (config.heads.sentence.denseLayers ?? []).enumerated() {
            modules.append(Module(name: sentenceDense(index), kind: .linear, rows: layer.outFeatures, cols: layer.inFeatures))
        }
        return modules
    }
}

extension Converter {
    /// A RoPE parameters object (transformers 5.x's rope_parameters, or the older rope_scaling):
    /// its rope_theta, nil when it has none; a scaled RoPE is refused.
    static func ropeTheta(_ json: JSONValue?, _ fail: (String) -> SwiftBERTError) throws -> Double? {
        guard let json, !json.isNull else { return nil }
        if let type = json["rope_type"]?.string ?? json["type"]?.string, type != "default" {
            throw fail("rope type '\(printable(type))' is not supported (the default RoPE is)")
        }
        if case let .number(theta)? = json["rope_theta"] { return theta }
        return nil
    }

    /// A Llama-style checkpoint's tensor name without the model's prefix.
    static func llamaStyleCheckpointName(_ name: String) -> String {
        for prefix in ["model.language_model.", "model.", "language_model."] where name.hasPrefix(prefix) {
            return String(name.dropFirst(prefix.count))
        }
        return name
    }

    /// Writes a Llama-style encoder's converted folder: every tensor checked against config.json,
    /// then the sentence-transformers modules and the tokenizer. A tied or absent `lm_head` is
    /// dropped: the encoders' heads are sentence-transformers'.
    static func convertLlamaStyle(source: URL, config: ModelConfig, headDim d: Int, keyValueHeads: Int, layout: LlamaStyleLayout,
                                  to destination: URL) throws -> Report {
        let file = try CheckpointShards(folder: source)
        var names: [String: String] = [:]
        for original in file.names {
            let name = llamaStyleCheckpointName(original)
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
        let (h, f) = (config.encoder.hiddenSize, config.encoder.intermediateSize)
        let queries = config.encoder.numAttentionHeads * d, keys = keyValueHeads * d
        func zeros(_ count: Int) -> [Float] { [Float](repeating: 0, count: count) }
        var out: [SafeTensorsWriter.Entry] = [
            .init(name: TensorNames.wordEmbeddings + ".weight", shape: [config.encoder.vocabSize, h], floats: try tensor("embed_tokens.weight", [config.encoder.vocabSize, h])),
        ]
        for l in 0..<config.encoder.numHiddenLayers {
            let source = "layers.\(l).", target = TensorNames.layer(l)
            let attention = TensorNames.join(target, TensorNames.attention)
            let qkv = TensorNames.join(attention, TensorNames.selfAttention, TensorNames.qkv)
            let mlp = TensorNames.join(target, TensorNames.mlp)
            func norm(_ from: String?, _ to: String, _ size: Int) throws {
                guard let from else { return }
                out.append(.init(name: to + ".weight", shape: [size], floats: try tensor(source + from + ".weight", [size])))
            }
            try norm(layout.inputNorm, TensorNames.join(target, TensorNames.inputNorm), h)
            out.append(.init(name: qkv + ".weight", shape: [queries + 2 * keys, h], floats:
                try tensor(source + "self_attn.q_proj.weight", [queries, h]) + tensor(source + "self_attn.k_proj.weight", [keys, h])
                    + tensor(source + "self_attn.v_proj.weight", [keys, h])))
            out.append(.init(name: qkv + ".bias", shape: [queries + 2 * keys], floats: zeros(queries + 2 * keys)))
            try norm("self_attn.q_norm", TensorNames.join(attention, TensorNames.selfAttention, TensorNames.queryNorm), d)
            try norm("self_attn.k_norm", TensorNames.join(attention, TensorNames.selfAttention, TensorNames.keyNorm), d)
            let output = TensorNames.join(attention, TensorNames.output, TensorNames.dense)
            out.append(.init(name: output + ".weight", shape: [h, queries], floats: try tensor(source + "self_attn.o_proj.weight", [h, queries])))
            out.append(.init(name: output + ".bias", shape: [h], floats: zeros(h)))
            try norm(layout.postAttentionNorm, TensorNames.join(target, TensorNames.postAttentionNorm), h)
            try norm(layout.preFeedForwardNorm, TensorNames.join(target, TensorNames.preFeedForwardNorm), h)
            let gateUp = TensorNames.join(mlp, TensorNames.gateUp), down = TensorNames.join(mlp, TensorNames.down)
            out.append(.init(name: gateUp + ".weight", shape: [2 * f, h], floats:
                try tensor(source + "mlp.gate_proj.weight", [f, h]) + tensor(source + "mlp.up_proj.weight", [f, h])))
            out.append(.init(name: gateUp + ".bias", shape: [2 * f], floats: zeros(2 * f)))
            out.append(.init(name: down + ".weight", shape: [h, f], floats: try tensor(source + "mlp.down_proj.weight", [h, f])))
            out.append(.init(name: down + ".bias", shape: [h], floats: zeros(h)))
            try norm(layout.postFeedForwardNorm, TensorNames.join(target, TensorNames.postFeedForwardNorm), h)
        }
        out.append(.init(name: TensorNames.finalNorm + ".weight", shape: [h], floats: try tensor("norm.weight", [h])))
        var finalConfig = config
        out += try SentenceTransformersFolder.read(source, into: &finalConfig)
        return try writeFolder(out, config: finalConfig, names: names, used: used, source: source, destination: destination)
    }
}
