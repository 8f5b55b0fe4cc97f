import Foundation

/// What every architecture's encoder does, and all a head or a pipeline needs of it: a batch of
/// token-id sequences in, their last hidden states out (packed, no padding). `BertModel` (BERT,
/// DistilBERT, RoBERTa, XLM-R, MPNet), `MobileBertModel` and `RotaryEncoderModel` adopt it;
/// `loadEncoder` picks the one a converted folder needs, through its family (`ModelFamilies`).
/// An encoder is immutable after loading: one instance serves many threads at once.
public protocol EncoderModel: ConvertedModel, Sendable {
    /// Last-layer hidden states for a batch of token-id sequences, each framed by the tokenizer
    /// ([CLS] … [SEP], or <s> … </s>). Sequences may differ in length.
    func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?) throws -> EncoderOutput
    /// `encode` for a head that reads only some rows of each sequence (`reading[s]` for sequence
    /// s; nil: all). The output's other rows are unspecified, and reading one traps: an encoder
    /// may run its last layer after the keys and values for the rows read alone (`BertModel`
    /// does). Each row read is the same, bit for bit, as in a pass over every row.
    func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?, reading: [HeadRows]?) throws -> EncoderOutput
    /// The masked-LM head's vocabulary logits [m × V] for m hidden rows [m × H]; throws when the
    /// checkpoint has no masked-LM head. The head shares the encoder's word embeddings when its
    /// decoder is tied, so the encoder owns it.
    func maskedLMLogits(hiddenRows: [Float], count m: Int) throws -> [Float]
}

extension EncoderModel {
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]? = nil) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: nil)
    }

    /// Every row in every layer: what an encoder without a shorter last layer runs.
    public func encode(_ batch: [[Int32]], typeIds: [[Int32]]?, profile: StageProfile?, reading: [HeadRows]?) throws -> EncoderOutput {
        try encode(batch, typeIds: typeIds, profile: profile)
    }

    /// Vocabulary logits at the given (sequence, position) pairs of an encoded batch.
    public func maskedLMLogits(_ output: EncoderOutput, at positions: [(sequence: Int, position: Int)]) throws -> [[Float]] {
        guard config.heads.hasMaskedLMHead else { throw missingMaskedLMHead }
        guard !positions.isEmpty else { return [] }
        let h = output.hiddenSize
        var gathered = [Float](repeating: 0, count: positions.count * h)
        for (i, p) in positions.enumerated() {
            guard p.sequence >= 0, p.sequence < output.count, p.position >= 0, p.position < output.lengths[p.sequence] else {
                throw SwiftBERTError.invalidInput(reason: "position \(p) is outside the encoded batch")
            }
            output.withRow(sequence: p.sequence, position: p.position) { row in
                for c in 0..<h { gathered[i * h + c] = row[c] }
            }
        }
        let logits = try maskedLMLogits(hiddenRows: gathered, count: positions.count)
        let v = config.encoder.vocabSize
        return (0..<positions.count).map { Array(logits[$0 * v..<($0 + 1) * v]) }
    }

    /// Throws, naming the input as `name` ("input 3"), when one sequence cannot run through
    /// this model (empty, too long, an id outside the vocabulary, a token type it lacks): the
    /// same check `encode` makes over a whole batch. A caller that batches sequences of many
    /// requests checks each request's own with it first, so a bad one fails alone.
    public func validate(_ ids: [Int32], typeIds: [Int32]? = nil, name: String) throws {
        if let problem = config.encoder.problem(ids: ids, typeIds: typeIds) {
            throw SwiftBERTError.invalidInput(reason: "\(name) \(problem)")
        }
    }

    var missingMaskedLMHead: SwiftBERTError {
        .invalidInput(reason: "\(folder.lastPathComponent) has no masked-LM head (cls.predictions); use a *ForMaskedLM checkpoint such as splade-tiny")
    }
}

/// The encoder a converted folder holds, loaded by its family (`ModelFamilies`): a
/// `MobileBertModel` for MobileBERT, a `RotaryEncoderModel` for NomicBERT, GTE and ModernBERT,
/// else a `BertModel` (BERT, DistilBERT, RoBERTa, XLM-R, MPNet).
public func loadEncoder(folder: URL, threads: Int? = nil, precision: Precision = .fp32) throws -> any EncoderModel {
    guard FileManager.default.fileExists(atPath: folder.path) else {
        throw SwiftBERTError.fileNotFound(path: folder.path, hint: "Give a converted model folder (see `bert convert`).")
    }
    let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
    return try ModelFamilies.family(of: config.encoder).loadEncoder(folder: folder, threads: threads, precision: precision)
}

