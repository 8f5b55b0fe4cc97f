import Foundation

/// Everything a Tokenizer is built from, read from tokenizer.json or vocab.txt.
struct TokenizerConfiguration {
    /// Token → id for every model (Unigram: piece → its index).
    var vocabulary: [ExactString: Int32] = [:]
    var model = ModelSection.wordPiece
    var unknownToken = "[UNK]"
    var continuationPrefix = "##"
    var maxInputCharsPerWord = 100
    /// nil: the text is not normalized.
    var normalizer: TextNormalizer? = .bert(BertNormalizer())
    var preTokenizer = PreTokenizer.bert
    var addedTokens: [AddedToken] = []
    var template = PostProcessingTemplate.none
    /// RobertaProcessing's (or a ByteLevel post-processor's) trim_offsets, with its add_prefix_space.
    var trimsByteLevelOffsets: ByteLevelOffsetTrim?
    var decoder: TokenDecoder? = .wordPiece(WordPieceDecoder())
    var truncationFromLeft = false
    var maxLength: Int?
    var padId: Int32?
    var padTypeId: Int32 = 0
    var padToken: String?
    var padsLeft = false
}

/// What the model section holds beyond the vocabulary.
enum ModelSection {
    case wordPiece
    case unigram(pieces: [(String, Double)], unknownId: Int?, byteFallback: Bool)
    case bpe(merges: [(String, String)], unknownToken: String?, fuseUnknown: Bool, byteFallback: Bool, ignoreMerges: Bool)
}

// MARK: - tokenizer.json

/// The sections of tokenizer.json; the vocabulary is decoded only once the model is known to be WordPiece.
private struct TokenizerFile: Decodable {
    struct Model: Decodable {
        var type: String?
        var vocab: Vocabulary?
        var unk_token: String?
        var continuing_subword_prefix: String?
        var max_input_chars_per_word: Int?
        // Unigram
        var pieces: [UnigramPiece]?
        var unk_id: Int?
        var byte_fallback: Bool?
        // BPE
        var merges: [Merge]?
        var fuse_unk: Bool?
        var ignore_merges: Bool?
        var end_of_word_suffix: String?
        var dropout: Double?

        enum CodingKeys: String, CodingKey {
            case type, vocab, merges, unk_token, continuing_subword_prefix, max_input_chars_per_word
            case unk_id, byte_fallback, fuse_unk, ignore_merges, end_of_word_suffix, dropout
        }

        /// ["piece", score]
        struct UnigramPiece: Decodable {
            var piece: String
            var score: Double
            init(from decoder: Decoder) throws {
                var container = try decoder.unkeyedContainer()
                piece = try container.decode(String.self)
                score = try container.decode(Double.self)
            }
        }

