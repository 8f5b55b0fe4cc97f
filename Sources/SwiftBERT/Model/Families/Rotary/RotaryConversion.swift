import Foundation

// NomicBERT, GTE and ModernBERT checkpoints, in both layouts transformers' conversion mapping
// names: as transformers 5.x saves them (native classes), and as published on the Hub with
// remote code (nomic-ai's `Wqkv`/`fc11`/`fc12`, Alibaba-NLP's `new`). Both become one set of
// names (`TensorNames.rotaryModules`).

extension TensorNames {
    /// Inside a rotary encoder's layer: the two LayerNorms (after or before each block, as
    /// `RotaryEncoderConfig.normPlacement` says) and the gated feed-forward network, whose
    /// `gate_up` stacks the activated projection (rows [0, F)) over the multiplied one ([F, 2F)).
    static let attentionNorm = "attention_norm", mlp = "mlp", mlpNorm = "mlp_norm"
    static let gateUp = "gate_up", down = "down"
    /// ModernBERT's LayerNorm after the last layer.
    static let finalNorm = "final_norm"
    /// ModernBERT's prediction head before a classifier (`head.dense`, GELU, `head.norm`).
    static let classifierTransform = "classifier_transform"

    static func rotaryModules(_ config: ModelConfig, _ rotary: RotaryEncoderConfig) -> [Module] {
        let h = config.encoder.hiddenSize, ffn = config.encoder.intermediateSize
        var modules: [Module] = [
            Module(name: wordEmbeddings, kind: .table, rows: config.encoder.vocabSize, cols: h),
            Module(name: tokenTypeEmbeddings, kind: .table, rows: config.encoder.typeVocabSize, cols: h),
            Module(name: embeddingsLayerNorm, kind: .layerNorm, rows: 1, cols: h),
        ]
        for l in 0..<config.encoder.numHiddenLayers {
            let p = layer(l)
            modules.append(Module(name: join(p, attention, selfAttention, qkv), kind: .linear, rows: 3 * h, cols: h))
            modules.append(Module(name: join(p, attention, output, dense), kind: .linear, rows: h, cols: h))
            // ModernBERT's layer 0 reads the embeddings' LayerNorm output as it is.
            if rotary.normPlacement == .post || l > 0 {
                modules.append(Module(name: join(p, attentionNorm), kind: .layerNorm, rows: 1, cols: h))
            }
            modules += [
                Module(name: join(p, mlp, gateUp), kind: .linear, rows: 2 * ffn, cols: h),
                Module(name: join(p, mlp, down), kind: .linear, rows: h, cols: ffn),
                Module(name: join(p, mlpNorm), kind: .layerNorm, rows: 1, cols: h),
            ]
        }
        if rotary.normPlacement == .pre { modules.append(Module(name: finalNorm, kind: .layerNorm, rows: 1, cols: h)) }
        if config.heads.hasMaskedLMHead {
            modules += [
                Module(name: join(maskedLMTransform, dense), kind: .linear, rows: h, cols: h),
                Module(name: join(maskedLMTransform, layerNorm), kind: .layerNorm, rows: 1, cols: h),
            ]
            if config.heads.hasUntiedDecoder { modules.append(Module(name: maskedLMDecoder, kind: .table, rows: config.encoder.vocabSize, cols: h)) }
        }
        if let labels = config.heads.task?.labels {
            modules += [
                Module(name: join(classifierTransform, dense), kind: .linear, rows: h, cols: h),
                Module(name: join(classifierTransform, layerNorm), kind: .layerNorm, rows: 1, cols: h),
                Module(name: classifier, kind: .linear, rows: labels.count, cols: h),
            ]
        }
        for (index, layer) in (config.heads.sentence.denseLayers ?? []).enumerated() {
            modules.append(Module(name: sentenceDense(index), kind: .linear, rows: layer.outFeatures, cols: layer.inFeatures))
        }
        return modules
    }

    /// transformers 5.x's names inside a NomicBERT or GTE layer: the two classes share them.
    static let transformersLayerNames: [(String, String)] = [
        (".self_attn.q_proj.", ".attention.self.query."), (".self_attn.k_proj.", ".attention.self.key."),
        (".self_attn.v_proj.", ".attention.self.value."), (".self_attn.o_proj.", ".attention.output.dense."),
        (".post_attention_layernorm.", ".attention_norm."), (".post_mlp_layernorm.", ".mlp_norm."),
        (".mlp.gate_proj.", ".mlp.gate."), (".mlp.up_proj.", ".mlp.up."), (".mlp.down_proj.", ".mlp.down."),
    ]

