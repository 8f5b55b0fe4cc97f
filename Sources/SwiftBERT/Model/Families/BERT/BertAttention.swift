import SwiftBERTKernels

/// BertSelfAttention: multi-head scaled dot-product attention, with Q, K and V computed by one
/// fused Linear (the converter stacks Hugging Face's query, key and value).
struct BertSelfAttention {
    let qkv: Linear
    let heads: Int
    let headDim: Int

    init(_ scope: WeightScope, _ config: EncoderConfig) throws {
        qkv = try scope[TensorNames.qkv].linear(k: config.hiddenSize, n: 3 * config.hiddenSize)
        heads = config.numAttentionHeads
        headDim = config.headDim
    }

    /// attended[T × H] = softmax(Q·Kᵀ/√d)·V per sequence and head, Q, K, V projected from x;
    /// with `queries`, only those rows of each sequence (`multiHeadAttention`).
    func callAsFunction(_ x: UnsafePointer<Float>, into attended: UnsafeMutablePointer<Float>, _ context: ForwardContext,
                        queries: [Range<Int>]? = nil) {
        let sequences = context.sequences
        let projections = context.wide  // [T × 3H]: Q | K | V per token
        context.measure(.qkv) { qkv(x, m: sequences.tokenCount, into: projections, context) }
        context.measure(.attention) {
            let h = heads * headDim
            multiHeadAttention(q: projections, k: projections + h, v: projections + 2 * h, ld: 3 * h,
                               heads: heads, headDim: headDim, starts: sequences.starts, lengths: sequences.lengths,
                               threads: context.threads, arithmetic: context.attention, bias: context.attentionBias, queries: queries,
                               scratch: context.attentionScratch, into: attended, ldo: h)
        }
    }
}

/// BertSelfOutput and BertOutput: a projection, then LayerNorm over the residual.
struct BertProjectionOutput {
    /// Which of the two: it fixes the projection's input width and the stage it is profiled as.
    enum Module {
        /// BertSelfOutput (attention.output): hidden → hidden.
        case selfOutput
        /// BertOutput (output): intermediate → hidden.
        case output
    }

    let dense: Linear
    let layerNorm: LayerNorm
    let stage: StageProfile.Stage

    init(_ scope: WeightScope, _ module: Module, _ config: EncoderConfig) throws {
        let k = module == .selfOutput ? config.hiddenSize : config.intermediateSize
        stage = module == .selfOutput ? .attentionOutput : .feedForwardOut
        dense = try scope[TensorNames.dense].linear(k: k, n: config.hiddenSize)
        layerNorm = try scope[TensorNames.layerNorm].layerNorm(size: config.hiddenSize, eps: config.layerNormEps)
    }

    /// x = LayerNorm(x + input·Wᵀ + b), in place, over the first `rows` rows (nil: every token's).
    func callAsFunction(_ input: UnsafePointer<Float>, residual x: UnsafeMutablePointer<Float>, _ context: ForwardContext,
                        rows: Int? = nil) {
        let m = rows ?? context.sequences.tokenCount
        context.measure(stage) { dense(input, m: m, into: context.projected, context) }
        context.measure(.layerNorm) { layerNorm(x, residual: context.projected, m: m, threads: context.threads) }
    }
}

/// BertAttention: self-attention, then its output projection and LayerNorm over the residual.
struct BertAttention {
    let selfAttention: BertSelfAttention
    let output: BertProjectionOutput

    init(_ scope: WeightScope, _ config: EncoderConfig) throws {
        selfAttention = try BertSelfAttention(scope[TensorNames.selfAttention], config)
        output = try BertProjectionOutput(scope[TensorNames.output], .selfOutput, config)
    }

    /// x = LayerNorm(x + Wo·Attention(x) + bo), in place.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        selfAttention(x, into: context.attended, context)
        output(context.attended, residual: x, context)
    }
}
