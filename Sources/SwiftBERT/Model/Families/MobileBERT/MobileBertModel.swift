import Foundation

/// MobileBertForMaskedLM (or MobileBertModel) loaded from a converted folder: the keyboard's
/// masked-LM. Its layers work at the bottleneck width (128) between a bottleneck in and out of
/// the hidden width (512), with stacked feed-forward networks and NoNorm; the word embeddings
/// are 128 wide, widened by the trigram projection. Immutable after loading: one instance can
/// serve many threads at once.
public final class MobileBertModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    public let mobile: MobileBertConfig
    let embeddings: MobileBertEmbeddings
    let layers: [MobileBertLayer]
    /// BERT's head with MobileBERT's activation and widened decoder (see `MaskedLMPredictionHead`).
    let maskedLMHead: MaskedLMPredictionHead?

    /// The precisions MobileBERT runs in; bf16 is not implemented for it yet.
    public static let precisions: [Precision] = [.fp32, .int8, .int8Weights]

    /// Why `precision` cannot run a MobileBERT model, and what to use instead.
    public static func unsupported(_ precision: Precision) -> SwiftBERTError {
        .invalidInput(reason: "MobileBERT runs in \(precisions.map(\.rawValue).joined(separator: ", ")); \(precision.rawValue) is not implemented for it yet (use --precision int8 for speed)")
    }

    /// Loads `folder/config.json` and memory-maps the weights of `precision`, checking every
    /// tensor's presence, dtype and shape (and, unless told not to, that none holds NaN or infinity).
    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        guard Self.precisions.contains(precision) else { throw Self.unsupported(precision) }
        let opened = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights)
        let (config, heads, weights) = (opened.config.encoder, opened.config.heads, opened.weights)
        guard let mobile = config.mobileBert else {
            throw SwiftBERTError.invalidInput(reason: "\(folder.lastPathComponent) is not a MobileBERT model; load it with BertModel")
        }
        self.mobile = mobile
        // MobileBERT's Linear layers run as their file stores them (FP32, or INT8 weights).
        let root = WeightScope(weights, precision: .fp32)
        embeddings = try MobileBertEmbeddings(root, config, mobile)
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) {
            try MobileBertLayer(root[TensorNames.layer($0)], config, mobile)
        }
        maskedLMHead = heads.hasMaskedLMHead  // the decoder is untied: the embeddings are not read
            ? try MaskedLMPredictionHead(root, opened.config, wordEmbeddings: embeddings.wordEmbeddings) : nil
        super.init(opened, loadStarted: start)
    }

    /// Last-layer hidden states [T × hidden_size] for a batch of token-id sequences (each framed
    /// with [CLS]/[SEP]); sequences may differ in length, none is padded.
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.encoder.pack(batch, typeIds: typeIds)
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: config.encoder.hiddenSize, threads: threads) { part, ids, types, hidden in
            let (context, buffers) = scratch(for: part, profile: profile)
            forward(ids: ids, typeIds: types, hidden: hidden, context, buffers)
        }
    }

    /// Threads, profile and scratch for one forward pass over `sequences`.
    func scratch(for sequences: PackedSequences, profile: StageProfile? = nil) -> (ForwardContext, MobileBertBuffers) {
        let context = ForwardContext(sequences: sequences, threads: threads, quantizesActivations: precision.quantizesActivations,
                                     attention: precision.attention, profile: profile, hidden: config.encoder.hiddenSize,
                                     wideColumns: max(config.encoder.intermediateSize, embeddings.inputWidth),
                                     headDim: mobile.trueHiddenSize(config.encoder) / config.encoder.numAttentionHeads)
        return (context, MobileBertBuffers(tokens: sequences.tokenCount, width: mobile.trueHiddenSize(config.encoder)))
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], typeIds: [Int32], hidden x: UnsafeMutablePointer<Float>,
                 _ context: ForwardContext, _ buffers: MobileBertBuffers) {
        // 1. Embeddings: 128-wide word rows with their neighbours' (trigram), projected to hidden, + position + type, norm.
        context.measure(.embeddings) { embeddings(ids: ids, typeIds: typeIds, into: x, scratch: context.wide, context) }
        for layer in layers {
            // 2. Bottleneck in: the block's input and residual, and Q/K's shared input (hidden → 128).
            let inputs = layer.attentionInputs(x, buffers, context)
            // 3. Self-attention: Q, K, V projections, softmax(QKᵀ/√d)·V per sequence and head.
            layer.selfAttention(inputs, into: context.attended, buffers, context)
            // 4. Attention output: dense, + the bottlenecked input, norm.
            context.measure(.attentionOutput) {
                layer.attentionOutput(context.attended, residual: inputs.residual, into: buffers.attentionOutput, context)
            }
            // 5. Stacked feed-forward networks: dense, activation, dense, + residual, norm; each in place.
            for network in layer.feedForwardNetworks { network(buffers.attentionOutput, context) }
            // 6. Last feed-forward in: dense, activation.
            layer.intermediate(buffers.attentionOutput, into: context.wide, context)
            // 7. Output: dense, + residual, norm; bottleneck out: dense back to hidden, + the layer's input, norm.
            context.measure(.feedForwardOut) {
                layer.output(context.wide, attentionOutput: buffers.attentionOutput, layerInput: x, buffers, context)
            }
        }
    }

    /// The masked-LM head alone: logits [m × V] for hidden rows [m × H].
    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        guard let head = maskedLMHead else { throw missingMaskedLMHead }
        return runHead(hiddenRows, m: m, vocabulary: config.encoder.vocabSize) { head($0, m: m, into: $1, threads: threads) }
    }
}