        /// ["left", "right"], or "left right" in older files.
        struct Merge: Decodable {
            var left: String
            var right: String
            init(from decoder: Decoder) throws {
                if var pair = try? decoder.unkeyedContainer() {
                    left = try pair.decode(String.self)
                    right = try pair.decode(String.self)
                    return
                }
                let text = try decoder.singleValueContainer().decode(String.self)
                let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else {
                    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "merge \"\(text)\" is not two tokens"))
                }
                left = String(parts[0])
                right = String(parts[1])
            }
        }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try container.decodeIfPresent(String.self, forKey: .type)
            if type == nil, container.contains(.merges) { type = "BPE" }
            if type == nil, container.contains(.unk_id) { type = "Unigram" }
            switch type {
            case "WordPiece":
                vocab = try container.decodeIfPresent(Vocabulary.self, forKey: .vocab)
                unk_token = try container.decodeIfPresent(String.self, forKey: .unk_token)
                continuing_subword_prefix = try container.decodeIfPresent(String.self, forKey: .continuing_subword_prefix)
                max_input_chars_per_word = try container.decodeIfPresent(Int.self, forKey: .max_input_chars_per_word)
            case "Unigram":
                pieces = try container.decodeIfPresent([UnigramPiece].self, forKey: .vocab)
                unk_id = try container.decodeIfPresent(Int.self, forKey: .unk_id)
                byte_fallback = try container.decodeIfPresent(Bool.self, forKey: .byte_fallback)
            case "BPE":
                vocab = try container.decodeIfPresent(Vocabulary.self, forKey: .vocab)
                merges = try container.decodeIfPresent([Merge].self, forKey: .merges)
                unk_token = try container.decodeIfPresent(String.self, forKey: .unk_token)
                continuing_subword_prefix = try container.decodeIfPresent(String.self, forKey: .continuing_subword_prefix)
                end_of_word_suffix = try container.decodeIfPresent(String.self, forKey: .end_of_word_suffix)
                fuse_unk = try container.decodeIfPresent(Bool.self, forKey: .fuse_unk)
                byte_fallback = try container.decodeIfPresent(Bool.self, forKey: .byte_fallback)
                ignore_merges = try container.decodeIfPresent(Bool.self, forKey: .ignore_merges)
                dropout = try container.decodeIfPresent(Double.self, forKey: .dropout)
            default:
                break
            }
        }
    }
    /// model.vocab's (token, id) entries, every key kept. JSONDecoder gathers an object's members
    /// in a [String: _], where canonically equivalent keys are one; `exactKeys` renames the members
    /// of model.vocab to the hex of their UTF-8 before that, and `HexKey` reads the token back.
    struct Vocabulary: Decodable {
        var entries: [(token: String, id: Int)] = []

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: HexKey.self)
            let keys = container.allKeys
            entries.reserveCapacity(keys.count)
            for key in keys {
                guard let token = key.token else {
                    throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "vocab read without TokenizerFile.exactKeys"))
                }
                entries.append((token, try container.decode(Int.self, forKey: key)))
            }
        }
    }

    /// JSONDecoder's keyDecodingStrategy for tokenizer.json: model.vocab's keys in hex, others as written.
    static func exactKeys(_ path: [CodingKey]) -> CodingKey {
        let key = path[path.count - 1]
        guard path.count == 3, path[1].stringValue == "vocab", path[0].stringValue == "model" else { return key }
        return HexKey.hex(key.stringValue)
    }

    struct Added: Decodable {
        var id: Int
        var content: String
        var single_word, lstrip, rstrip, normalized, special: Bool?
    }
    var model: Model
    var added_tokens: [Added]?
    var normalizer: JSONValue?
    var pre_tokenizer: JSONValue?
    var post_processor: JSONValue?
    var decoder: JSONValue?
    var truncation: JSONValue?
    var padding: JSONValue?
}

extension TokenizerConfiguration {
    /// Parses a Hugging Face tokenizer.json; throws `invalidTokenizer` naming anything that is
    /// not a BERT WordPiece pipeline, rather than tokenizing it wrongly.
    init(tokenizerJSON data: Data, path: String) throws {
        func fail(_ reason: String) -> SwiftBERTError { .invalidTokenizer(path: path, reason: reason) }
        let file: TokenizerFile
        do {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .custom(TokenizerFile.exactKeys)
            file = try decoder.decode(TokenizerFile.self, from: data)
        } catch {
            throw fail("not a tokenizer.json (\(SwiftBERT.describe(error))); give the model's own tokenizer.json")
        }
        try readModel(file.model, fail)
        normalizer = try Self.normalizer(file.normalizer ?? .null, fail)
        preTokenizer = try Self.preTokenizer(file.pre_tokenizer ?? .null, fail)
        addedTokens = Self.assignIds(file.added_tokens ?? [], vocabulary: vocabulary)
        // A Sequence of post-processors: one may frame (Template, Bert, Roberta), ByteLevel ones
        // trim offsets; framing adds only special tokens, whose offsets trimming leaves alone.
        var processors = [file.post_processor ?? .null]
        if processors[0].typeName == "Sequence" {
            processors = processors[0]["processors"]?.array ?? []
            if let nested = processors.first(where: { $0.typeName == "Sequence" }) ?? processors.first(where: {
                !["TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel"].contains($0.typeName ?? "")
            }) {
                throw fail("post-processor \(printable(nested.typeName ?? "null")) inside a Sequence is not supported (TemplateProcessing, BertProcessing, RobertaProcessing and ByteLevel are); use a tokenizer.json without it")
            }
        }
        let framing = processors.filter { $0.typeName != "ByteLevel" && $0.typeName != nil }
        guard framing.count <= 1 else {
            throw fail("post-processor Sequence with \(framing.count) framing steps (\(framing.compactMap(\.typeName).joined(separator: ", "))) is not supported: SwiftBERT frames a text once; use a tokenizer.json with one")
        }
        template = try PostProcessingTemplate(json: framing.first ?? processors.first ?? .null, idOf: { [vocabulary, addedTokens] token in
            addedTokens.first { ExactString($0.content) == ExactString(token) }?.id ?? vocabulary[ExactString(token)]
        }, fail)
        for postProcessor in processors {
            switch postProcessor.typeName {
            case "RobertaProcessing", "ByteLevel":
                if postProcessor["trim_offsets"]?.bool ?? true {
                    trimsByteLevelOffsets = ByteLevelOffsetTrim(addPrefixSpace: postProcessor["add_prefix_space"]?.bool ?? true)
                }
            default: break
            }
        }
        decoder = try TokenDecoder(json: file.decoder ?? .null, fail)
        if let truncation = file.truncation, !truncation.isNull {
            maxLength = truncation["max_length"]?.int
            truncationFromLeft = truncation["direction"]?.string == "Left"
        }
        if let padding = file.padding, !padding.isNull {
            padId = padding["pad_id"]?.int.map(Int32.init)
            padTypeId = padding["pad_type_id"]?.int.map(Int32.init) ?? 0
            padToken = padding["pad_token"]?.string
            padsLeft = padding["direction"]?.string == "Left"
        }
    }