    /// Each layout's names → the names above, as substitutions in order (after the model's
    /// prefix is dropped). `layers.N.` becomes `encoder.layer.N.` first.
    static let rotaryLayerNames: [Architecture: [(String, String)]] = [
        .nomicBERT: transformersLayerNames + [
            // nomic-ai's remote code
            ("emb_ln.", "embeddings.LayerNorm."), (".attn.Wqkv.", ".attention.self.qkv."),
            (".attn.out_proj.", ".attention.output.dense."), (".mlp.fc11.", ".mlp.up."), (".mlp.fc12.", ".mlp.gate."),
            (".mlp.fc2.", ".mlp.down."), (".norm1.", ".attention_norm."), (".norm2.", ".mlp_norm."),
        ],
        .gte: transformersLayerNames + [
            // Alibaba-NLP's `new` remote code
            (".attention.qkv_proj.", ".attention.self.qkv."), (".attention.o_proj.", ".attention.output.dense."),
            (".attn_ln.", ".attention_norm."), (".mlp_ln.", ".mlp_norm."), (".mlp.up_gate_proj.", ".mlp.up_gate."),
        ],
        .modernBERT: [
            ("embeddings.tok_embeddings.", "embeddings.word_embeddings."), ("embeddings.norm.", "embeddings.LayerNorm."),
            (".attn.Wqkv.", ".attention.self.qkv."), (".attn.Wo.", ".attention.output.dense."),
            (".attn_norm.", ".attention_norm."), (".mlp.Wi.", ".mlp.gate_up."), (".mlp.Wo.", ".mlp.down."),
            ("head.dense.", "cls.predictions.transform.dense."), ("head.norm.", "cls.predictions.transform.LayerNorm."),
            ("decoder.weight", "cls.predictions.decoder.weight"), ("decoder.bias", "cls.predictions.bias"),
        ],
    ]
}

extension Converter {
    /// The rotary family a config.json describes, from model_type or architectures (nil: none).
    static func rotaryFamily(modelType: String, architectures: [String]) -> Architecture? {
        func named(_ types: [String], _ prefix: String) -> Bool {
            types.contains(modelType) || (modelType.isEmpty && architectures.contains(where: { $0.hasPrefix(prefix) }))
        }
        if named(["nomic_bert"], "NomicBert") { return .nomicBERT }
        if named(["gte", "new"], "Gte") || architectures.contains(where: { $0.hasPrefix("NewModel") || $0.hasPrefix("NewFor") }) { return .gte }
        if named(["modernbert"], "ModernBert") { return .modernBERT }
        return nil
    }

