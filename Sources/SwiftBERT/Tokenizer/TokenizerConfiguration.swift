import Foundation

/// Everything a BertTokenizer is built from, read from tokenizer.json or vocab.txt.
struct TokenizerConfiguration {
    var vocabulary: [String: Int32] = [:]
    var unknownToken = "[UNK]"
    var continuationPrefix = "##"
    var maxInputCharsPerWord = 100
    /// nil: the text is not normalized.
    var normalizer: BertNormalizer? = BertNormalizer()
    /// false: no pre-tokenizer, the whole text is one word.
    var splitsWords = true
    var addedTokens: [AddedToken] = []
    var template = PostProcessingTemplate.none
    var decoder: WordPieceDecoder? = WordPieceDecoder()
    var truncationFromLeft = false
    var maxLength: Int?
    var padId: Int32?
    var padTypeId: Int32 = 0
    var padToken: String?
    var padsLeft = false
}

// MARK: - tokenizer.json

/// The sections of tokenizer.json; the vocabulary is decoded only once the model is known to be WordPiece.
private struct TokenizerFile: Decodable {
    struct Model: Decodable {
        var type: String?
        var vocab: [String: Int]?
        var unk_token: String?
        var continuing_subword_prefix: String?
        var max_input_chars_per_word: Int?