    private mutating func readModel(_ model: TokenizerFile.Model, _ fail: (String) -> SwiftBERTError) throws {
        func checkedId(_ id: Int, _ token: String) throws -> Int32 {
            guard id >= 0, id <= Int(Int32.max) else { throw fail("bad id \(id) for token \(printable(token)); the file is damaged: give the model's own tokenizer.json") }
            return Int32(id)
        }
        switch model.type {
        case "WordPiece":
            guard let vocab = model.vocab else { throw fail("the WordPiece model has no vocab; give the model's own tokenizer.json") }
            for (token, id) in vocab.entries { vocabulary[ExactString(token)] = try checkedId(id, token) }
            unknownToken = model.unk_token ?? "[UNK]"
            continuationPrefix = model.continuing_subword_prefix ?? "##"
            maxInputCharsPerWord = model.max_input_chars_per_word ?? 100
            self.model = .wordPiece
        case "Unigram":
            guard let pieces = model.pieces, !pieces.isEmpty else { throw fail("the Unigram model has no vocab; give the model's own tokenizer.json") }
            for (id, piece) in pieces.enumerated() {
                vocabulary[ExactString(piece.piece)] = Int32(id)  // a repeated piece keeps its last id, as HF's token_to_ids
            }
            if let unknownId = model.unk_id, !(0..<pieces.count).contains(unknownId) {
                throw fail("the Unigram model's unk_id \(unknownId) is not one of its \(pieces.count) pieces; the file is damaged")
            }
            unknownToken = model.unk_id.map { pieces[$0].piece } ?? ""
            self.model = .unigram(pieces: pieces.map { ($0.piece, $0.score) }, unknownId: model.unk_id,
                                  byteFallback: model.byte_fallback ?? false)
        case "BPE":
            guard let vocab = model.vocab, !vocab.entries.isEmpty else { throw fail("the BPE model has no vocab; give the model's own tokenizer.json") }
            for (token, id) in vocab.entries { vocabulary[ExactString(token)] = try checkedId(id, token) }
            if let prefix = model.continuing_subword_prefix, !prefix.isEmpty {
                throw fail("BPE with continuing_subword_prefix \(printable(prefix)) is not supported (byte-level BPE as GPT-2/RoBERTa use it is); use a RoBERTa-style tokenizer.json")
            }
            if let suffix = model.end_of_word_suffix, !suffix.isEmpty {
                throw fail("BPE with end_of_word_suffix \(printable(suffix)) is not supported (byte-level BPE as GPT-2/RoBERTa use it is); use a RoBERTa-style tokenizer.json")
            }
            if let dropout = model.dropout, dropout > 0 {
                throw fail("BPE dropout \(dropout) makes tokenization random; set \"dropout\": null for inference")
            }
            unknownToken = model.unk_token ?? ""
            self.model = .bpe(merges: (model.merges ?? []).map { ($0.left, $0.right) }, unknownToken: model.unk_token,
                              fuseUnknown: model.fuse_unk ?? false, byteFallback: model.byte_fallback ?? false,
                              ignoreMerges: model.ignore_merges ?? false)
        case let other:
            let kind = other.map { printable($0) } ?? "of unknown type"
            throw fail("its model is \(kind); SwiftBERT implements WordPiece, Unigram and BPE tokenizers: give a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")
        }
    }

