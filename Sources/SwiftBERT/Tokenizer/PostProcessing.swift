/// The special-token framing of HF's post-processors (TemplateProcessing, BertProcessing):
/// `[CLS] A [SEP]` for one text, `[CLS] A [SEP] B [SEP]` with type id 1 on B for a pair.
struct PostProcessingTemplate: Sendable {
    enum Piece: Sendable {
        case sequence(isPair: Bool, typeId: Int32)
        case special(ids: [Int32], tokens: [String], typeId: Int32)
    }
    var single: [Piece]
    var pair: [Piece]

    /// No post-processor: the texts as they are, the pair with type id 1.
    static let none = PostProcessingTemplate(
        single: [.sequence(isPair: false, typeId: 0)],
        pair: [.sequence(isPair: false, typeId: 0), .sequence(isPair: true, typeId: 1)])

    static func bert(cls: (Int32, String), sep: (Int32, String)) -> PostProcessingTemplate {
        let clsPiece = Piece.special(ids: [cls.0], tokens: [cls.1], typeId: 0)
        let sep0 = Piece.special(ids: [sep.0], tokens: [sep.1], typeId: 0)
        let sep1 = Piece.special(ids: [sep.0], tokens: [sep.1], typeId: 1)
        return PostProcessingTemplate(
            single: [clsPiece, .sequence(isPair: false, typeId: 0), sep0],
            pair: [clsPiece, .sequence(isPair: false, typeId: 0), sep0, .sequence(isPair: true, typeId: 1), sep1])
    }

    /// How many special tokens framing adds: what truncation keeps room for.
    func specialTokenCount(isPair: Bool) -> Int {
        (isPair ? pair : single).reduce(0) { count, piece in
            if case let .special(ids, _, _) = piece { return count + ids.count }
            return count
        }
    }

    /// The special tokens of the single template, in order: [CLS] and [SEP] for BERT, <s> and </s>
    /// for RoBERTa, an EOS alone for a decoder's tokenizer, none without a post-processor.
    var specialIds: [Int32] {
        single.compactMap { piece -> Int32? in
            if case let .special(ids, _, _) = piece { return ids.first }
            return nil
        }
    }
}

extension PostProcessingTemplate {
    /// Reads tokenizer.json's "post_processor"; `idOf` resolves a token string.
    init(json: JSONValue, idOf: (String) -> Int32?, _ fail: (String) -> SwiftBERTError) throws {
        switch json.typeName {
        case nil:
            self = .none
        case "BertProcessing":
            guard let cls = Self.tokenAndId(json["cls"]), let sep = Self.tokenAndId(json["sep"]) else {
                throw fail("BertProcessing without cls/sep")
            }
            self = .bert(cls: (cls.id, cls.token), sep: (sep.id, sep.token))
        case "RobertaProcessing":
            // <s> A </s> and <s> A </s></s> B </s>, every type id 0 (its offset trimming is read
            // by the configuration).
            guard let cls = Self.tokenAndId(json["cls"]), let sep = Self.tokenAndId(json["sep"]) else {
                throw fail("RobertaProcessing without cls/sep")
            }
            let clsPiece = Piece.special(ids: [cls.id], tokens: [cls.token], typeId: 0)
            let sepPiece = Piece.special(ids: [sep.id], tokens: [sep.token], typeId: 0)
            self.init(single: [clsPiece, .sequence(isPair: false, typeId: 0), sepPiece],
                      pair: [clsPiece, .sequence(isPair: false, typeId: 0), sepPiece, sepPiece,
                             .sequence(isPair: true, typeId: 0), sepPiece])
        case "ByteLevel":
            self = .none  // only trims offsets
        case "TemplateProcessing":
            var specials: [String: (ids: [Int32], tokens: [String])] = [:]
            if case let .object(entries)? = json["special_tokens"] {
                for (name, entry) in entries {
                    let ids = (entry["ids"]?.array ?? []).compactMap(\.int).map(Int32.init)
                    let tokens = (entry["tokens"]?.array ?? []).compactMap(\.string)
                    guard !ids.isEmpty, ids.count == tokens.count else { throw fail("template special token \(name) has no ids") }
                    specials[name] = (ids, tokens)
                }
            }
            func pieces(_ key: String) throws -> [Piece] {
                guard let items = json[key]?.array else { throw fail("TemplateProcessing without \(key)") }
                return try items.map { item in
                    if let sequence = item["Sequence"] {
                        let typeId = Int32(sequence["type_id"]?.int ?? 0)
                        switch sequence["id"]?.string {
                        case "A": return .sequence(isPair: false, typeId: typeId)
                        case "B": return .sequence(isPair: true, typeId: typeId)
                        default: throw fail("template sequence without id \"A\" or \"B\"")
                        }
                    }
                    if let special = item["SpecialToken"], let name = special["id"]?.string {
                        let typeId = Int32(special["type_id"]?.int ?? 0)
                        if let known = specials[name] {
                            return .special(ids: known.ids, tokens: known.tokens, typeId: typeId)
                        }
                        guard let id = idOf(name) else { throw fail("template names unknown token \(name)") }
                        return .special(ids: [id], tokens: [name], typeId: typeId)
                    }
                    throw fail("unreadable template piece")
                }
            }
            self.init(single: try pieces("single"), pair: try pieces("pair"))
            // Truncation and framing count on each text appearing once, where it belongs.
            func sequences(_ pieces: [Piece]) -> [Bool] {
                pieces.compactMap { if case let .sequence(isPair, _) = $0 { return isPair } else { return nil } }
            }
            guard sequences(single) == [false], sequences(pair).count == 2, Set(sequences(pair)).count == 2 else {
                throw fail("TemplateProcessing must hold sequence A once in \"single\", and A and B once each in \"pair\"")
            }
        case let other?:
            throw fail("post-processor \(other) is not supported (TemplateProcessing, BertProcessing, RobertaProcessing and ByteLevel are); use a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")
        }
    }

