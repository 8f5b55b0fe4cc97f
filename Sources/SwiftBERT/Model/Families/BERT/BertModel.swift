import Foundation
import SwiftBERTKernels

/// A BERT encoder loaded from a converted folder (see `Converter`), with its masked-LM head when
/// the checkpoint has one. Immutable after loading: one instance can serve many threads at once.
public final class BertModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    let embeddings: BertEmbeddings
    let layers: [BertLayer]
    /// MPNet's relative position bias, shared by every layer (nil for the other families).
    let relativePositionBias: RelativePositionBias?
    let maskedLMHead: MaskedLMPredictionHead?

    /// Loads `folder/config.json` and memory-maps `folder/model.safetensors`, checking every
    /// tensor: its presence, dtype and shape against the config, and (unless
    /// `checksFiniteWeights` is false) that it holds no NaN or infinity.
    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let opened = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights)
        let (config, heads, weights) = (opened.config.encoder, opened.config.heads, opened.weights)
        guard ModelFamilies.family(of: config) is BertFamily else {
            throw SwiftBERTError.invalidInput(reason: "\(folder.lastPathComponent) is a \(ModelFamilies.family(of: config).name) model: load it with loadModel or loadEncoder")
        }
        let root = WeightScope(weights, precision: precision)
        embeddings = try BertEmbeddings(root, config)
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) { try BertLayer(root[TensorNames.layer($0)], config) }
        relativePositionBias = try config.relativeAttentionNumBuckets.map {
            try RelativePositionBias(root[TensorNames.relativeAttentionBias], config, buckets: $0)
        }
        maskedLMHead = heads.hasMaskedLMHead
            ? try MaskedLMPredictionHead(root, opened.config, wordEmbeddings: embeddings.wordEmbeddings) : nil
        KernelReport.warnOnceIfSlower()  // a portable build on an AVX-512 CPU says so, once
        super.init(opened, loadStarted: start)
    }

    // MARK: - Forward pass

    /// Last-layer hidden states for a batch of token-id sequences (each already framed with
    /// [CLS]/[SEP]). Sequences may differ in length; none is padded. Pass a `StageProfile` to
    /// learn where the time goes.
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil, profile: StageProfile? = nil) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: profile, recordingInto: nil)
    }

    /// `encode` for a head that reads `reading[s]` of sequence s: the last layer runs its
    /// queries, attention output and feed-forward network for those rows alone (`forward`).
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?, reading: [HeadRows]?) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: profile, recordingInto: nil, reading: reading)
    }

    /// `encode`, every Linear layer recording its input's range into `ranges` when given
    /// (`Quantizer.calibrate`).
    func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?,
                recordingInto ranges: ActivationRanges?, reading: [HeadRows]? = nil) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.encoder.pack(batch, typeIds: typeIds, reading: reading)
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: config.encoder.hiddenSize, threads: threads) { part, ids, types, hidden in
            let context = context(for: part, profile: profile)
            context.activationRanges = ranges
            forward(ids: ids, typeIds: types, hidden: hidden, context)
        }
    }

    /// Threads, scratch and profile for one forward pass over `sequences`.
    func context(for sequences: PackedSequences, profile: StageProfile? = nil) -> ForwardContext {
        ForwardContext(sequences: sequences, threads: threads, quantizesActivations: precision.quantizesActivations,
                       attention: precision.attention, profile: profile, hidden: config.encoder.hiddenSize,
                       wideColumns: max(3 * config.encoder.hiddenSize, config.encoder.intermediateSize), headDim: config.encoder.headDim,
                       attentionBias: relativePositionBias?.bias)
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], typeIds: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        // 1. Embeddings: word + position (RoBERTa's from padding_idx + 1) + token type, LayerNorm.
        context.measure(.embeddings) { embeddings(ids: ids, typeIds: typeIds, into: x, context) }
        let sequences = context.sequences, h = config.encoder.hiddenSize
        for (index, layer) in layers.enumerated() {
            // The last layer, when a head reads only some rows (`HeadRows`): every token's Q, K
            // and V, attention for the query blocks of the rows read, then those rows alone
            // (`m` of them), gathered to the front of the buffers and put back at the end. Each
            // row's arithmetic is a full pass's, so its states are the same, bit for bit.
            let readingOnly = sequences.readsOnly(layer: index, of: layers.count)
            // 2. Self-attention: Q, K, V in one fused Linear, softmax(QKᵀ/√d [+ MPNet's position
            //    bias])·V per sequence and head.
            layer.attention.selfAttention(x, into: context.attended, context, queries: readingOnly ? sequences.rowsRead : nil)
            let m = readingOnly ? sequences.gatherRowsRead(width: h, [context.attended, x]) : sequences.tokenCount
            if m == 0 { return }  // no row read: nothing more to compute
            // 3. Attention output projection, residual, LayerNorm.
            layer.attention.output(context.attended, residual: x, context, rows: m)
            // 4. Feed-forward in: dense, then exact GELU.
            layer.intermediate(x, into: context.wide, context, rows: m)
            // 5. Feed-forward out: dense, residual, LayerNorm.
            layer.output(context.wide, residual: x, context, rows: m)
            if readingOnly { sequences.putBackRowsRead(width: h, x) }
        }
    }

    // MARK: - Heads

    /// The masked-LM head alone (`EncoderModel`): logits [m × V] for hidden rows [m × H].
    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        guard let head = maskedLMHead else { throw missingMaskedLMHead }
        return runHead(hiddenRows, m: m, vocabulary: config.encoder.vocabSize) { head($0, m: m, into: $1, threads: threads) }
    }
}