    private static func preTokenizer(_ json: JSONValue, _ fail: (String) -> SwiftBERTError) throws -> PreTokenizer {
        switch json.typeName {
        case nil: return .none
        case "BertPreTokenizer": return .bert
        case "Metaspace":
            var metaspace = Metaspace()
            if let replacement = json["replacement"]?.string {
                guard replacement.unicodeScalars.count == 1, let scalar = replacement.unicodeScalars.first else {
                    throw fail("Metaspace replacement \(printable(replacement)) is not one character")
                }
                metaspace.replacement = scalar.value
            }
            if let scheme = json["prepend_scheme"]?.string {
                guard let value = Metaspace.PrependScheme(rawValue: scheme) else {
                    throw fail("Metaspace prepend_scheme \(printable(scheme)) is unknown (always, never or first)")
                }
                metaspace.prependScheme = value
            } else if let addPrefixSpace = json["add_prefix_space"]?.bool {  // files before tokenizers 0.15
                metaspace.prependScheme = addPrefixSpace ? .always : .never
            }
            metaspace.split = json["split"]?.bool ?? true
            return .metaspace(metaspace)
        case "ByteLevel":
            return .byteLevel(ByteLevel(addPrefixSpace: json["add_prefix_space"]?.bool ?? true,
                                        useRegex: json["use_regex"]?.bool ?? true))
        case "Sequence":
            guard let items = json["pretokenizers"]?.array else {
                throw fail("pre-tokenizer Sequence has no \"pretokenizers\" list; the file is damaged: give the model's own tokenizer.json")
            }
            return .sequence(try items.map { try preTokenizer($0, fail) })
        case "WhitespaceSplit":
            return .split(PatternSplit(pattern: .scalar(.whitespace), behavior: .removed))
        case "Whitespace":
            return .whitespace
        case "Punctuation":
            return .split(PatternSplit(pattern: .scalar(.punctuation), behavior: try behavior(json, default: .isolated, fail)))
        case "Digits":
            // HF: each digit alone, or runs of digits kept together.
            let individual = json["individual_digits"]?.bool ?? false
            return .split(PatternSplit(pattern: .scalar(.numeric), behavior: individual ? .isolated : .contiguous))
        case "CharDelimiterSplit":
            guard let delimiter = json["delimiter"]?.string, delimiter.unicodeScalars.count == 1,
                  let scalar = delimiter.unicodeScalars.first else {
                throw fail("CharDelimiterSplit delimiter \(printable(json["delimiter"]?.string ?? "null")) is not one character; the file is damaged: give the model's own tokenizer.json")
            }
            return .split(PatternSplit(pattern: .scalar(.character(scalar.value)), behavior: .removed))
        case "Split":
            let pattern: PatternSplit.Pattern
            if let literal = json["pattern"]?["String"]?.string {
                let scalars = literal.unicodeScalars.map(\.value)
                pattern = scalars.count == 1 ? .scalar(.character(scalars[0])) : .literal(scalars)
            } else if let source = json["pattern"]?["Regex"]?.string {
                guard let regex = PatternSplit.regex(source) else {
                    throw fail("Split pre-tokenizer regex \(printable(source)) is not supported (Swift's Regex does not read it as Oniguruma does); use a tokenizer.json whose Split pattern is a string or a plain regex")
                }
                pattern = .regex(regex, source: source)
            } else {
                throw fail("Split pre-tokenizer without a String or Regex pattern; the file is damaged: give the model's own tokenizer.json")
            }
            return .split(PatternSplit(pattern: pattern, behavior: try behavior(json, default: .removed, fail),
                                       invert: json["invert"]?.bool ?? false))
        case let other?:
            throw fail("pre-tokenizer \(printable(other)) is not supported (BertPreTokenizer, Metaspace, ByteLevel, WhitespaceSplit, Whitespace, Punctuation, Digits, CharDelimiterSplit, Split and Sequence are); use a tokenizer.json without it")
        }
    }

    /// A Split or Punctuation "behavior".
    private static func behavior(_ json: JSONValue, default fallback: PatternSplit.Behavior,
                                 _ fail: (String) -> SwiftBERTError) throws -> PatternSplit.Behavior {
        guard let name = json["behavior"]?.string else { return fallback }
        guard let behavior = PatternSplit.Behavior(json: name) else {
            throw fail("split behavior \(printable(name)) is unknown (Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous); the file is damaged")
        }
        return behavior
    }

