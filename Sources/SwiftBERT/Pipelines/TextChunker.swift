import Foundation

/// One window of a long text, cut by `TextChunker`.
public struct TextChunk: Sendable, Equatable {
    /// The text it comes from: its position in the list of texts.
    public let textIndex: Int
    /// Its position among that text's chunks, from 0.
    public let chunkIndex: Int
    /// Code-point (Unicode scalar) offsets into the text, as Python `str` indices:
    /// `text[start:end]` in Python is `self.text`.
    public let start: Int
    public let end: Int
    /// The chunk's own text, embedded as any other text.
    public let text: String
    /// What the model sees for this chunk: [CLS], the prompt's tokens, the chunk's, [SEP]
    /// (the tokenizer's encoding of prompt + `text`); never more than the chunk size.
    public let ids: [Int32]
    /// The tokens of the whole text's encoding (without [CLS]/[SEP]) this chunk holds;
    /// `text` on its own tokenises to exactly these ids, except in a word split for being
    /// longer than a chunk.
    public let tokenRange: Range<Int>

    /// Tokens the model sees, [CLS], [SEP] and the prompt included.
    public var tokenCount: Int { ids.count }
}

/// How chunk vectors become one vector per text.
public enum ChunkPooling: String, Sendable, CaseIterable {
    /// A vector per chunk.
    case none
    /// The unweighted mean of a text's chunk vectors, L2-normalised when the chunk vectors are.
    case mean
}

/// Cuts texts into windows of at most `maxTokens` tokens, as the model sees them ([CLS], [SEP]
/// and the prompt count), between words, so that each window's text tokenised on its own gives
/// the ids of its span of the whole text: its vector is the plain embedding of its text.
///
/// Consecutive chunks share the most whole words whose tokens number at most `overlap`: the
/// next chunk starts at the first word start, after the previous chunk's start, that leaves
/// ≤ `overlap` tokens shared (0 when the last word alone is longer). If from there no whole-word
/// window gets past the previous chunk's end (the next word is too long), the next chunk starts
/// at that end, sharing nothing. A word longer than a chunk is split at the chunk size, without
/// overlap inside it; the chunk holding its last piece ends at a word end as any other.
public struct TextChunker: Sendable {
    public let tokenizer: Tokenizer
    public let maxTokens: Int
    public let overlap: Int
    /// Put before each chunk's text, as `SentenceEmbedder` puts it; nil for none.
    public let prompt: String?
    /// Tokens each chunk spends besides its text: [CLS], [SEP] and the prompt.
    public let framing: Int

    /// Refuses (`SwiftBERTError.invalidInput`) a chunk size over `modelLimit` (the tokens the model
    /// takes per input), one with no room for text, and an overlap not smaller than the text
    /// a chunk can hold.
    public init(tokenizer: Tokenizer, maxTokens: Int, overlap: Int = 0, prompt: String? = nil, modelLimit: Int) throws {
        framing = tokenizer.encode(prompt ?? "").count
        guard maxTokens <= modelLimit else {
            throw SwiftBERTError.invalidInput(reason: "chunk size \(maxTokens) is over the model's limit of \(modelLimit) tokens per input; use \(modelLimit) or less")
        }
        guard maxTokens > framing else {
            throw SwiftBERTError.invalidInput(reason: "chunk size \(maxTokens) leaves no room for text: [CLS], [SEP]\(prompt == nil ? "" : " and the prompt") take \(framing) tokens; use at least \(framing + 1)")
        }
        guard overlap >= 0, overlap < maxTokens - framing else {
            throw SwiftBERTError.invalidInput(reason: "overlap \(overlap) must be at least 0 and smaller than the \(maxTokens - framing) text tokens a chunk of \(maxTokens) holds")
        }
        (self.tokenizer, self.maxTokens, self.overlap, self.prompt) = (tokenizer, maxTokens, overlap, prompt)
    }

    /// Chunks of every text, text by text, in order.
    public func chunks(of texts: [String]) throws -> [TextChunk] {
        var chunks: [TextChunk] = []
        for (index, text) in texts.enumerated() { chunks += try self.chunks(of: text, textIndex: index) }
        return chunks
    }

