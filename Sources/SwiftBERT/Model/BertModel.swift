import Foundation

/// Numeric format of the encoder's Linear layers.
public enum Precision: String, CaseIterable, Sendable {
    /// float32 weights, repacked at load for the Swift FP32 micro-kernel: exact
    /// against PyTorch. Attention runs the fused Swift kernel; the masked-LM decoder OpenBLAS sgemm.
    case fp32
    /// int8 weights (per output channel) and activations (per token), integer GEMM in Swift.
    case int8
    /// `int8`, and attention's two products in integers too (vpdpbusd; Kernels/Attention.swift),
    /// its softmax in FP32: faster at long sequences, a little further from FP32 (docs/int8.md).
    case int8Attention = "int8-attention"
    /// int8 weights, float32 activations: the same file and speed as `int8`, closer to FP32
    /// (see docs/int8.md), so the one to pick for masked-LM suggestions.
    case int8Weights = "int8-weights"
    /// the float32 file's encoder Linear weights rounded to BF16 at load, activations rounded
    /// to BF16 once per Linear, FP32 accumulation; LayerNorm, softmax and heads in FP32
    /// (see docs/bf16.md).
    case bf16
    /// `int8-attention` with each Linear layer's input quantised by a range calibrated offline
    /// (`bert quantize --calibrate FILE`, SmoothQuant's per-channel smoothing folded into the
    /// weights, an asymmetric per-tensor scale and zero point), not by a per-row maximum at run
    /// time; its own file, model.int8-static.safetensors (docs/int8.md).
    case int8Static = "int8-static"

    /// The weights file of this precision inside a converted model folder.
    public var fileName: String {
        switch self {
        case .fp32, .bf16: WeightFiles.fp32
        case .int8, .int8Attention, .int8Weights: WeightFiles.int8
        case .int8Static: WeightFiles.int8Static
        }
    }
    /// Whether activations are quantised before each Linear layer.
    package var quantizesActivations: Bool { self == .int8 || self == .int8Attention || self == .int8Static }
    /// The arithmetic of attention's products.
    var attention: AttentionPrecision {
        switch self {
        case .int8Attention, .int8Static: .int8
        case .bf16: .bf16
        case .fp32, .int8, .int8Weights: .fp32
        }
    }
}

/// A BERT encoder loaded from a converted folder (see `Converter`), with its masked-LM head when
/// the checkpoint has one. Immutable after loading: one instance can serve many threads at once.
public final class BertModel: ConvertedModel, EncoderModel, @unchecked Sendable {
    let embeddings: BertEmbeddings
    let layers: [BertLayer]
    /// MPNet's relative position bias, shared by every layer (nil for the other families).
    let relativePositionBias: RelativePositionBias?
    let maskedLMHead: BertMaskedLMHead?

    /// Loads `folder/config.json` and memory-maps `folder/model.safetensors`, checking every
    /// tensor: its presence, dtype and shape against the config, and (unless
    /// `checksFiniteWeights` is false) that it holds no NaN or infinity.
    public init(folder: URL, threads: Int? = nil, precision: Precision = .fp32, checksFiniteWeights: Bool = true) throws {
        let start = DispatchTime.now()
        let opened = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights)
        let (config, weights) = (opened.config, opened.weights)
        guard config.mobileBert == nil, config.rotary == nil else {
            throw BertError.invalidInput(reason: "\(folder.lastPathComponent) is a \(config.mobileBert != nil ? "MobileBERT" : config.architecture?.displayName ?? "non-BERT") model: load it with loadModel or loadEncoder")
        }
        let root = WeightScope(weights, precision: precision)
        embeddings = try BertEmbeddings(root, config)
        layers = try loadInParallel(config.numHiddenLayers, threads: opened.threads) { try BertLayer(root[TensorNames.layer($0)], config) }
        relativePositionBias = try config.relativeAttentionNumBuckets.map {
            try RelativePositionBias(root[TensorNames.relativeAttentionBias], config, buckets: $0)
        }
        maskedLMHead = config.hasMaskedLMHead
            ? try BertMaskedLMHead(root, config, wordEmbeddings: embeddings.wordEmbeddings) : nil
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

