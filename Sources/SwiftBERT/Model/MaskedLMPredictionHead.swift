import SwiftBERTKernels

/// BertOnlyMLMHead: the transform (dense, GELU, LayerNorm), then the decoder (usually tied to
/// the word embeddings) plus the output bias. MobileBERT's head is the same with its hidden_act
/// (ReLU) and an untied decoder: the converter joins its embeddings and `cls.predictions.dense`.
struct MaskedLMPredictionHead {
    let transform: Linear
    let activation: HiddenActivation
    let layerNorm: LayerNorm
    /// hidden → vocabulary logits; its weight is usually the word-embedding table.
    let decoder: Linear
    let hidden: Int

    init(_ root: WeightScope, _ config: ModelConfig, wordEmbeddings: any LinearWeights) throws {
        let h = config.encoder.hiddenSize, names = TensorNames.self
        // The head stays FP32 under BF16 (it runs on the mask positions only).
        let scope = root[names.maskedLMTransform].with(.fp32)
        transform = try scope[names.dense].linear(k: h, n: h)
        activation = HiddenActivation(config.encoder)
        layerNorm = try scope[names.layerNorm].layerNorm(size: h, eps: config.encoder.layerNormEps)
        let weight = config.heads.hasUntiedDecoder
            ? try root[names.maskedLMDecoder].matrix(n: config.encoder.vocabSize, k: h)
            : wordEmbeddings
        let bias = try root.file.floats(names.maskedLMBias, shape: [config.encoder.vocabSize]).baseAddress!
        decoder = Linear(weight: weight, bias: bias, k: h, n: config.encoder.vocabSize)
        hidden = h
    }

    /// Vocabulary logits [m × V] for hidden rows x [m × H]. The context quantises no
    /// activations: with INT8 weights the head is weight-only, since a masked-LM's top
    /// candidates are often a few hundredths of a logit apart, and it runs on the mask
    /// positions only, so this costs nothing.
    func callAsFunction(_ x: UnsafePointer<Float>, m: Int, into logits: UnsafeMutablePointer<Float>, threads: Int) {
        let context = ForwardContext(sequences: PackedSequences(lengths: [m]), threads: threads, quantizesActivations: false,
                                     hidden: hidden)
        let t = context.projected
        transform(x, m: m, into: t, context)
        activation(t, count: m * hidden)
        layerNorm(t, residual: nil, m: m)
        decoder(t, m: m, into: logits, context)
    }
}