    /// BertProcessing writes a token as ["[CLS]", 101].
    private static func tokenAndId(_ json: JSONValue?) -> (token: String, id: Int32)? {
        guard let pair = json?.array, pair.count == 2, let token = pair[0].string, let id = pair[1].int else { return nil }
        return (token, Int32(id))
    }
}

/// Tokens of one text before framing: what the normalizer, pre-tokenizer and model produced.
struct TokenSink {
    var ids: [Int32] = []
    var tokens: [String] = []
    var offsets: [Range<Int>] = []
    let tokenStrings: [String]

    init(tokenStrings: [String], capacity: Int = 0) {
        self.tokenStrings = tokenStrings
        ids.reserveCapacity(capacity)
        tokens.reserveCapacity(capacity)
        offsets.reserveCapacity(capacity)
    }

    var count: Int { ids.count }

    @inline(__always)
    mutating func appendModelToken(_ id: Int32, _ span: Range<Int>) {
        ids.append(id)
        tokens.append(Int(id) < tokenStrings.count ? tokenStrings[Int(id)] : "")
        offsets.append(span)
    }

    mutating func append(_ id: Int32, token: String, _ offset: Range<Int>) {
        ids.append(id)
        tokens.append(token)
        offsets.append(offset)
    }

    mutating func removeLast(_ k: Int) {
        ids.removeLast(k)
        tokens.removeLast(k)
        offsets.removeLast(k)
    }

    /// Keeps `length` tokens: the first ones, or the last ones when truncating from the left.
    /// The first `length` tokens, or `fromLeft` the last, save the first `keepingFirst` (at most
    /// `length`), which a cut from the left leaves in place: a prompt before the text.
    mutating func truncate(to length: Int, fromLeft: Bool, keepingFirst: Int = 0) {
        guard length < count else { return }
        if fromLeft {
            let drop = count - length, keep = min(keepingFirst, length)
            ids.removeSubrange(keep..<(keep + drop))
            tokens.removeSubrange(keep..<(keep + drop))
            offsets.removeSubrange(keep..<(keep + drop))
        } else {
            removeLast(count - length)
        }
    }
}

/// HF's truncate_encodings: `maxLength` counts the tokens of both texts; longest_first
/// shortens the longer text first and splits evenly when both are too long.
/// Returns whether anything was removed.
/// `keepingFirst`: tokens at the start of a single text that a cut from the left keeps.
func truncateLongestFirst(_ first: inout TokenSink, _ second: inout TokenSink?, maxLength: Int, fromLeft: Bool,
                          keepingFirst: Int = 0) -> Bool {
    let total = first.count + (second?.count ?? 0)
    guard total > maxLength else { return false }
    guard var other = second else {
        first.truncate(to: maxLength, fromLeft: fromLeft, keepingFirst: keepingFirst)
        return true
    }
    if maxLength == 0 {
        first.truncate(to: 0, fromLeft: fromLeft)
        other.truncate(to: 0, fromLeft: fromLeft)
        second = other
        return true
    }
    var shorter = min(first.count, other.count)
    var longer = shorter > maxLength ? shorter : max(shorter, maxLength - shorter)
    if shorter + longer > maxLength {
        shorter = maxLength / 2
        longer = shorter + maxLength % 2
    }
    let firstIsLonger = first.count > other.count
    first.truncate(to: firstIsLonger ? longer : shorter, fromLeft: fromLeft)
    other.truncate(to: firstIsLonger ? shorter : longer, fromLeft: fromLeft)
    second = other
    return true
}