    /// `encode`, every Linear layer recording its input's range into `ranges` when given
    /// (`Quantizer.calibrate`).
    func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?,
                recordingInto ranges: ActivationRanges?) throws -> EncoderOutput {
        let (ids, types, sequences) = try config.pack(batch, typeIds: typeIds)
        return sequences.encodeInChunks(ids: ids, typeIds: types, hiddenSize: config.hiddenSize, threads: threads) { part, ids, types, hidden in
            let context = context(for: part, profile: profile)
            context.activationRanges = ranges
            forward(ids: ids, typeIds: types, hidden: hidden, context)
        }
    }

    /// Threads, scratch and profile for one forward pass over `sequences`.
    func context(for sequences: PackedSequences, profile: StageProfile? = nil) -> ForwardContext {
        ForwardContext(sequences: sequences, threads: threads, quantizesActivations: precision.quantizesActivations,
                       attention: precision.attention, profile: profile, hidden: config.hiddenSize,
                       wideColumns: max(3 * config.hiddenSize, config.intermediateSize), headDim: config.headDim,
                       attentionBias: relativePositionBias?.bias)
    }

    /// The whole encoder, top to bottom. `x` receives [T × H] for the packed tokens.
    func forward(ids: [Int32], typeIds: [Int32], hidden x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        // 1. Embeddings: word + position (RoBERTa's from padding_idx + 1) + token type, LayerNorm.
        context.measure(.embeddings) { embeddings(ids: ids, typeIds: typeIds, into: x, context) }
        for layer in layers {
            // 2. Self-attention: Q, K, V in one fused Linear, softmax(QKᵀ/√d [+ MPNet's position
            //    bias])·V per sequence and head.
            layer.attention.selfAttention(x, into: context.attended, context)
            // 3. Attention output projection, residual, LayerNorm.
            layer.attention.output(context.attended, residual: x, context)
            // 4. Feed-forward in: dense, then exact GELU.
            layer.intermediate(x, into: context.wide, context)
            // 5. Feed-forward out: dense, residual, LayerNorm.
            layer.output(context.wide, residual: x, context)
        }
    }

    // MARK: - Heads

    /// The masked-LM head alone (`EncoderModel`): logits [m × V] for hidden rows [m × H].
    public func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float] {
        guard let head = maskedLMHead else { throw missingMaskedLMHead }
        return runHead(hiddenRows, m: m, vocabulary: config.vocabSize) { head($0, m: m, into: $1, threads: threads) }
    }
}

extension BertConfig {
    /// Why `ids` (with `typeIds`, when given) cannot run through this model, or nil when they
    /// can: empty, longer than the positions, an id outside the vocabulary, a token type the
    /// model does not have. The one check, per sequence, so a caller that batches sequences
    /// from many clients (the server) can refuse one request alone before its sequences join
    /// others' (`EncoderModel.validate`).
    func problem(ids: [Int32], typeIds: [Int32]?) -> String? {
        guard !ids.isEmpty else { return "is empty" }
        guard ids.count <= positionLimit else {
            return "has \(ids.count) tokens; the model takes at most \(positionLimit) (truncate it)"
        }
        if let bad = ids.first(where: { $0 < 0 || Int($0) >= vocabSize }) {
            return "holds token id \(bad), outside the vocabulary of \(vocabSize)"
        }
        if let typeIds {
            guard typeIds.count == ids.count else { return "has \(typeIds.count) token type ids for \(ids.count) token ids" }
            if usesTokenTypes, let bad = typeIds.first(where: { $0 < 0 || Int($0) >= typeVocabSize }) {
                return typeVocabSize == 1
                    ? "holds token type id \(bad), but the model has one token type: it takes single texts, not pairs"
                    : "holds token type id \(bad); the model has \(typeVocabSize) types"
            }
        }
        return nil
    }

    /// Flattens a batch into one token matrix, checking every id against the model's tables.
    func pack(_ batch: [[Int32]], typeIds: [[Int32]]?) throws -> ([Int32], [Int32], PackedSequences) {
        guard !batch.isEmpty else { throw BertError.invalidInput(reason: "the batch is empty") }
        if let typeIds, typeIds.count != batch.count {
            throw BertError.invalidInput(reason: "\(typeIds.count) token type sequences for \(batch.count) sequences")
        }
        for (i, sequence) in batch.enumerated() {
            if let problem = problem(ids: sequence, typeIds: typeIds?[i]) {
                throw BertError.invalidInput(reason: "sequence \(i) \(problem)")
            }
        }
        let ids = batch.flatMap { $0 }
        // RoBERTa's tokenizers pass the model no type ids: every token is type 0 there.
        let types = usesTokenTypes ? typeIds?.flatMap { $0 } ?? [Int32](repeating: 0, count: ids.count)
                                   : [Int32](repeating: 0, count: ids.count)
        return (ids, types, PackedSequences(lengths: batch.map(\.count)))
    }
}
