import SwiftBERTKernels

/// Where each sequence of a batch lies in the packed token matrix. Sequences are stored back to
/// back without padding, so no work is spent on pad tokens and padding cannot change a result.
struct PackedSequences {
    let lengths: [Int]
    let starts: [Int]
    /// The rows of each sequence a head reads, when not all (`HeadRows`): the last layer's
    /// queries and what follows them run for these alone.
    var rowsRead: [Range<Int>]? = nil
    var tokenCount: Int { (starts.last ?? 0) + (lengths.last ?? 0) }
    var longest: Int { lengths.max() ?? 0 }

    init(lengths: [Int]) {
        self.lengths = lengths
        var starts: [Int] = []
        var offset = 0
        for length in lengths { starts.append(offset); offset += length }
        self.starts = starts
    }

    /// Whether layer `index` of `count` runs for the rows read alone (after every token's keys
    /// and values): the last, when a head reads only some rows (`HeadRows`).
    func readsOnly(layer index: Int, of count: Int) -> Bool { index == count - 1 && rowsRead != nil }

    /// Moves the rows read (`rowsRead`) of each buffer [T × width] to its front, in order, and
    /// returns their count: what the rest of a last layer runs over after attention
    /// (`putBackRowsRead` returns them). A row's place is never after it, so none is overwritten
    /// before it moves.
    func gatherRowsRead(width h: Int, _ buffers: [UnsafeMutablePointer<Float>]) -> Int {
        var place = 0
        for (s, rows) in (rowsRead ?? []).enumerated() {
            for row in rows.lazy.map({ self.starts[s] + $0 }) {
                if row != place { for buffer in buffers { (buffer + place * h).update(from: buffer + row * h, count: h) } }
                place += 1
            }
        }
        return place
    }

    /// The rows `gatherRowsRead` moved to the front of `buffer`, back to their rows, last first
    /// (a row is never before its place).
    func putBackRowsRead(width h: Int, _ buffer: UnsafeMutablePointer<Float>) {
        guard let rowsRead else { return }
        var place = rowsRead.reduce(0) { $0 + $1.count }
        for (s, rows) in rowsRead.enumerated().reversed() {
            for row in rows.reversed().lazy.map({ self.starts[s] + $0 }) {
                place -= 1
                if row != place { (buffer + row * h).update(from: buffer + place * h, count: h) }
            }
        }
    }

    /// Consecutive runs of sequences of at most `tokens` tokens each (a longer sequence alone),
    /// as ranges of sequence indices covering them all.
    func chunks(tokens: Int) -> [Range<Int>] {
        var chunks: [Range<Int>] = [], first = 0, count = 0
        for (i, length) in lengths.enumerated() {
            if i > first && count + length > tokens {
                chunks.append(first..<i)
                (first, count) = (i, 0)
            }
            count += length
        }
        if first < lengths.count { chunks.append(first..<lengths.count) }
        return chunks
    }

    /// Tokens per thread in one chunk of a batch (`encoderChunks`). MiniLM on the Xeon of
    /// 2026-11-26, 1 thread, tokens per second at 1/2/4/32 sequences of 128 tokens: INT8 14,528 /
    /// 15,211 / 15,168 / 12,346, FP32 5,370 / 5,978 / 6,198 / 6,003, BF16 4,780 / 5,005 / 5,021 /
    /// 4,630: from about 1,000 tokens the activations no longer stay in cache between ops. It is
    /// also where Linear splits rows between threads (`Linear.rowSplitMinimum`).
    static let chunkTokensPerThread = Linear.rowSplitMinimum

    /// How every encoder runs a long batch: through all its layers a chunk of whole sequences at
    /// a time (at most `chunkTokensPerThread` tokens a thread, a longer sequence alone), so each
    /// chunk's activations stay in cache from one op to the next. Each chunk's own layout, and
    /// its tokens' rows in the packed batch.
    func encoderChunks(threads: Int) -> [(sequences: PackedSequences, tokens: Range<Int>)] {
        chunks(tokens: Self.chunkTokensPerThread * max(1, threads)).map { chunk in
            var part = PackedSequences(lengths: Array(lengths[chunk]))  // a chunk holds a sequence at least
            part.rowsRead = rowsRead.map { Array($0[chunk]) }
            return (part, starts[chunk.lowerBound]..<(starts[chunk.lowerBound] + part.tokenCount))
        }
    }