        enum CodingKeys: String, CodingKey {
            case type, vocab, merges, unk_token, continuing_subword_prefix, max_input_chars_per_word
        }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try container.decodeIfPresent(String.self, forKey: .type)
            if type == nil, container.contains(.merges) { type = "BPE" }
            guard type == "WordPiece" else { return }
            vocab = try container.decodeIfPresent([String: Int].self, forKey: .vocab)
            unk_token = try container.decodeIfPresent(String.self, forKey: .unk_token)
            continuing_subword_prefix = try container.decodeIfPresent(String.self, forKey: .continuing_subword_prefix)
            max_input_chars_per_word = try container.decodeIfPresent(Int.self, forKey: .max_input_chars_per_word)
        }
    }
    struct Added: Decodable {
        var id: Int
        var content: String
        var single_word: Bool?
        var lstrip: Bool?
        var rstrip: Bool?
        var normalized: Bool?
        var special: Bool?
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
        func fail(_ reason: String) -> BertError { .invalidTokenizer(path: path, reason: reason) }
        let file: TokenizerFile
        do {
            file = try JSONDecoder().decode(TokenizerFile.self, from: data)
        } catch {
            throw fail("not a tokenizer.json (\(SwiftBERT.describe(error))); give the model's own tokenizer.json")
        }
        guard file.model.type == "WordPiece" else {
            let kind = file.model.type.map { printable($0) } ?? "of unknown type"
            throw fail("its model is \(kind); SwiftBERT implements WordPiece (BERT) tokenizers only: use a BERT model's tokenizer")
        }
        guard let vocab = file.model.vocab else { throw fail("the WordPiece model has no vocab; give the model's own tokenizer.json") }
        for (token, id) in vocab {
            guard id >= 0, id <= Int(Int32.max) else { throw fail("bad id \(id) for token \(printable(token)); the file is damaged: give the model's own tokenizer.json") }
            vocabulary[token] = Int32(id)
        }
        unknownToken = file.model.unk_token ?? "[UNK]"
        continuationPrefix = file.model.continuing_subword_prefix ?? "##"
        maxInputCharsPerWord = file.model.max_input_chars_per_word ?? 100

        normalizer = try Self.normalizer(file.normalizer ?? .null, fail)
        switch file.pre_tokenizer?.typeName {
        case nil: splitsWords = false
        case "BertPreTokenizer": splitsWords = true
        case let other?: throw fail("pre-tokenizer \(printable(other)) is not supported (only BertPreTokenizer); use a BERT model's tokenizer")
        }
        addedTokens = Self.assignIds(file.added_tokens ?? [], vocabulary: vocabulary)
        template = try PostProcessingTemplate(json: file.post_processor ?? .null, idOf: { [vocabulary, addedTokens] token in
            addedTokens.first { $0.content == token }?.id ?? vocabulary[token]
        }, fail)
        switch file.decoder?.typeName {
        case nil: decoder = nil
        case "WordPiece":
            decoder = WordPieceDecoder(prefix: file.decoder?["prefix"]?.string ?? "##",
                                       cleanup: file.decoder?["cleanup"]?.bool ?? true)
        case let other?: throw fail("decoder \(printable(other)) is not supported (only WordPiece); use a BERT model's tokenizer")
        }
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

    /// HF ignores the ids written in "added_tokens": a token already in the vocabulary keeps
    /// its id, a new one gets the next id after the vocabulary (AddedVocabulary::add_tokens).
    private static func assignIds(_ entries: [TokenizerFile.Added], vocabulary: [String: Int32]) -> [AddedToken] {
        let vocabularySize = Int32(vocabulary.count)
        var idsByContent: [String: Int32] = [:]
        var largestAddedId: Int32?
        var tokens: [AddedToken] = []
        for entry in entries where !entry.content.isEmpty {
            let special = entry.special ?? false
            var token = AddedToken(id: 0, content: entry.content, singleWord: entry.single_word ?? false,
                                   lstrip: entry.lstrip ?? false, rstrip: entry.rstrip ?? false,
                                   normalized: entry.normalized ?? !special, special: special)
            if let known = idsByContent[entry.content] ?? vocabulary[entry.content] {
                token.id = known
            } else if let largest = largestAddedId, largest >= vocabularySize || vocabularySize == 0 {
                // A hostile vocabulary may already use Int32.max; the sparse-id check rejects the result.
                token.id = largest == .max ? largest : largest + 1
            } else {
                token.id = vocabularySize
            }
            idsByContent[entry.content] = token.id
            largestAddedId = max(largestAddedId ?? token.id, token.id)
            tokens.removeAll { $0.content == token.content }  // a repeated entry replaces the earlier one
            tokens.append(token)
        }
        return tokens
    }

    private static func normalizer(_ json: JSONValue, _ fail: (String) -> BertError) throws -> BertNormalizer? {
        guard let kind = json.typeName else { return nil }
        guard kind == "BertNormalizer" else {
            throw fail("normalizer \(printable(describe(json))) is not supported (only BertNormalizer); use a BERT model's tokenizer")
        }
        let lowercase = json["lowercase"]?.bool ?? true
        return BertNormalizer(
            cleanText: json["clean_text"]?.bool ?? true,
            handleChineseChars: json["handle_chinese_chars"]?.bool ?? true,
            stripAccents: json["strip_accents"]?.bool ?? lowercase,  // null means: as lowercase
            lowercase: lowercase)
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
    /// A vocab.txt with BertTokenizer's defaults: one token per line, the line number is its id.
    init(vocabTXT data: Data, path: String, lowercase: Bool) throws {
        guard let text = String(data: data, encoding: .utf8) else {
            throw BertError.invalidTokenizer(path: path, reason: "vocab.txt is not UTF-8 (bad byte at offset \(firstInvalidUTF8Byte(ArraySlice(data)) - 1)); give the model's own vocab.txt")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }  // the newline ending the last line
        for (index, line) in lines.enumerated() {
            // HF reads each line with Rust's trim_end(): trailing White_Space goes, "\r" included.
            var scalars = Substring.UnicodeScalarView(line.unicodeScalars)
            while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
            vocabulary[String(scalars)] = Int32(index)  // a repeated token keeps its last line
        }
        normalizer = BertNormalizer(cleanText: true, handleChineseChars: true, stripAccents: lowercase, lowercase: lowercase)
        splitsWords = true
        addedTokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].compactMap { token in
            vocabulary[token].map { AddedToken(id: $0, content: token) }
        }
        guard let cls = vocabulary["[CLS]"], let sep = vocabulary["[SEP]"] else {
            throw BertError.invalidTokenizer(path: path, reason: vocabulary.isEmpty ? "the vocabulary is empty; give the model's own vocab.txt" : "vocab.txt has no [CLS] or no [SEP] token; give the vocab.txt of a BERT model")
        }
        template = .bert(cls: (cls, "[CLS]"), sep: (sep, "[SEP]"))
        decoder = WordPieceDecoder()
    }
}