    /// The encoder's fields of a rotary checkpoint's config.json, in its layout's names.
    static func rotaryConfig(_ family: Architecture, _ json: [String: JSONValue], path: String) throws -> ModelConfig {
        func fail(_ reason: String) -> SwiftBERTError { .invalidConfig(path: path, reason: reason) }
        func value(_ keys: [String]) -> JSONValue? { keys.lazy.compactMap { json[$0] }.first { !$0.isNull } }
        func int(_ keys: String..., fallback: Int? = nil) throws -> Int {
            switch value(keys) {
            case let .number(v)? where v == v.rounded() && abs(v) <= 1e15: return Int(v)
            case nil: if let fallback { return fallback }; throw fail("missing field '\(keys[0])'; give the checkpoint's own config.json")
            case let other?: throw fail("\(keys[0]) is \(printable("\(other)")), not an integer; fix config.json")
            }
        }
        func number(_ keys: String..., fallback: Double) -> Double {
            if case let .number(v)? = value(keys) { return v }
            return fallback
        }
        // transformers 5.x writes rope_parameters ({rope_type, rope_theta}, per layer type for
        // ModernBERT); older and remote configs rope_theta, rotary_emb_base or global_rope_theta.
        func ropeParameters(_ json: JSONValue?) throws -> Double? {
            guard let json, !json.isNull else { return nil }
            if let type = json["rope_type"]?.string ?? json["type"]?.string, type != "default" {
                throw fail("rope type '\(printable(type))' is not supported (the default RoPE is); use a checkpoint without rope scaling")
            }
            if case let .number(theta)? = json["rope_theta"] { return theta }
            return nil
        }
        if let scaling = json["rope_scaling"], !scaling.isNull {
            throw fail("rope_scaling \(printable("\(scaling)")) is not supported (the default RoPE is); use a checkpoint without rope scaling")
        }
        if family == .nomicBERT {
            if number("rotary_emb_fraction", fallback: 1) != 1 { throw fail("rotary_emb_fraction below 1 is not supported; use a checkpoint that rotates every channel") }
            if json["rotary_emb_interleaved"]?.bool == true { throw fail("rotary_emb_interleaved is not supported (transformers' rotate_half layout is)") }
            if json["prenorm"]?.bool == true { throw fail("prenorm NomicBERT is not supported (post-LN, as nomic-embed-text, is)") }
        }
        let hiddenAct: String
        switch (family, (value(["hidden_act", "hidden_activation", "activation_function"])?.string ?? "gelu")) {
        case (_, "swiglu"), (_, "silu"): hiddenAct = "silu"
        case (_, "gelu"), (_, "geglu"): hiddenAct = "gelu"
        case let (_, other): throw fail("hidden_act '\(printable(other))' is not supported (gelu, silu and swiglu are); use a checkpoint trained with one of them")
        }
        let maxPositions = try int("max_position_embeddings", "n_positions")
        var config = ModelConfig(encoder: EncoderConfig(
            vocabSize: try int("vocab_size"), hiddenSize: try int("hidden_size", "n_embd"),
            numHiddenLayers: try int("num_hidden_layers", "n_layer"), numAttentionHeads: try int("num_attention_heads", "n_head"),
            intermediateSize: try int("intermediate_size", "n_inner"), maxPositionEmbeddings: maxPositions,
            // GTE may have no token types (0); ModernBERT has none: one all-zero row then.
            typeVocabSize: family == .modernBERT ? 1 : max(1, try int("type_vocab_size", fallback: family == .gte ? 0 : 2)),
            layerNormEps: Float(number("layer_norm_eps", "layer_norm_epsilon", "norm_eps", fallback: family == .modernBERT ? 1e-5 : 1e-12)),
            hiddenAct: hiddenAct, maxSequenceLength: maxPositions))
        config.encoder.architecture = family
        if family == .modernBERT {
            let perType = json["rope_parameters"]
            let global = try ropeParameters(perType?["full_attention"]) ?? number("global_rope_theta", fallback: 160_000)
            var rotary = RotaryEncoderConfig(ropeTheta: global, normPlacement: .pre)
            rotary.localRopeTheta = try ropeParameters(perType?["sliding_attention"]) ?? number("local_rope_theta", fallback: 10_000)
            rotary.localAttention = try int("local_attention", fallback: 128)
            if let types = json["layer_types"]?.array {
                rotary.layerTypes = try types.map {
                    guard let type = $0.string.flatMap(RotaryEncoderConfig.LayerType.init(rawValue:)) else {
                        throw fail("layer_types holds \(printable("\($0)")); full_attention and sliding_attention are known")
                    }
                    return type
                }
            } else {
                let every = max(1, try int("global_attn_every_n_layers", fallback: 3))
                rotary.layerTypes = (0..<config.encoder.numHiddenLayers).map { $0 % every == 0 ? .full : .sliding }
            }
            config.encoder.rotary = rotary
            if let activation = json["classifier_activation"]?.string, activation != "gelu" {
                throw fail("classifier_activation '\(printable(activation))' is not supported (gelu is)")
            }
        } else {
            let theta = try ropeParameters(json["rope_parameters"]) ?? number("rope_theta", "rotary_emb_base", fallback: family == .gte ? 160_000 : 10_000)
            config.encoder.rotary = RotaryEncoderConfig(ropeTheta: theta, normPlacement: .post)
        }
        return config
    }

    /// ModernBERT's classifier_pooling (cls when absent, as transformers' default).
    static func classifierPooling(_ json: [String: JSONValue], path: String) throws -> Pooling {
        guard let name = json["classifier_pooling"]?.string else { return .cls }
        guard let pooling = Pooling(rawValue: name), pooling == .cls || pooling == .mean else {
            throw SwiftBERTError.invalidConfig(path: path, reason: "classifier_pooling '\(printable(name))' is not supported (cls and mean are)")
        }
        return pooling
    }

    /// A rotary checkpoint's tensor name as `TensorNames.rotaryModules` has it.
    static func rotaryName(_ name: String, _ family: Architecture, classifies: Bool = false) -> String {
        var name = name
        for prefix in ["nomic_bert.", "bert.", "new.", "gte.", "model."] where name.hasPrefix(prefix) {
            name.removeFirst(prefix.count)
            break
        }
        // encoder.layers.N / layers.N (transformers 5.x, nomic's remote code) → encoder.layer.N.
        for from in ["encoder.layers.", "layers."] where name.hasPrefix(from) {
            name = "encoder.layer." + name.dropFirst(from.count)
            break
        }
        // A ModernBERT classifier's `head` is the prediction head before its classifier.
        if classifies, name.hasPrefix("head.") {
            return TensorNames.classifierTransform + "." + (name.hasPrefix("head.norm.") ? "LayerNorm." + name.dropFirst("head.norm.".count) : name.dropFirst("head.".count))
        }
        for (from, to) in TensorNames.rotaryLayerNames[family] ?? [] where name.contains(from) {
            name = name.replacingOccurrences(of: from, with: to)
        }
        return name
    }
}