/// The rows of a sequence's last hidden states a head reads. A [CLS]-pooled embedder, a
/// classifier or a cross-encoder reads one row of the sequence, fill-mask its masks': the
/// encoder's last layer then needs every token's keys and values, but its queries, attention
/// output and feed-forward network only for those rows (`EncoderModel.encode(_:typeIds:profile:reading:)`).
public enum HeadRows: Sendable, Equatable {
    case all
    /// Row p, or row 0 where the sequence has p rows or fewer ([CLS] pooling after a prompt
    /// left out of the pooling).
    case position(Int)
    /// The sequence's last row (last-token pooling).
    case last
    /// The rows from the first to the last that hold this token id (the masks of fill-mask);
    /// none when no row does.
    case token(Int32)

    /// The rows of a sequence with these token ids.
    func rows(of ids: ArraySlice<Int32>) -> Range<Int> {
        let n = ids.count
        switch self {
        case .all: return 0..<n
        case let .position(p): return n == 0 ? 0..<0 : (p >= 0 && p < n ? p..<(p + 1) : 0..<1)
        case .last: return max(0, n - 1)..<n
        case let .token(id):
            guard let first = ids.firstIndex(of: id), let last = ids.lastIndex(of: id) else { return 0..<0 }
            return (first - ids.startIndex)..<(last - ids.startIndex + 1)
        }
    }
}

/// Last-layer hidden states of a batch, packed [T × H] without padding, with the token ids they
/// came from (heads such as fill-mask and sparse pooling read them).
public final class EncoderOutput: @unchecked Sendable {
    public let hiddenSize: Int
    public let lengths: [Int]
    /// The batch's token ids, packed as the rows are.
    public let ids: [Int32]
    let starts: [Int]
    /// The rows of each sequence that hold its states, when the encoder ran its last layer for
    /// those alone (`HeadRows`); nil: every row.
    let computedRows: [Range<Int>]?
    let storage: UnsafeMutablePointer<Float>

    init(owning storage: UnsafeMutablePointer<Float>, ids: [Int32], sequences: PackedSequences, hiddenSize: Int) {
        self.storage = storage
        self.ids = ids
        self.lengths = sequences.lengths
        self.starts = sequences.starts
        self.computedRows = sequences.rowsRead
        self.hiddenSize = hiddenSize
    }
    deinit { storage.deallocate() }

    /// Number of sequences.
    public var count: Int { lengths.count }

    /// Hidden states of sequence `i` as [length × H], row-major.
    public func hiddenStates(_ i: Int) -> [Float] {
        precondition(computedRows == nil, "the encoder ran its last layer for some rows alone (HeadRows): read those with a head")
        return Array(UnsafeBufferPointer(start: storage + starts[i] * hiddenSize, count: lengths[i] * hiddenSize))
    }

    /// Token ids of sequence `i`.
    public func tokenIds(_ i: Int) -> ArraySlice<Int32> { ids[starts[i]..<starts[i] + lengths[i]] }

    /// The sequences at `indices`, in that order, as an output of their own (a copy): what one
    /// request of a batch shared by several gets.
    public func selecting(_ indices: [Int]) -> EncoderOutput {
        if indices == Array(0..<count) { return self }
        var sequences = PackedSequences(lengths: indices.map { lengths[$0] })
        sequences.rowsRead = computedRows.map { rows in indices.map { rows[$0] } }
        let rows = UnsafeMutablePointer<Float>.allocate(capacity: max(1, sequences.tokenCount * hiddenSize))
        var ids: [Int32] = []
        ids.reserveCapacity(sequences.tokenCount)
        for (s, i) in indices.enumerated() {
            (rows + sequences.starts[s] * hiddenSize).update(from: storage + starts[i] * hiddenSize, count: lengths[i] * hiddenSize)
            ids += tokenIds(i)
        }
        return EncoderOutput(owning: rows, ids: ids, sequences: sequences, hiddenSize: hiddenSize)
    }

    func withRow<R>(sequence: Int, position: Int, _ body: (UnsafePointer<Float>) -> R) -> R {
        precondition(computedRows?[sequence].contains(position) ?? true, "row \(position) of sequence \(sequence) was not computed (HeadRows)")
        return body(storage + (starts[sequence] + position) * hiddenSize)
    }
}