    /// An encoder's pass over this packed batch, chunk by chunk (`encoderChunks`): `forward`
    /// gets each chunk's layout, token ids and type ids, and the rows of the hidden states
    /// [T × hiddenSize] it fills.
    func encodeInChunks(ids: [Int32], typeIds: [Int32], hiddenSize h: Int, threads: Int,
                        _ forward: (_ chunk: PackedSequences, _ ids: [Int32], _ typeIds: [Int32], _ hidden: UnsafeMutablePointer<Float>) -> Void) -> EncoderOutput {
        let hidden = UnsafeMutablePointer<Float>.allocate(capacity: tokenCount * h)
        for (part, tokens) in encoderChunks(threads: threads) {
            forward(part, Array(ids[tokens]), Array(typeIds[tokens]), hidden + tokens.lowerBound * h)
        }
        return EncoderOutput(owning: hidden, ids: ids, sequences: self, hiddenSize: h)
    }
}

/// What every module's forward needs besides its input, made once per forward pass: the batch
/// layout, the threads, the optional profile, and scratch buffers sized for the batch.
final class ForwardContext {
    let sequences: PackedSequences
    let threads: Int
    let profile: StageProfile?
    /// INT8 activations of the current Linear layer, when the precision quantises activations
    /// (nil: FP32, or INT8 weights with float activations).
    let int8Activations: Int8Activations?
    /// When set, every Linear layer records its input's range here (calibration).
    var activationRanges: ActivationRanges?
    /// The arithmetic of attention's products: the precision's (SwiftBERTKernels/Attention/).
    let attention: AttentionPrecision
    /// BF16 activations of the current Linear layer, made on the first BF16 Linear.
    private(set) lazy var bf16Activations = BF16Activations()
    /// Each packed token's position within its sequence (rotary encoders), made on first use:
    /// once per forward pass, for every layer.
    private(set) lazy var positions: [Int] = {
        var positions = [Int](repeating: 0, count: sequences.tokenCount)
        for (s, start) in sequences.starts.enumerated() { for p in 0..<sequences.lengths[s] { positions[start + p] = p } }
        return positions
    }()
    /// [T × wideColumns]: the fused QKV projections, then the feed-forward activations.
    let wide: UnsafeMutablePointer<Float>
    /// [T × H]: attention output before its projection.
    let attended: UnsafeMutablePointer<Float>
    /// [T × H]: a projection's output before the residual.
    let projected: UnsafeMutablePointer<Float>
    /// [T × F]: a gated feed-forward network's product act(gate) ⊙ up (rotary encoders only).
    let gated: UnsafeMutablePointer<Float>?
    /// Per worker, the fused attention's blocks for the longest sequence (SwiftBERTKernels/Attention/).
    let attentionScratch: [AttentionScratch]
    /// A bias every layer adds to its attention scores (MPNet's relative positions), as
    /// transformers passes `position_bias` to each layer.
    let attentionBias: RelativeAttentionBias?

    /// `hidden`, `wideColumns` and `headDim` size the scratch (0 for a context that only runs Linear layers).
    init(sequences: PackedSequences, threads: Int, quantizesActivations: Bool, attention: AttentionPrecision = .fp32,
         profile: StageProfile? = nil, hidden: Int = 0, wideColumns: Int = 0, headDim: Int = 0,
         attentionBias: RelativeAttentionBias? = nil, gatedColumns: Int = 0) {
        (self.sequences, self.threads, self.profile, self.attention) = (sequences, threads, profile, attention)
        self.attentionBias = attentionBias
        let t = sequences.tokenCount
        int8Activations = quantizesActivations ? Int8Activations(m: t, k: max(hidden, wideColumns)) : nil
        wide = .allocate(capacity: t * wideColumns)
        attended = .allocate(capacity: t * hidden)
        projected = .allocate(capacity: t * hidden)
        gated = gatedColumns > 0 ? .allocate(capacity: t * gatedColumns) : nil
        attentionScratch = headDim == 0 ? [] : (0..<threads).map { _ in
            AttentionScratch(maxLength: sequences.longest, headDim: headDim)
        }
    }

    // Three allocations, not one `FloatBuffers`: a single block of several MB was mapped afresh
    // on every pass (MiniLM 1x512: ~1,000 more page faults a pass, 2 % slower).
    deinit {
        wide.deallocate(); attended.deallocate(); projected.deallocate(); gated?.deallocate()
    }

    /// Runs body, timing it as `stage` when a profile is attached.
    @inline(__always)
    func measure<R>(_ stage: StageProfile.Stage, _ body: () throws -> R) rethrows -> R {
        guard let profile else { return try body() }
        return try profile.measure(stage, body)
    }
}
