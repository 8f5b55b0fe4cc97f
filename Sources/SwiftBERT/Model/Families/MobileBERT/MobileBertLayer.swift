import SwiftBERTKernels

/// The scratch of one MobileBERT forward pass beyond the `ForwardContext`'s, each [T × true hidden].
final class MobileBertBuffers {
    /// The attention block's input and residual (bottleneck.input).
    let layerInput: UnsafeMutablePointer<Float>
    /// Q's and K's input when they share a bottleneck (bottleneck.attention).
    let queryKeyInput: UnsafeMutablePointer<Float>
    let query: UnsafeMutablePointer<Float>
    let key: UnsafeMutablePointer<Float>
    let value: UnsafeMutablePointer<Float>
    /// The attention block's output, then each feed-forward network's, in place.
    let attentionOutput: UnsafeMutablePointer<Float>
    /// The last feed-forward network's output before the output bottleneck.
    let layerOutput: UnsafeMutablePointer<Float>
    private let buffers: FloatBuffers

    init(tokens: Int, width: Int) {
        buffers = FloatBuffers(Array(repeating: tokens * width, count: 7))
        let p = buffers.pointers
        (layerInput, queryKeyInput, query, key) = (p[0], p[1], p[2], p[3])
        (value, attentionOutput, layerOutput) = (p[4], p[5], p[6])
    }
}

/// What Bottleneck hands the attention block (transformers' 4-tuple): the inputs of Q, K and V,
/// and the residual of the attention output.
struct MobileBertAttentionInputs {
    let query: UnsafePointer<Float>
    let key: UnsafePointer<Float>
    let value: UnsafePointer<Float>
    let residual: UnsafePointer<Float>
}

/// BottleneckLayer: hidden → intra_bottleneck_size, then the norm.
struct MobileBertBottleneckLayer {
    let dense: Linear
    let norm: MobileBertNorm

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        let t = mobile.trueHiddenSize(config)
        dense = try scope[TensorNames.dense].linear(k: config.hiddenSize, n: t)
        norm = try MobileBertNorm(scope[TensorNames.layerNorm], size: t, eps: config.layerNormEps, mobile.normalization)
    }

    /// y[T × intra] = norm(x·Wᵀ + b).
    func callAsFunction(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        let m = context.sequences.tokenCount
        dense(x, m: m, into: y, context)
        norm(y, residual: nil, m: m)
    }
}

/// Bottleneck: the narrow input of the layer's attention block, and of Q and K when they share one.
struct MobileBertBottleneck {
    let input: MobileBertBottleneckLayer
    /// bottleneck.attention, used when key_query_shared_bottleneck without use_bottleneck_attention.
    let attention: MobileBertBottleneckLayer?

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        input = try MobileBertBottleneckLayer(scope[TensorNames.bottleneckInput], config, mobile)
        attention = mobile.keyQuerySharedBottleneck && !mobile.useBottleneckAttention
            ? try MobileBertBottleneckLayer(scope[TensorNames.attention], config, mobile) : nil
    }

    /// use_bottleneck_attention: Q, K, V and the residual all read bottleneck.input; shared: Q and K
    /// read bottleneck.attention, V the hidden state, the residual bottleneck.input.
    func callAsFunction(_ x: UnsafePointer<Float>, _ buffers: MobileBertBuffers, _ context: ForwardContext) -> MobileBertAttentionInputs {
        input(x, into: buffers.layerInput, context)
        let narrow = UnsafePointer(buffers.layerInput)
        guard let attention else { return MobileBertAttentionInputs(query: narrow, key: narrow, value: narrow, residual: narrow) }
        attention(x, into: buffers.queryKeyInput, context)
        let shared = UnsafePointer(buffers.queryKeyInput)
        return MobileBertAttentionInputs(query: shared, key: shared, value: x, residual: narrow)
    }
}

/// MobileBertSelfAttention: Q, K and V from their own inputs (MobileBERT's differ), then
/// softmax(Q·Kᵀ/√d)·V per sequence and head, at the true hidden width.
struct MobileBertSelfAttention {
    let query: Linear
    let key: Linear
    let value: Linear
    let heads: Int
    let headDim: Int

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        let t = mobile.trueHiddenSize(config), names = TensorNames.self
        query = try scope[names.query].linear(k: t, n: t)
        key = try scope[names.key].linear(k: t, n: t)
        value = try scope[names.value].linear(k: mobile.useBottleneckAttention ? t : config.hiddenSize, n: t)
        heads = config.numAttentionHeads
        headDim = t / heads
    }

    /// attended[T × t] for the inputs the bottleneck chose.
    func callAsFunction(_ inputs: MobileBertAttentionInputs, into attended: UnsafeMutablePointer<Float>,
                        _ buffers: MobileBertBuffers, _ context: ForwardContext) {
        let sequences = context.sequences, m = sequences.tokenCount
        let (q, k, v) = (buffers.query, buffers.key, buffers.value)
        context.measure(.qkv) {
            query(inputs.query, m: m, into: q, context)
            key(inputs.key, m: m, into: k, context)
            value(inputs.value, m: m, into: v, context)
        }
        context.measure(.attention) {
            let width = heads * headDim
            multiHeadAttention(q: q, k: k, v: v, ld: width, heads: heads, headDim: headDim,
                               starts: context.sequences.starts, lengths: context.sequences.lengths,
                               threads: context.threads, arithmetic: context.attention, scratch: context.attentionScratch, into: attended, ldo: width)
        }
    }
}