    /// HF ignores the ids written in "added_tokens": a token already in the vocabulary keeps
    /// its id, a new one gets the next id after the vocabulary (AddedVocabulary::add_tokens).
    private static func assignIds(_ entries: [TokenizerFile.Added], vocabulary: [ExactString: Int32]) -> [AddedToken] {
        let vocabularySize = Int32(vocabulary.count)
        var idsByContent: [ExactString: Int32] = [:]
        var largestAddedId: Int32?
        var tokens: [AddedToken] = []
        for entry in entries where !entry.content.isEmpty {
            let special = entry.special ?? false
            var token = AddedToken(id: 0, content: entry.content, singleWord: entry.single_word ?? false,
                                   lstrip: entry.lstrip ?? false, rstrip: entry.rstrip ?? false,
                                   normalized: entry.normalized ?? !special, special: special)
            let content = ExactString(entry.content)
            if let known = idsByContent[content] ?? vocabulary[content] {
                token.id = known
            } else if let largest = largestAddedId, largest >= vocabularySize || vocabularySize == 0 {
                // A hostile vocabulary may already use Int32.max; the sparse-id check rejects the result.
                token.id = largest == .max ? largest : largest + 1
            } else {
                token.id = vocabularySize
            }
            idsByContent[content] = token.id
            largestAddedId = max(largestAddedId ?? token.id, token.id)
            tokens.removeAll { ExactString($0.content) == content }  // a repeated entry replaces the earlier one
            tokens.append(token)
        }
        return tokens
    }

    private static func normalizer(_ json: JSONValue, _ fail: (String) -> SwiftBERTError) throws -> TextNormalizer? {
        guard let kind = json.typeName else { return nil }
        if kind == "BertNormalizer" {
            let lowercase = json["lowercase"]?.bool ?? true
            return .bert(BertNormalizer(
                cleanText: json["clean_text"]?.bool ?? true,
                handleChineseChars: json["handle_chinese_chars"]?.bool ?? true,
                stripAccents: json["strip_accents"]?.bool ?? lowercase,  // null means: as lowercase
                lowercase: lowercase))
        }
        var steps: [NormalizerStep] = []
        let whole = describe(json)
        func add(_ json: JSONValue) throws {
            switch json.typeName {
            case nil: break
            case "Sequence":
                for item in json["normalizers"]?.array ?? [] { try add(item) }
            case "Precompiled":
                guard let charsmap = json["precompiled_charsmap"]?.string else {
                    throw fail("the Precompiled normalizer has no precompiled_charsmap; the file is damaged: give the model's own tokenizer.json")
                }
                do {
                    steps.append(.precompiled(try PrecompiledCharsmap(base64: charsmap)))
                } catch let error as PrecompiledCharsmap.CharsmapError {
                    throw fail("\(error.reason); the file is damaged: give the model's own tokenizer.json")
                }
            case "Strip":
                steps.append(.strip(left: json["strip_left"]?.bool ?? true, right: json["strip_right"]?.bool ?? true))
            case "Replace":
                guard let patternJSON = json["pattern"], let pattern = ReplacePattern(json: patternJSON) else {
                    throw fail("Replace normalizer with pattern \(printable(String(describing: json["pattern"] ?? .null))) is not supported (a literal string, or a regex that is one character with +, {n} or {n,}); use a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")
                }
                steps.append(.replace(pattern, content: (json["content"]?.string ?? "").unicodeScalars.map(\.value)))
            case "Lowercase":
                steps.append(.lowercase)
            case "Prepend":
                steps.append(.prepend((json["prepend"]?.string ?? "").unicodeScalars.map(\.value)))
            case "NFD":
                steps.append(.nfd)
            case "NFC":
                steps.append(.unicode(.nfc))
            case "NFKC":
                steps.append(.unicode(.nfkc))
            case "NFKD":
                steps.append(.unicode(.nfkd))
            case "StripAccents":
                steps.append(.stripAccents)
            case "BertNormalizer":
                // Inside a Sequence: its own fused pass, as a step over the piece.
                let lowercase = json["lowercase"]?.bool ?? true
                steps.append(.bert(BertNormalizer(
                    cleanText: json["clean_text"]?.bool ?? true,
                    handleChineseChars: json["handle_chinese_chars"]?.bool ?? true,
                    stripAccents: json["strip_accents"]?.bool ?? lowercase,
                    lowercase: lowercase)))
            case "ByteLevel":
                throw fail("normalizer \(printable(whole)) is not supported: \(json.typeName ?? "") is not one of BertNormalizer, Precompiled, NFC, NFD, NFKC, NFKD, StripAccents, Replace, Strip, Lowercase, Prepend, Sequence; use a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")
            case let other?:
                throw fail("normalizer \(printable(whole)) is not supported: \(printable(other)) is not one of BertNormalizer, Precompiled, NFC, NFD, NFKC, NFKD, StripAccents, Replace, Strip, Lowercase, Prepend, Sequence; use a BERT, XLM-RoBERTa or RoBERTa tokenizer.json, or one whose normalizer is among those")
            }
        }
        try add(json)
        return .steps(steps)
    }