    /// The chunks of one text, in order; a text with no tokens is one chunk.
    public func chunks(of text: String, textIndex: Int = 0) throws -> [TextChunk] {
        let scalars = Array(text.unicodeScalars)
        let whole = tokenizer.encode(text, addSpecialTokens: false)
        let count = whole.ids.count
        guard count > 0 else {
            return [TextChunk(textIndex: textIndex, chunkIndex: 0, start: 0, end: scalars.count, text: text,
                              ids: framedIds(text), tokenRange: 0..<0)]
        }
        let document = Document(whole: whole, scalars: scalars, boundaries: wordBoundaries(whole), textIndex: textIndex)
        let isBoundary = Set(document.boundaries)
        var chunks: [TextChunk] = []
        var start = 0, previousEnd = 0
        while start < count {
            let chunk = try cut(document, from: start, past: previousEnd, chunkIndex: chunks.count)
            chunks.append(chunk)
            previousEnd = chunk.tokenRange.upperBound
            guard previousEnd < count else { break }
            // A word split in the middle goes on where it was cut; else back over whole words
            // while at most `overlap` tokens are shared.
            guard isBoundary.contains(previousEnd) else { start = previousEnd; continue }
            let boundaries = document.boundaries
            start = boundaries[Self.firstIndex(in: boundaries, atLeast: max(chunk.tokenRange.lowerBound + 1, previousEnd - overlap))]
        }
        return chunks
    }

    /// A text being cut: its encoding (no [CLS]/[SEP]), code points and word boundaries.
    private struct Document {
        let whole: Encoding
        let scalars: [Unicode.Scalar]
        let boundaries: [Int]
        let textIndex: Int
    }

    /// The longest chunk from token `start` that ends past token `previousEnd`: the farthest word
    /// end within the chunk size whose text gives back its ids (cut tight, else with the
    /// whitespace before it, which byte-level BPE reads as part of the word). When the overlap
    /// leaves no room to get past the previous chunk in whole words, the chunk starts at
    /// `previousEnd` instead; when no word end fits at all, a word longer than a chunk is cut at
    /// the last token whose text still fits.
    private func cut(_ document: Document, from start: Int, past previousEnd: Int, chunkIndex: Int) throws -> TextChunk {
        let whole = document.whole
        let reach = min(start + maxTokens - framing, whole.ids.count)
        let tight = whole.offsets[start].lowerBound
        let before = start == 0 ? 0 : whole.offsets[start - 1].upperBound
        let starts = before < tight ? [tight, before] : [tight]
        func chunk(_ end: Int, _ from: Int, _ text: String, _ ids: [Int32]) -> TextChunk {
            TextChunk(textIndex: document.textIndex, chunkIndex: chunkIndex, start: from, end: whole.offsets[end - 1].upperBound,
                      text: text, ids: ids, tokenRange: start..<end)
        }
        // The rest of a split word cannot tokenise as in the whole text; the words after it must.
        let startsWord = document.boundaries[Self.firstIndex(in: document.boundaries, atLeast: start)] == start
        let farthest = Self.firstIndex(in: document.boundaries, atLeast: reach + 1)
        for end in document.boundaries[..<farthest].reversed() {
            guard end > max(start, previousEnd) else { break }
            let upper = whole.offsets[end - 1].upperBound
            for from in starts where from <= upper {
                let text = Self.slice(document.scalars, from..<upper)
                let own = tokenizer.encode(text, addSpecialTokens: false).ids
                guard startsWord ? own.elementsEqual(whole.ids[start..<end]) : own.count <= end - start else { continue }
                let ids = framedIds(text)
                if ids.count <= maxTokens { return chunk(end, from, text, ids) }
            }
        }
        if start < previousEnd { return try cut(document, from: previousEnd, past: previousEnd, chunkIndex: chunkIndex) }
        for end in stride(from: reach, to: start, by: -1) {
            let upper = max(whole.offsets[end - 1].upperBound, tight)
            let text = Self.slice(document.scalars, tight..<upper)
            let ids = framedIds(text)
            if ids.count <= maxTokens { return chunk(end, tight, text, ids) }
        }
        throw SwiftBERTError.invalidInput(reason: "text \(document.textIndex): token \(start) alone, with [CLS], [SEP] and the prompt, is over the chunk size of \(maxTokens); use a larger chunk size")
    }

    private func framedIds(_ text: String) -> [Int32] {
        tokenizer.encode((prompt ?? "") + text).ids
    }

