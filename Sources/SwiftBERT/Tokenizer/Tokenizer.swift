import Foundation

/// The tokenizer of BERT-family encoders, driven by tokenizer.json's own pipeline (BERT's
/// WordPiece, XLM-R's SentencePiece Unigram, RoBERTa's byte-level BPE), giving the same ids and
/// offsets as Hugging Face `tokenizers`. Immutable after init, so one instance can serve many threads.
public final class Tokenizer: @unchecked Sendable {
    /// The token that opens a framed text ([CLS], <s>); -1 when the post-processor puts none there.
    public let clsId: Int32
    /// The token that closes a framed text ([SEP], </s>, a decoder's EOS); -1 when there is none.
    public let sepId: Int32
    public let padId: Int32
    public let unkId: Int32
    /// -1 when the vocabulary has no [MASK].
    public let maskId: Int32
    /// One more than the largest id: the number of rows a model's embedding table needs.
    public let vocabularySize: Int
    /// tokenizer.json's truncation max_length, for information: `encode` truncates only
    /// to the `maxLength` it is given.
    public let configuredMaxLength: Int?

    private let model: TokenModel

    /// Whether word-initial tokens carry a mark (Ġ in byte-level BPE, ▁ in Unigram), as RoBERTa's,
    /// XLM-R's and ModernBERT's do; false for WordPiece, which marks continuations (##) instead.
    public var marksWordStarts: Bool {
        if case .wordPiece = model { return false }
        return true
    }
    private let normalizer: TextNormalizer?
    private let preTokenizer: PreTokenizer
    /// RobertaProcessing's trim_offsets: nil when offsets are not trimmed.
    private let trimsByteLevelOffsets: ByteLevelOffsetTrim?
    /// The added tokens matched in the text: all of them, and (HF's split_special_tokens) only
    /// those that are not special, for text that must never hold a control token.
    private let allAddedTokens: AddedTokenMatchers
    private let plainAddedTokens: AddedTokenMatchers
    private let addedTokensById: [Int32: AddedToken]
    /// What decode writes for an added token: its normalized form if it is matched normalized.
    private let addedTokenDecodings: [Int32: String]
    private let specialTokenContents: Set<ExactString>
    private let idsByToken: [ExactString: Int32]
    /// Model vocabulary by id ("" where no token has that id).
    private let tokenStrings: [String]
    private let template: PostProcessingTemplate
    private let decoder: TokenDecoder?
    private let truncatesFromLeft: Bool
    private let padTypeId: Int32
    private let padToken: String
    private let padsLeft: Bool
    /// A long text may be tokenised a chunk at a time, cut before plain spaces, when it has to
    /// stop at a truncation point: every stage gives the same tokens on the chunks as on the whole.
    private let chunksSafely: Bool

    // MARK: - Loading

    /// tokenizer.json if the folder has one, else vocab.txt.
    public static func load(folder: URL) throws -> Tokenizer {
        let json = folder.appendingPathComponent("tokenizer.json")
        if FileManager.default.fileExists(atPath: json.path) { return try Tokenizer(tokenizerJSON: json) }
        let vocab = folder.appendingPathComponent("vocab.txt")
        if FileManager.default.fileExists(atPath: vocab.path) {
            return try Tokenizer(vocabTXT: vocab, lowercase: Self.doLowerCase(folder: folder) ?? true)
        }
        throw SwiftBERTError.fileNotFound(path: folder.path,
                                     hint: "A tokenizer folder needs tokenizer.json or vocab.txt (for the default models run `make setup`, or `bert pull NAME`).")
    }

    public convenience init(tokenizerJSON url: URL) throws {
        let data = try Self.read(url)
        try self.init(configuration: TokenizerConfiguration(tokenizerJSON: data, path: url.path), path: url.path)
    }

    /// A vocab.txt with Tokenizer's defaults; `lowercase` also decides accent stripping.
    public convenience init(vocabTXT url: URL, lowercase: Bool = true) throws {
        let data = try Self.read(url)
        try self.init(configuration: TokenizerConfiguration(vocabTXT: data, path: url.path, lowercase: lowercase),
                      path: url.path)
    }