    /// "Sequence[NFD, Lowercase]" for a sequence, else the type.
    private static func describe(_ json: JSONValue) -> String {
        let kind = json.typeName ?? "null"
        guard kind == "Sequence", let items = json["normalizers"]?.array else { return kind }
        return "Sequence[" + items.map { $0.typeName ?? "null" }.joined(separator: ", ") + "]"
    }
}

// MARK: - vocab.txt

extension TokenizerConfiguration {
    /// A vocab.txt with Tokenizer's defaults: one token per line, the line number is its id.
    init(vocabTXT data: Data, path: String, lowercase: Bool) throws {
        guard let text = String(data: data, encoding: .utf8) else {
            throw SwiftBERTError.invalidTokenizer(path: path, reason: "vocab.txt is not UTF-8 (bad byte at offset \(firstInvalidUTF8Offset(ArraySlice(data)) ?? data.count)); give the model's own vocab.txt")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }  // the newline ending the last line
        for (index, line) in lines.enumerated() {
            // HF reads each line with Rust's trim_end(): trailing White_Space goes, "\r" included.
            var scalars = Substring.UnicodeScalarView(line.unicodeScalars)
            while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
            vocabulary[ExactString(String(scalars))] = Int32(index)  // a repeated token keeps its last line
        }
        normalizer = .bert(BertNormalizer(cleanText: true, handleChineseChars: true, stripAccents: lowercase, lowercase: lowercase))
        preTokenizer = .bert
        addedTokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].compactMap { token in
            vocabulary[ExactString(token)].map { AddedToken(id: $0, content: token) }
        }
        guard let cls = vocabulary["[CLS]"], let sep = vocabulary["[SEP]"] else {
            throw SwiftBERTError.invalidTokenizer(path: path, reason: vocabulary.isEmpty ? "the vocabulary is empty; give the model's own vocab.txt" : "vocab.txt has no [CLS] or no [SEP] token; give the vocab.txt of a BERT model")
        }
        template = .bert(cls: (cls, "[CLS]"), sep: (sep, "[SEP]"))
        decoder = .wordPiece(WordPieceDecoder())
    }
}

/// A JSON object's member named by the hex digits of its key's UTF-8: JSONDecoder gathers members
/// in a [String: _], where canonically equivalent keys are one, so a key strategy renames them
/// with `hex` first (tokenizer.json's model.vocab; the tests' fixtures keyed by text).
struct HexKey: CodingKey {
    let stringValue: String
    /// nil when `stringValue` is not hex of UTF-8.
    let token: String?
    var intValue: Int? { nil }

    init(stringValue: String) {
        self.stringValue = stringValue
        var bytes: [UInt8] = []
        bytes.reserveCapacity(stringValue.utf8.count / 2)
        var high: UInt8?
        var valid = stringValue.utf8.count % 2 == 0
        for digit in stringValue.utf8 where valid {
            guard let value = Self.value(digit) else { valid = false; break }
            if let first = high { bytes.append(first << 4 | value); high = nil } else { high = value }
        }
        token = valid ? String(decoding: bytes, as: UTF8.self) : nil  // hex of a String: valid UTF-8
    }

    init?(intValue: Int) { nil }

    private init(stringValue: String, token: String) {
        self.stringValue = stringValue
        self.token = token
    }

    private static let digits = Array("0123456789abcdef".utf8)

    static func hex(_ token: String) -> HexKey {
        let text = String(unsafeUninitializedCapacity: token.utf8.count * 2) { buffer in
            var i = 0
            for byte in token.utf8 {
                buffer[i] = digits[Int(byte >> 4)]
                buffer[i + 1] = digits[Int(byte & 15)]
                i += 2
            }
            return i
        }
        return HexKey(stringValue: text, token: token)
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
