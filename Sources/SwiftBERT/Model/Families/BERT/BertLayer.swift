/// BertIntermediate (and MobileBertIntermediate): the feed-forward network's first projection
/// and its activation, config.hidden_act (BERT's exact GELU; MobileBERT's ReLU).
struct BertIntermediate {
    let dense: Linear
    let activation: HiddenActivation

    /// `k`: the width it reads (hidden_size; MobileBERT's true_hidden_size).
    init(_ scope: WeightScope, k: Int, _ config: EncoderConfig) throws {
        dense = try scope[TensorNames.dense].linear(k: k, n: config.intermediateSize)
        activation = HiddenActivation(config)
    }

    /// y[T × FFN] = activation(x·Wᵀ + b), over the first `rows` rows (nil: every token's).
    func callAsFunction(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, _ context: ForwardContext, rows: Int? = nil) {
        let (m, n) = (rows ?? context.sequences.tokenCount, dense.n)
        context.measure(.feedForwardIn) {
            dense(x, m: m, into: y, context) { y, rows, columns in
                // The activation on each block of the output as soon as it is complete, in cache.
                for r in rows { activation(y + r * n + columns.lowerBound, count: columns.count) }
            }
        }
    }
}

/// BertLayer: the attention block, then the feed-forward block (intermediate, output), each
/// post-LN with a residual. `BertModel.forward` runs its modules in order.
struct BertLayer {
    let attention: BertAttention
    let intermediate: BertIntermediate
    let output: BertProjectionOutput

    init(_ scope: WeightScope, _ config: EncoderConfig) throws {
        attention = try BertAttention(scope[TensorNames.attention], config)
        intermediate = try BertIntermediate(scope[TensorNames.intermediate], k: config.hiddenSize, config)
        output = try BertProjectionOutput(scope[TensorNames.output], .output, config)
    }
}
