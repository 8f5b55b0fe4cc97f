/// The converted checkpoint's tensors, in one table: the converter writes them, the quantizer
/// picks its matrices from them, and each module of the model loads itself by the same names.
/// Names are Hugging Face's BertModel/BertForMaskedLM names without the `bert.` prefix, with
/// LayerNorm `weight`/`bias`, and with Q, K and V fused into `attention.self.qkv`.
package enum TensorNames {
    // Embeddings
    static let wordEmbeddings = "embeddings.word_embeddings"
    static let positionEmbeddings = "embeddings.position_embeddings"
    static let tokenTypeEmbeddings = "embeddings.token_type_embeddings"
    static let embeddingsLayerNorm = "embeddings.LayerNorm"
    /// MPNet's relative position bias, shared by every layer: [buckets × heads].
    static let relativeAttentionBias = "encoder.relative_attention_bias"

    /// Encoder layer `index`: its modules are `attention` (`self`, `output`), `intermediate`
    /// and `output`.
    static func layer(_ index: Int) -> String { "encoder.layer.\(index)" }
    static let attention = "attention", selfAttention = "self", intermediate = "intermediate", output = "output"
    /// Inside `self`: Hugging Face's three projections, and the converter's fused one (rows
    /// [0, h) are Q, [h, 2h) K, [2h, 3h) V).
    static let query = "query", key = "key", value = "value", qkv = "qkv"
    /// Inside a module with a projection and a LayerNorm (attention.output, output, the
    /// masked-LM transform).
    static let dense = "dense", layerNorm = "LayerNorm"
    /// The RMSNorms of a pre-norm (Llama-style) layer: before and after each block (Gemma has all
    /// four, Qwen3 the two before), and Q's and K's own, per head. Stored as the checkpoint's
    /// `weight`; `RMSNorm` adds the family's offset.
    static let inputNorm = "input_norm", postAttentionNorm = "post_attention_norm"
    static let preFeedForwardNorm = "pre_feedforward_norm", postFeedForwardNorm = "post_feedforward_norm"
    static let queryNorm = "q_norm", keyNorm = "k_norm"

    // Masked-LM head
    static let maskedLMTransform = "cls.predictions.transform"
    static let maskedLMDecoder = "cls.predictions.decoder"
    static let maskedLMBias = "cls.predictions.bias"

    // Task heads (BertForSequenceClassification, BertForTokenClassification, DistilBERT's)
    /// BertPooler's dense (+ tanh on [CLS]): before a BERT sequence classifier, and kept for
    /// `bert train-classifier`, whose features are its output.
    static let pooler = "pooler.dense"
    /// DistilBERT's sequence classifier has this dense (+ ReLU on [CLS]) in the pooler's place.
    static let preClassifier = "pre_classifier"
    static let classifier = "classifier"
    /// sentence-transformers' Dense module `index`, counted in modules.json order (2_Dense, ...).
    static func sentenceDense(_ index: Int) -> String { "sentence_transformers.dense.\(index)" }
    /// BGE-M3's heads, from `sparse_linear.pt` and `colbert_linear.pt` (FlagEmbedding's names).
    static let sparseLinear = "sparse_linear", colbertLinear = "colbert_linear"

    /// DistilBERT's checkpoint names (after `distilbert.`) → the names above: the same
    /// computation as BERT's under other names. Substrings inside an encoder layer's name, then
    /// prefixes of the masked-LM head's; `pre_classifier` and `classifier` keep their names.
    static let distilBERTLayerNames: [(String, String)] = [
        ("transformer.layer.", "encoder.layer."),
        (".attention.q_lin.", ".attention.self.query."), (".attention.k_lin.", ".attention.self.key."),
        (".attention.v_lin.", ".attention.self.value."), (".attention.out_lin.", ".attention.output.dense."),
        (".sa_layer_norm.", ".attention.output.LayerNorm."), (".ffn.lin1.", ".intermediate.dense."),
        (".ffn.lin2.", ".output.dense."), (".output_layer_norm.", ".output.LayerNorm."),
    ]
    static let distilBERTMaskedLMNames: [(String, String)] = [
        ("vocab_transform.", "cls.predictions.transform.dense."),
        ("vocab_layer_norm.", "cls.predictions.transform.LayerNorm."),
        ("vocab_projector.bias", "cls.predictions.bias"), ("vocab_projector.weight", "cls.predictions.decoder.weight"),
    ]

    /// MPNet's names inside an encoder layer (after `mpnet.`) → BERT's. Its heads are RoBERTa's
    /// (lm_head, and a classifier of dense + out_proj).
    static let mpnetLayerNames: [(String, String)] = [
        (".attention.attn.q.", ".attention.self.query."), (".attention.attn.k.", ".attention.self.key."),
        (".attention.attn.v.", ".attention.self.value."), (".attention.attn.o.", ".attention.output.dense."),
        (".attention.LayerNorm.", ".attention.output.LayerNorm."),
    ]

    static func join(_ parts: String...) -> String { parts.joined(separator: ".") }

    /// One module's parameters: `NAME.weight` [rows × cols] and, for Linear and LayerNorm,
    /// `NAME.bias` [rows] (a LayerNorm's weight and bias are both [cols]).
    package struct Module {
        package enum Kind { case linear, layerNorm, table }
        package let name: String
        package let kind: Kind
        package let rows: Int
        package let cols: Int
    }

    /// Every module of a converted checkpoint with this config, in file order: the encoder, the
    /// masked-LM head (its output bias is not a module), the pooler or pre_classifier and the
    /// classifier of a task head, and sentence-transformers' Dense modules.
    /// The family of the config says which (`ModelFamily.tensorModules`).
    static func modules(_ config: ModelConfig) -> [Module] {
        ModelFamilies.family(of: config.encoder).tensorModules(config) ?? bertModules(config)
    }

    /// BERT's table, for BERT, DistilBERT, RoBERTa, XLM-R and MPNet.
    static func bertModules(_ config: ModelConfig) -> [Module] {
        let h = config.encoder.hiddenSize, ffn = config.encoder.intermediateSize
        var modules: [Module] = [
            Module(name: wordEmbeddings, kind: .table, rows: config.encoder.vocabSize, cols: h),
            Module(name: positionEmbeddings, kind: .table, rows: config.encoder.maxPositionEmbeddings, cols: h),
            Module(name: tokenTypeEmbeddings, kind: .table, rows: config.encoder.typeVocabSize, cols: h),
            Module(name: embeddingsLayerNorm, kind: .layerNorm, rows: 1, cols: h),
        ]
        if let buckets = config.encoder.relativeAttentionNumBuckets {
            modules.append(Module(name: relativeAttentionBias, kind: .table, rows: buckets, cols: config.encoder.numAttentionHeads))
        }
        for l in 0..<config.encoder.numHiddenLayers {
            let p = layer(l)
            modules += [
                Module(name: join(p, attention, selfAttention, qkv), kind: .linear, rows: 3 * h, cols: h),
                Module(name: join(p, attention, output, dense), kind: .linear, rows: h, cols: h),
                Module(name: join(p, attention, output, layerNorm), kind: .layerNorm, rows: 1, cols: h),
                Module(name: join(p, intermediate, dense), kind: .linear, rows: ffn, cols: h),
                Module(name: join(p, output, dense), kind: .linear, rows: h, cols: ffn),
                Module(name: join(p, output, layerNorm), kind: .layerNorm, rows: 1, cols: h),
            ]
        }
        if config.heads.hasMaskedLMHead {
            modules += [
                Module(name: join(maskedLMTransform, dense), kind: .linear, rows: h, cols: h),
                Module(name: join(maskedLMTransform, layerNorm), kind: .layerNorm, rows: 1, cols: h),
            ]
            if config.heads.hasUntiedDecoder {
                modules.append(Module(name: maskedLMDecoder, kind: .table, rows: config.encoder.vocabSize, cols: h))
            }
        }
        if config.heads.hasPooler == true {
            modules.append(Module(name: pooler, kind: .linear, rows: h, cols: h))
        }
        if config.heads.task?.kind == .sequenceClassification, config.encoder.isDistilBERT {
            modules.append(Module(name: preClassifier, kind: .linear, rows: h, cols: h))
        }
        if config.heads.task?.kind != nil {
            modules.append(Module(name: classifier, kind: .linear, rows: config.heads.task?.labels?.count ?? 0, cols: h))
        }
        for (index, layer) in (config.heads.sentence.denseLayers ?? []).enumerated() {
            modules.append(Module(name: sentenceDense(index), kind: .linear, rows: layer.outFeatures, cols: layer.inFeatures))
        }
        return modules
    }

    /// The matrices the quantizer turns into INT8 (per output channel; per row for the
    /// embedding table, which is also the tied decoder): every Linear of the encoder and the
    /// masked-LM transform, the word embeddings and an untied decoder. Position and token-type
    /// tables, all vectors and the heads' Linear layers stay float32: INT8 heads (measured on
    /// the head fixtures, docs/models.md) made rerank scores 7 times further from FP32, for a
    /// size and a time the encoder dwarfs. A head whose file does hold INT8 runs it weight-only.
    static func int8Matrices(_ config: ModelConfig) -> [Module] {
        let heads = Set([pooler, preClassifier, classifier] + (0..<(config.heads.sentence.denseLayers?.count ?? 0)).map(sentenceDense))
        return modules(config).filter {
            ($0.kind == .linear && !heads.contains($0.name)) || $0.name == wordEmbeddings || $0.name == maskedLMDecoder
        }
    }
}