/// MobileBertSelfOutput, FFNOutput, MobileBertOutput's own projection and OutputBottleneck,
/// which compute alike: a projection, then the norm over the residual.
struct MobileBertProjectionOutput {
    /// Which of them: it fixes the projection's widths and the norm's eps.
    enum Module {
        /// MobileBertSelfOutput (attention.output): true hidden → true hidden.
        case selfOutput
        /// FFNOutput (ffn.i.output): intermediate → true hidden.
        case ffnOutput
        /// MobileBertOutput's dense and norm (output): intermediate → true hidden.
        case output
        /// OutputBottleneck (output.bottleneck): true hidden → hidden.
        case outputBottleneck
    }

    let dense: Linear
    let norm: MobileBertNorm

    init(_ scope: WeightScope, _ module: Module, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        let t = mobile.trueHiddenSize(config)
        let (k, n, eps): (Int, Int, Float) = switch module {
        case .selfOutput: (t, t, config.layerNormEps)
        case .ffnOutput: (config.intermediateSize, t, config.layerNormEps)
        case .output: (config.intermediateSize, t, MobileBertNorm.defaultEps)  // transformers builds this norm without eps
        case .outputBottleneck: (t, config.hiddenSize, config.layerNormEps)
        }
        dense = try scope[TensorNames.dense].linear(k: k, n: n)
        norm = try MobileBertNorm(scope[TensorNames.layerNorm], size: n, eps: eps, mobile.normalization)
    }

    /// y = norm(input·Wᵀ + b + residual); y may be the residual itself.
    func callAsFunction(_ input: UnsafePointer<Float>, residual: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>,
                        _ context: ForwardContext) {
        let m = context.sequences.tokenCount
        dense(input, m: m, into: context.projected, context)
        if UnsafePointer(y) != residual { y.update(from: residual, count: m * dense.n) }
        norm(y, residual: context.projected, m: m)
    }
}

/// FFNLayer: one of the stacked feed-forward networks before the last (intermediate, FFNOutput).
struct MobileBertFeedForward {
    let intermediate: BertIntermediate
    let output: MobileBertProjectionOutput

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        intermediate = try BertIntermediate(scope[TensorNames.intermediate], k: mobile.trueHiddenSize(config), config)
        output = try MobileBertProjectionOutput(scope[TensorNames.output], .ffnOutput, config, mobile)
    }

    /// x = norm(FFN(x) + x), in place.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        intermediate(x, into: context.wide, context)
        context.measure(.feedForwardOut) { output(context.wide, residual: x, into: x, context) }
    }
}

/// MobileBertOutput: the last feed-forward network's projection and norm over the attention
/// block's output, then (with bottlenecks) OutputBottleneck back to hidden_size over the
/// layer's input.
struct MobileBertOutput {
    let output: MobileBertProjectionOutput
    let bottleneck: MobileBertProjectionOutput?

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        output = try MobileBertProjectionOutput(scope, .output, config, mobile)
        bottleneck = mobile.useBottleneck
            ? try MobileBertProjectionOutput(scope[TensorNames.bottleneck], .outputBottleneck, config, mobile) : nil
    }

    /// x (the layer's input, [T × H]) becomes the layer's output.
    func callAsFunction(_ intermediate: UnsafePointer<Float>, attentionOutput: UnsafePointer<Float>,
                        layerInput x: UnsafeMutablePointer<Float>, _ buffers: MobileBertBuffers, _ context: ForwardContext) {
        guard let bottleneck else { return output(intermediate, residual: attentionOutput, into: x, context) }
        output(intermediate, residual: attentionOutput, into: buffers.layerOutput, context)
        bottleneck(buffers.layerOutput, residual: x, into: x, context)
    }
}

/// MobileBertLayer: bottleneck in, attention, the stacked feed-forward networks, output and
/// bottleneck out. `MobileBertModel.forward` runs its modules in order.
struct MobileBertLayer {
    /// nil without use_bottleneck: Q, K, V and the residual are the hidden state itself.
    let bottleneck: MobileBertBottleneck?
    let selfAttention: MobileBertSelfAttention
    /// attention.output (MobileBertSelfOutput).
    let attentionOutput: MobileBertProjectionOutput
    /// ffn.0 … ffn.(num_feedforward_networks - 2).
    let feedForwardNetworks: [MobileBertFeedForward]
    let intermediate: BertIntermediate
    let output: MobileBertOutput

    init(_ scope: WeightScope, _ config: EncoderConfig, _ mobile: MobileBertConfig) throws {
        let names = TensorNames.self
        bottleneck = mobile.useBottleneck ? try MobileBertBottleneck(scope[names.bottleneck], config, mobile) : nil
        selfAttention = try MobileBertSelfAttention(scope[names.attention][names.selfAttention], config, mobile)
        attentionOutput = try MobileBertProjectionOutput(scope[names.attention][names.output], .selfOutput, config, mobile)
        feedForwardNetworks = try (0..<(mobile.numFeedforwardNetworks - 1)).map {
            try MobileBertFeedForward(scope[names.feedForwardNetworks][String($0)], config, mobile)
        }
        intermediate = try BertIntermediate(scope[names.intermediate], k: mobile.trueHiddenSize(config), config)
        output = try MobileBertOutput(scope[names.output], config, mobile)
    }

    /// What the bottleneck gives the attention block; without bottlenecks, the hidden state for all four.
    func attentionInputs(_ x: UnsafePointer<Float>, _ buffers: MobileBertBuffers, _ context: ForwardContext) -> MobileBertAttentionInputs {
        bottleneck?(x, buffers, context) ?? MobileBertAttentionInputs(query: x, key: x, value: x, residual: x)
    }
}
