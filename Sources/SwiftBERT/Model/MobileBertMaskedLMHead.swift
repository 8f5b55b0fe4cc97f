/// MobileBertLMPredictionHead: the transform (dense, hidden_act, LayerNorm — always LayerNorm,
/// whatever the encoder's normalisation), then the decoder: transformers multiplies by
/// cat([decoder.weight.t(), dense.weight]), the word embeddings widened to hidden_size by an
/// extra learned block; the converter stores that product's matrix as one [V × H] decoder.
struct MobileBertMaskedLMHead {
    let transform: Linear
    let activation: MobileBertActivation
    let layerNorm: LayerNorm
    let decoder: Linear
    let hidden: Int

    init(_ file: SafeTensorsFile, _ config: BertConfig) throws {
        let h = config.hiddenSize, names = TensorNames.self
        transform = try Linear(file, names.join(names.maskedLMTransform, names.dense), k: h, n: h)
        activation = MobileBertActivation(config)
        layerNorm = try LayerNorm(file, names.join(names.maskedLMTransform, names.layerNorm), size: h, eps: config.layerNormEps)
        let weight = try WeightMatrix(file, names.maskedLMDecoder, n: config.vocabSize, k: h)
        let bias = try file.floats(names.maskedLMBias, shape: [config.vocabSize]).baseAddress!
        decoder = Linear(weight: weight, bias: bias, k: h, n: config.vocabSize)
        hidden = h
    }

    /// Vocabulary logits [m × V] for hidden rows x [m × H]. Weight-only with INT8 weights (float
    /// activations), as BERT's head: it runs on the mask positions only.
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