// MARK: - MobileBERT

/// MobileBERT's names: transformers' MobileBertForMaskedLM names without `mobilebert.`, kept as
/// they are (its NoNorm is stored as `LayerNorm.weight`/`.bias` too). The masked-LM decoder is
/// the converter's: the word embeddings and `cls.predictions.dense` joined into one [V × H] matrix.
extension TensorNames {
    static let embeddingTransformation = "embeddings.embedding_transformation"
    /// Inside a layer: `bottleneck.input` (→ the block's input and residual), `bottleneck.attention`
    /// (→ Q and K when shared), and the output's `bottleneck` back to hidden_size.
    static let bottleneck = "bottleneck", bottleneckInput = "input"
    /// Inside a layer: the stacked feed-forward networks before the last one, `ffn.<j>`.
    static let feedForwardNetworks = "ffn"
    /// transformers' `cls.predictions.dense`: the decoder rows beyond embedding_size, stored [(H - E) × V].
    static let maskedLMExtraRows = "cls.predictions.dense"

    static func mobileBertModules(_ config: ModelConfig, _ mobile: MobileBertConfig) -> [Module] {
        let h = config.encoder.hiddenSize, ffn = config.encoder.intermediateSize, e = mobile.embeddingSize
        let t = mobile.trueHiddenSize(config.encoder)
        var modules = [Module(name: wordEmbeddings, kind: .table, rows: config.encoder.vocabSize, cols: e)]
        if mobile.projectsEmbeddings(config.encoder) {
            modules.append(Module(name: embeddingTransformation, kind: .linear, rows: h, cols: mobile.trigramInput ? 3 * e : e))
        }
        modules += [
            Module(name: positionEmbeddings, kind: .table, rows: config.encoder.maxPositionEmbeddings, cols: h),
            Module(name: tokenTypeEmbeddings, kind: .table, rows: config.encoder.typeVocabSize, cols: h),
            Module(name: embeddingsLayerNorm, kind: .layerNorm, rows: 1, cols: h),
        ]
        func linearAndNorm(_ name: String, rows: Int, cols: Int) -> [Module] {
            [Module(name: join(name, dense), kind: .linear, rows: rows, cols: cols),
             Module(name: join(name, layerNorm), kind: .layerNorm, rows: 1, cols: rows)]
        }
        for l in 0..<config.encoder.numHiddenLayers {
            let p = layer(l)
            if mobile.useBottleneck {
                modules += linearAndNorm(join(p, bottleneck, bottleneckInput), rows: t, cols: h)
                if mobile.keyQuerySharedBottleneck && !mobile.useBottleneckAttention {
                    modules += linearAndNorm(join(p, bottleneck, attention), rows: t, cols: h)
                }
            }
            modules += [
                Module(name: join(p, attention, selfAttention, query), kind: .linear, rows: t, cols: t),
                Module(name: join(p, attention, selfAttention, key), kind: .linear, rows: t, cols: t),
                Module(name: join(p, attention, selfAttention, value), kind: .linear, rows: t, cols: mobile.useBottleneckAttention ? t : h),
            ]
            modules += linearAndNorm(join(p, attention, output), rows: t, cols: t)
            for j in 0..<(mobile.numFeedforwardNetworks - 1) {
                let f = join(p, feedForwardNetworks, String(j))
                modules.append(Module(name: join(f, intermediate, dense), kind: .linear, rows: ffn, cols: t))
                modules += linearAndNorm(join(f, output), rows: t, cols: ffn)
            }
            modules.append(Module(name: join(p, intermediate, dense), kind: .linear, rows: ffn, cols: t))
            modules += linearAndNorm(join(p, output), rows: t, cols: ffn)
            if mobile.useBottleneck { modules += linearAndNorm(join(p, output, bottleneck), rows: h, cols: t) }
        }
        if config.heads.hasMaskedLMHead {
            modules += linearAndNorm(maskedLMTransform, rows: h, cols: h)
            modules.append(Module(name: maskedLMDecoder, kind: .table, rows: config.encoder.vocabSize, cols: h))
        }
        return modules
    }
}

/// The weights files of a converted model folder.
enum WeightFiles {
    /// float32, written by the converter.
    static let fp32 = "model.safetensors"
    /// INT8 (packed), written beside it by the quantizer.
    static let int8 = "model.int8.safetensors"
    /// `int8-static`: INT8 weights smoothed for calibrated activation ranges (`Quantizer.calibrate`).
    static let int8Static = "model.int8-static.safetensors"
}