    /// Token positions where a word starts, with 0 and the token count: a cut there keeps every
    /// word's pieces together. A word starts after whitespace, at a word-start mark (Ġ, ▁) for
    /// tokenizers that mark them, or (WordPiece) at a piece that is not a continuation (##).
    func wordBoundaries(_ encoding: Encoding) -> [Int] {
        let offsets = encoding.offsets, tokens = encoding.tokens
        var boundaries = [0]
        for i in tokens.indices.dropFirst() where offsets[i].lowerBound >= offsets[i - 1].upperBound {
            let afterSpace = offsets[i].lowerBound > offsets[i - 1].upperBound
            let startsWord = tokenizer.marksWordStarts ? tokens[i].hasPrefix("Ġ") || tokens[i].hasPrefix("▁") : !tokens[i].hasPrefix("##")
            if afterSpace || startsWord { boundaries.append(i) }
        }
        if !tokens.isEmpty { boundaries.append(tokens.count) }
        return boundaries
    }

    /// The index of the first of the ascending `values` that is ≥ `value` (their count if none).
    static func firstIndex(in values: [Int], atLeast value: Int) -> Int {
        var low = 0, high = values.count
        while low < high {
            let middle = (low + high) / 2
            if values[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The code points `range` of a text, as a String.
    static func slice(_ scalars: [Unicode.Scalar], _ range: Range<Int>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[range])
        return String(view)
    }

    /// One vector per text: the unweighted mean of its chunks' vectors (`vectors[i]` is
    /// `chunks[i]`'s), L2-normalised when `normalize`.
    public static func meanVectors(_ vectors: [[Float]], of chunks: [TextChunk], textCount: Int, normalize: Bool) -> [[Float]] {
        var sums = [[Float]](repeating: [], count: textCount)
        var counts = [Int](repeating: 0, count: textCount)
        for (chunk, vector) in zip(chunks, vectors) {
            let i = chunk.textIndex
            if sums[i].isEmpty { sums[i] = vector } else { for d in vector.indices { sums[i][d] += vector[d] } }
            counts[i] += 1
        }
        return zip(sums, counts).map { sum, count in
            var mean = sum.map { $0 / Float(max(count, 1)) }
            if normalize { l2Normalize(&mean) }
            return mean
        }
    }
}

extension SentenceEmbedder {
    /// Texts cut into chunks and every chunk embedded, the chunks of all texts batched together.
    public struct ChunkEmbeddings: Sendable {
        /// Every text's chunks, text by text, in order.
        public let chunks: [TextChunk]
        /// `vectors[i]` is the embedding of `chunks[i].text`, as `embed` gives it.
        public let vectors: [[Float]]
    }

    /// The chunker for `options`: its prompt, and `maxTokens` checked against the options' max
    /// length (the model's max_seq_length by default).
    public func chunker(maxTokens: Int, overlap: Int, options: Options = Options()) throws -> TextChunker {
        try TextChunker(tokenizer: tokenizer, maxTokens: maxTokens, overlap: overlap, prompt: prompt(for: options),
                        modelLimit: maxLength(options.maxLength))
    }

    /// Every text cut by `chunker(maxTokens:overlap:options:)`, each chunk embedded.
    public func embedChunks(_ texts: [String], maxTokens: Int, overlap: Int = 0, options: Options = Options()) throws -> ChunkEmbeddings {
        let chunks = try chunker(maxTokens: maxTokens, overlap: overlap, options: options).chunks(of: texts)
        var whole = options
        whole.truncates = false  // every chunk fits: a cut one would be a bug, so it throws
        return ChunkEmbeddings(chunks: chunks, vectors: try embed(chunks.map(\.text), options: whole).vectors)
    }

    /// One vector per text, the mean of its chunks' vectors (`ChunkPooling.mean`), normalised
    /// as the options' head normalises.
    public func embedChunkMean(_ texts: [String], maxTokens: Int, overlap: Int = 0, options: Options = Options()) throws -> [[Float]] {
        let embedded = try embedChunks(texts, maxTokens: maxTokens, overlap: overlap, options: options)
        return TextChunker.meanVectors(embedded.vectors, of: embedded.chunks, textCount: texts.count,
                                       normalize: head(for: options).normalize)
    }
}