    init(configuration c: TokenizerConfiguration, path: String) throws {
        func fail(_ reason: String) -> SwiftBERTError { .invalidTokenizer(path: path, reason: reason) }
        guard !c.vocabulary.isEmpty else {
            throw fail("the vocabulary is empty; give the tokenizer.json or vocab.txt the model was trained with")
        }
        let unknownId = c.vocabulary[ExactString(c.unknownToken)]
        if case .wordPiece = c.model, unknownId == nil {
            throw fail("the unknown token \(printable(c.unknownToken)) is not in the vocabulary; give the tokenizer.json or vocab.txt the model was trained with")
        }
        let maxId = max(c.vocabulary.values.max() ?? 0, c.addedTokens.map(\.id).max() ?? 0)
        guard maxId < 16 * (c.vocabulary.count + c.addedTokens.count) + 1024 else {
            throw fail("ids are too sparse (largest \(maxId) for \(c.vocabulary.count) tokens); the file is damaged: give the model's own tokenizer")
        }
        var strings = [String](repeating: "", count: Int(maxId) + 1)
        for (token, id) in c.vocabulary {
            // Two tokens with one id: HF keeps either (hash order); keep the first in code-point
            // order, so decode is the same from run to run.
            let slot = Int(id)
            if strings[slot].isEmpty || token.string.unicodeScalars.lexicographicallyPrecedes(strings[slot].unicodeScalars) {
                strings[slot] = token.string
            }
        }
        tokenStrings = strings
        vocabularySize = Int(maxId) + 1

        var ids = c.vocabulary
        for token in c.addedTokens { ids[ExactString(token.content)] = token.id }
        idsByToken = ids
        addedTokensById = Dictionary(c.addedTokens.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        addedTokenDecodings = addedTokensById.mapValues { token in
            guard token.normalized else { return token.content }
            return Self.string(Self.normalize(token.content, with: c.normalizer))
        }
        specialTokenContents = Set(c.addedTokens.filter(\.special).map { ExactString($0.content) })

        let tooLarge = fail("the vocabulary is too large (\(c.vocabulary.count) tokens); SwiftBERT reads vocabularies of up to about a million tokens")
        switch c.model {
        case .wordPiece:
            guard let wordPiece = WordPiece(vocabulary: c.vocabulary, unknownId: unknownId ?? 0,
                                            continuationPrefix: c.continuationPrefix,
                                            maxInputCharsPerWord: c.maxInputCharsPerWord) else { throw tooLarge }
            model = .wordPiece(wordPiece)
        case let .unigram(pieces, unknownId, byteFallback):
            guard let unigram = Unigram(pieces: pieces, unknownId: unknownId, byteFallback: byteFallback) else { throw tooLarge }
            model = .unigram(unigram)
        case let .bpe(merges, unknownToken, fuseUnknown, byteFallback, ignoreMerges):
            do {
                model = .bpe(try BPE(vocabulary: c.vocabulary, merges: merges, unknownToken: unknownToken,
                                     fuseUnknown: fuseUnknown, byteFallback: byteFallback, ignoreMerges: ignoreMerges))
            } catch let error as BPE.MergeError {
                throw fail("\(error.reason); the file is damaged: give the model's own tokenizer.json")
            }
        }
        normalizer = c.normalizer
        preTokenizer = c.preTokenizer
        trimsByteLevelOffsets = c.trimsByteLevelOffsets
        allAddedTokens = AddedTokenMatchers(c.addedTokens, normalizer: c.normalizer)
        plainAddedTokens = AddedTokenMatchers(c.addedTokens.filter { !$0.special }, normalizer: c.normalizer)
        template = c.template
        decoder = c.decoder
        truncatesFromLeft = c.truncationFromLeft
        configuredMaxLength = c.maxLength

        // Framing comes from the post-processor alone: a decoder's tokenizer (Qwen3's, Gemma's)
        // appends an EOS, or nothing, and has no [CLS].
        let framing = c.template.specialIds
        clsId = ids["[CLS]"] ?? (framing.count >= 2 ? framing.first : nil) ?? ids["<s>"] ?? -1
        sepId = ids["[SEP]"] ?? framing.last ?? ids["</s>"] ?? -1
        unkId = unknownId ?? ids["<unk>"] ?? -1
        maskId = ids["[MASK]"] ?? ids["<mask>"] ?? -1
        padId = c.padId ?? ids[ExactString(c.padToken ?? "[PAD]")] ?? ids["<pad>"] ?? 0
        padTypeId = c.padTypeId
        padToken = c.padToken ?? (padId >= 0 && Int(padId) < strings.count ? strings[Int(padId)] : "[PAD]")
        padsLeft = c.padsLeft
        chunksSafely = c.preTokenizer.splitsAtPlainSpace
            && (c.normalizer.map { normalizer in
                guard case let .steps(steps) = normalizer else { return true }
                return steps.allSatisfy(\.isChunkSafe)
            } ?? true)
            && c.addedTokens.allSatisfy { token in
                !token.rstrip && !token.content.unicodeScalars.contains(" ")
                    && !(token.normalized && Self.normalize(token.content, with: c.normalizer).contains(0x20))
            }
        UnicodeData.prepare()
    }

    // MARK: - Encoding

    /// Tokenizes `text` (and `pair`, with type id 1), frames it with [CLS]/[SEP] unless
    /// `addSpecialTokens` is false, and truncates it to `maxLength` tokens in all (specials
    /// included, longest_first for pairs). nil: no truncation; like HF, a `maxLength` smaller
    /// than the number of special tokens (2 for one text, 3 for a pair) truncates nothing.
    /// `truncatesLeft` keeps the end of the text instead of its start (nil: as tokenizer.json says).
    /// `keepingStart`: the first that many Unicode scalars of `text` (a prompt put before it) are
    /// never cut from the left: its tokens stay, and the cut starts after them.
    public func encode(_ text: String, pair: String? = nil, maxLength: Int? = nil, addSpecialTokens: Bool = true,
                       truncatesLeft: Bool? = nil, keepingStart: Int = 0) -> Encoding {
        encode(text, pair: pair, maxLength: maxLength, addSpecialTokens: addSpecialTokens, truncatesLeft: truncatesLeft,
               keepingStart: keepingStart, stopsEarly: true)
    }

    /// `stopsEarly`: one text cut on the right stops tokenising one token past what fits, so a
    /// huge text costs what its kept start costs; the result is the same as without (tests compare).
    func encode(_ text: String, pair: String? = nil, maxLength: Int? = nil, addSpecialTokens: Bool = true,
                truncatesLeft: Bool? = nil, keepingStart: Int = 0, stopsEarly: Bool, chunkLength: Int = 1 << 13) -> Encoding {
        let specials = addSpecialTokens ? template.specialTokenCount(isPair: pair != nil) : 0
        let fromLeft = truncatesLeft ?? truncatesFromLeft
        var limit = Int.max
        if stopsEarly, pair == nil, !fromLeft, let maxLength, maxLength >= specials {
            limit = maxLength - specials + 1  // one more than fits: enough to know it was truncated
        }
        var first = tokens(of: text, matching: allAddedTokens, limit: limit, chunkLength: chunkLength)
        var second = pair.map(tokens(of:))
        var truncated = false
        // As HF: a maxLength with no room for the special tokens truncates nothing.
        if let maxLength, maxLength >= specials {
            // The tokens wholly inside the kept start (a token across its end is the text's).
            let kept = keepingStart > 0 && fromLeft ? first.offsets.prefix { $0.upperBound <= keepingStart }.count : 0
            truncated = truncateLongestFirst(&first, &second, maxLength: maxLength - specials, fromLeft: fromLeft, keepingFirst: kept)
        }
        if let trim = trimsByteLevelOffsets {
            trimByteLevelOffsets(&first, addPrefixSpace: trim.addPrefixSpace)
            if second != nil { trimByteLevelOffsets(&second!, addPrefixSpace: trim.addPrefixSpace) }
        }
        return frame(first, second, addSpecialTokens: addSpecialTokens, truncated: truncated)
    }

    /// Word-piece ids framed as one text is: `[CLS] ids [SEP]` for BERT, `ids <|endoftext|>` for
    /// Qwen3, as the post-processor says. No truncation.
    public func framed(_ ids: [Int32]) -> [Int32] {
        template.single.flatMap { piece -> [Int32] in
            switch piece {
            case .sequence: ids
            case let .special(specialIds, _, _): specialIds
            }
        }
    }

    /// How many ids `framed` adds to one text.
    public var framingCount: Int { template.specialTokenCount(isPair: false) }

    /// Encodes each text, then pads all to the longest with [PAD] (attention mask 0).
    public func encodeBatch(_ texts: [String], maxLength: Int? = nil) -> [Encoding] {
        var encodings = texts.map { encode($0, maxLength: maxLength) }
        let longest = encodings.map(\.count).max() ?? 0
        for i in encodings.indices where encodings[i].count < longest {
            pad(&encodings[i], to: longest)
        }
        return encodings
    }

    /// The ids of `text` read as plain text, without framing: special tokens written in it
    /// ("[MASK]", "<mask>", "[CLS]", "<s>") are tokenized as any other text, never matched as
    /// control tokens (HF's split_special_tokens). For text a user typed.
    func plainTextIds(_ text: String) -> [Int32] {
        tokens(of: text, matching: plainAddedTokens).ids
    }

    /// The word pieces of `text`, without [CLS]/[SEP] (added tokens written in the text stay).
    public func tokenize(_ text: String) -> [String] {
        tokens(of: text).tokens
    }

    public func id(of token: String) -> Int32? { idsByToken[ExactString(token)] }

    public func token(of id: Int32) -> String? {
        if let added = addedTokensById[id] { return added.content }
        guard id >= 0, Int(id) < tokenStrings.count, !tokenStrings[Int(id)].isEmpty else { return nil }
        return tokenStrings[Int(id)]
    }

    /// Text back from ids, as HF's decode: unknown ids and (by default) special tokens are
    /// skipped, "##" pieces are joined, spaces before punctuation are cleaned up.
    /// Tokens joined back into text by the tokenizer's decoder (HF's convert_tokens_to_string).
    public func convertTokensToString(_ tokens: [String]) -> String {
        decoder?.decode(tokens) ?? tokens.joined(separator: " ")
    }

    public func decode(_ ids: [Int32], skipSpecialTokens: Bool = true) -> String {
        let tokens = ids.compactMap { addedTokenDecodings[$0] ?? token(of: $0) }
            .filter { !skipSpecialTokens || !specialTokenContents.contains(ExactString($0)) }
        return decoder?.decode(tokens) ?? tokens.joined(separator: " ")
    }

    // MARK: - Pipeline

    /// Added tokens, then normalizer, pre-tokenizer and WordPiece: HF's pipeline for one text.
    private func tokens(of text: String) -> TokenSink { tokens(of: text, matching: allAddedTokens) }

    /// Stops once `limit` tokens are made (their order and values as without a limit). With a
    /// limit, a text that chunks safely is read, normalised and split `chunkLength` scalars at
    /// a time, each chunk ending before a space between ASCII letters or digits, so a huge text
    /// costs only the chunks before the truncation point.
    private func tokens(of text: String, matching added: AddedTokenMatchers, limit: Int = .max,
                        chunkLength: Int = 1 << 13) -> TokenSink {
        let chunks = limit < .max && chunksSafely
        // The text's scalars, converted as far as tokenising has got (all at once without chunks).
        var input: [UInt32] = []
        var rest = text.unicodeScalars.makeIterator()
        var complete = false
        func fill(to count: Int) {
            while !complete && input.count < count {
                if let scalar = rest.next() { input.append(scalar.value) } else { complete = true }
            }
        }
        func plain(_ value: UInt32) -> Bool {
            (0x30...0x39).contains(value) || (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value)
        }
        /// The first space at or after `start + chunkLength` with an ASCII letter or digit on
        /// both sides (the end of the text when there is none).
        func chunkEnd(from start: Int) -> Int {
            var i = max(start + chunkLength, start + 1)
            while true {
                fill(to: i + 2)
                guard i + 1 < input.count else { return input.count }
                if input[i] == 0x20 && plain(input[i - 1]) && plain(input[i + 1]) { return i }
                i += 1
            }
        }
        if !chunks {
            input.reserveCapacity(text.utf8.count)
            fill(to: .max)
        }
        var sink = TokenSink(tokenStrings: tokenStrings, capacity: min(text.utf8.count / 3 + 4, limit))
        var normalized = NormalizedText()
        var scratch = NormalizerScratch()
        var pieces: [TextPiece] = []
        var subPieces: [TextPiece] = []
        var wordScratch = PreTokenizerScratch()
        var segmentStart = 0
        // The last piece of the previous chunk was text running into this chunk.
        var continuesText = false
        while sink.count < limit {
            fill(to: segmentStart + 1)
            guard segmentStart < input.count else { break }
            let segmentEnd = chunks ? chunkEnd(from: segmentStart) : input.count
            let endsText = complete && segmentEnd == input.count
            input.withUnsafeBufferPointer { input in
                pieces.removeAll(keepingCapacity: true)
                added.raw.split(input, segmentStart..<segmentEnd, into: &pieces)
                for piece in pieces where sink.count < limit {
                    if let id = piece.addedTokenId {
                        sink.append(id, token: Self.string(input, piece.range), piece.range)
                        continue
                    }
                    normalized.removeAll()
                    if case let .bert(bert)? = normalizer {
                        bert.normalize(input, piece.range, into: &normalized, scratch: &scratch)
                    } else {
                        for i in piece.range { normalized.append(input[i], SourceSpan(start: i, end: i + 1)) }
                        if case let .steps(steps)? = normalizer {
                            // A piece cut by a chunk is stripped and prepended only at its true ends.
                            let edges = NormalizerStep.PieceEdges(
                                start: !(continuesText && piece.range.lowerBound == segmentStart),
                                end: piece.range.upperBound != segmentEnd || endsText)
                            for step in steps { step.apply(&normalized, pieceStart: piece.range.lowerBound, edges: edges) }
                        }
                    }
                    appendTokens(of: normalized, matching: added.normalized, into: &sink, subPieces: &subPieces,
                                 words: &wordScratch, limit: limit)
                }
            }
            continuesText = pieces.last.map { $0.addedTokenId == nil && $0.range.upperBound == segmentEnd } ?? false
            segmentStart = segmentEnd
        }
        return sink
    }

    /// Normalized added tokens, then words, then word pieces.
    private func appendTokens(of text: NormalizedText, matching normalizedMatcher: AddedTokenMatcher, into sink: inout TokenSink,
                              subPieces: inout [TextPiece], words: inout PreTokenizerScratch, limit: Int = .max) {
        text.scalars.withUnsafeBufferPointer { scalars in
            subPieces.removeAll(keepingCapacity: true)
            normalizedMatcher.split(scalars, 0..<scalars.count, into: &subPieces)
            for piece in subPieces {
                guard sink.count < limit else { return }
                if let id = piece.addedTokenId {
                    let span = text.spans[piece.range.lowerBound].start..<text.spans[piece.range.upperBound - 1].end
                    sink.append(id, token: Self.string(scalars, piece.range), span)
                } else {
                    preTokenizer.forEachWord(text, piece.range, scratch: &words) { wordText, word in
                        if sink.count < limit { model.tokenize(wordText, word, into: &sink) }
                    }
                }
            }
        }
    }

    /// [CLS] A [SEP] (B [SEP]) as the template says, with type ids and offsets.
    private func frame(_ first: TokenSink, _ second: TokenSink?, addSpecialTokens: Bool, truncated: Bool) -> Encoding {
        let pieces = second == nil ? template.single : template.pair
        let total = first.count + (second?.count ?? 0)
            + (addSpecialTokens ? template.specialTokenCount(isPair: second != nil) : 0)
        var encoding = Encoding(ids: [], typeIds: [], attentionMask: Array(repeating: 1, count: total),
                                tokens: [], offsets: [], wasTruncated: truncated, specialTokensMask: [])
        encoding.ids.reserveCapacity(total)
        encoding.specialTokensMask.reserveCapacity(total)
        encoding.typeIds.reserveCapacity(total)
        encoding.tokens.reserveCapacity(total)
        encoding.offsets.reserveCapacity(total)
        for piece in pieces {
            switch piece {
            case let .sequence(isPair, typeId):
                guard let tokens = isPair ? second : first else { continue }
                encoding.ids += tokens.ids
                encoding.tokens += tokens.tokens
                encoding.offsets += tokens.offsets
                encoding.typeIds += repeatElement(typeId, count: tokens.count)
                encoding.specialTokensMask += repeatElement(0, count: tokens.count)
            case let .special(ids, tokens, typeId):
                guard addSpecialTokens else { continue }
                encoding.ids += ids
                encoding.tokens += tokens
                encoding.offsets += repeatElement(0..<0, count: ids.count)
                encoding.typeIds += repeatElement(typeId, count: ids.count)
                encoding.specialTokensMask += repeatElement(1, count: ids.count)
            }
        }
        return encoding
    }

    private func pad(_ encoding: inout Encoding, to length: Int) {
        let n = length - encoding.count
        let at = padsLeft ? 0 : encoding.count
        encoding.ids.insert(contentsOf: repeatElement(padId, count: n), at: at)
        encoding.typeIds.insert(contentsOf: repeatElement(padTypeId, count: n), at: at)
        encoding.attentionMask.insert(contentsOf: repeatElement(0, count: n), at: at)
        encoding.tokens.insert(contentsOf: repeatElement(padToken, count: n), at: at)
        encoding.offsets.insert(contentsOf: repeatElement(0..<0, count: n), at: at)
        encoding.specialTokensMask.insert(contentsOf: repeatElement(1, count: n), at: at)
    }

    /// Added tokens matched before normalisation (`normalized: false`) and after it.
    private struct AddedTokenMatchers {
        let raw: AddedTokenMatcher
        let normalized: AddedTokenMatcher

        init(_ tokens: [AddedToken], normalizer: TextNormalizer?) {
            let raw = tokens.filter { !$0.normalized }
            self.raw = AddedTokenMatcher(tokens: raw, contents: raw.map { Tokenizer.scalars($0.content) })
            let normalized = tokens.filter(\.normalized)
            self.normalized = AddedTokenMatcher(tokens: normalized, contents: normalized.map { token in
                Tokenizer.normalize(token.content, with: normalizer)
            })
        }
    }

    // MARK: - Helpers

    /// Largest tokenizer file read: several times the largest real WordPiece tokenizer.json
    /// (a few MB), small enough that parsing it cannot exhaust memory.
    static let maximumFileSize = 64 << 20

    private static func read(_ url: URL) throws -> Data {
        func unusable(_ reason: String) -> SwiftBERTError { .invalidTokenizer(path: url.path, reason: reason) }
        do { return try readBoundedFile(url, limit: maximumFileSize) }
        catch let failure as BoundedFileError {
            switch failure {
            case .missing, .inaccessible:
                throw SwiftBERTError.fileNotFound(path: url.path, hint: "For the default models run `make setup`, or `bert pull NAME`.")
            case .notRegularFile: throw unusable("not a regular file; give the model's tokenizer.json or vocab.txt")
            case let .tooLarge(bytes):
                throw unusable("\(bytes) bytes is far too large for a tokenizer (at most \(maximumFileSize >> 20) MiB); give the model's tokenizer.json or vocab.txt")
            case let .unreadable(reason): throw unusable("cannot be read (\(reason)); check its permissions")
            }
        }
    }

    /// tokenizer_config.json's do_lower_case, which Tokenizer honours next to a vocab.txt.
    private static func doLowerCase(folder: URL) -> Bool? {
        guard let data = try? readBoundedFile(folder.appendingPathComponent("tokenizer_config.json"), limit: 4 << 20),
              let json = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        return json["do_lower_case"]?.bool
    }

    private static func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    private static func normalize(_ text: String, with normalizer: TextNormalizer?) -> [UInt32] {
        let input = scalars(text)
        var out = NormalizedText()
        switch normalizer {
        case nil:
            return input
        case let .bert(bert)?:
            var scratch = NormalizerScratch()
            input.withUnsafeBufferPointer { bert.normalize($0, 0..<$0.count, into: &out, scratch: &scratch) }
        case let .steps(steps)?:
            for (i, scalar) in input.enumerated() { out.append(scalar, SourceSpan(start: i, end: i + 1)) }
            for step in steps { step.apply(&out, pieceStart: 0) }
        }
        return out.scalars
    }

    private static func string(_ scalars: UnsafeBufferPointer<UInt32>, _ range: Range<Int>) -> String {
        string(scalars[range])
    }

    private static func string<S: Sequence<UInt32>>(_ scalars: S) -> String {
        var view = String.UnicodeScalarView()
        for value in scalars { view.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
        return String(view)
    }
}
