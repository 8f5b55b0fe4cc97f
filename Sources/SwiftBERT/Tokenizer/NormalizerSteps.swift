import Foundation

/// A tokenizer.json normalizer: BertNormalizer (its own fused pass), or a sequence of the
/// other steps HF applies one after another to the whole piece of text.
enum TextNormalizer: Sendable {
    case bert(BertNormalizer)
    case steps([NormalizerStep])
}

/// One normalizer step of tokenizer.json (alone or inside a Sequence), with HF's alignment rules.
enum NormalizerStep: Sendable {
    case precompiled(PrecompiledCharsmap)
    case strip(left: Bool, right: Bool)
    case replace(ReplacePattern, content: [UInt32])
    case lowercase
    case prepend([UInt32])
    /// Canonical decomposition with HF's alignments (BertNormalizer's, marks kept).
    case nfd
    /// NFC, NFKC or NFKD with HF's alignments (`UnicodeNormalization`).
    case unicode(UnicodeNormalization.Form)
    /// HF's StripAccents: drops every combining mark (Mn, Mc, Me), without decomposing.
    case stripAccents
    /// BertNormalizer inside a Sequence.
    case bert(BertNormalizer)

    /// Whether the piece given to `apply` starts and ends where HF's piece does (false where a
    /// long text was cut into chunks): Strip and Prepend act only at true ends.
    struct PieceEdges {
        var start = true
        var end = true
    }

    /// Applies the step to `text` (one piece of the input, starting at original offset `pieceStart`).
    func apply(_ text: inout NormalizedText, pieceStart: Int, edges: PieceEdges = PieceEdges()) {
        switch self {
        case let .precompiled(charsmap):
            charsmap.normalize(&text, pieceStart: pieceStart)
        case let .strip(left, right):
            var start = 0, end = text.scalars.count
            if left && edges.start { while start < end && Self.isWhitespace(text.scalars[start]) { start += 1 } }
            if right && edges.end { while end > start && Self.isWhitespace(text.scalars[end - 1]) { end -= 1 } }
            if start > 0 || end < text.scalars.count {
                text.scalars = Array(text.scalars[start..<end])
                text.spans = Array(text.spans[start..<end])
            }
        case let .replace(pattern, content):
            let matches = pattern.matches(in: text.scalars)
            guard !matches.isEmpty else { return }
            // HF: each match is removed and the content chars are "added": they all take the
            // alignment of the last removed char.
            var out = NormalizedText()
            var position = 0
            for match in matches {
                for i in position..<match.lowerBound { out.append(text.scalars[i], text.spans[i]) }
                let span = text.spans[match.upperBound - 1]
                for scalar in content { out.append(scalar, span) }
                position = match.upperBound
            }
            for i in position..<text.scalars.count { out.append(text.scalars[i], text.spans[i]) }
            text = out
        case .lowercase:
            var changes: [(UInt32, Int)] = []
            changes.reserveCapacity(text.scalars.count)
            var lowered: [UInt32] = []
            for scalar in text.scalars {
                lowered.removeAll(keepingCapacity: true)
                if let value = Unicode.Scalar(scalar) {
                    for s in value.properties.lowercaseMapping.unicodeScalars { lowered.append(s.value) }
                } else {
                    lowered.append(scalar)
                }
                for (k, s) in lowered.enumerated() { changes.append((s, k == 0 ? 0 : 1)) }
            }
            text.transform(changes, initialOffset: 0, pieceStart: pieceStart)
        case let .prepend(prefix):
            // HF prepends only to a non-empty string; the prefix takes the first char's alignment.
            guard edges.start, let first = text.spans.first, !prefix.isEmpty else { return }
            text.scalars.insert(contentsOf: prefix, at: 0)
            text.spans.insert(contentsOf: repeatElement(first, count: prefix.count), at: 0)
        case .nfd:
            guard text.scalars.contains(where: { $0 >= 0x80 }) else { return }
            Self.bert(BertNormalizer(cleanText: false, handleChineseChars: false, stripAccents: true,
                                     lowercase: false, keepsMarks: true), &text, pieceStart: pieceStart)
        case let .unicode(form):
            guard text.scalars.contains(where: { $0 >= UnicodeNormalization.unchangedBelow }) else { return }
            text.transform(UnicodeNormalization.changes(text.scalars, form: form), initialOffset: 0, pieceStart: pieceStart)
        case let .bert(normalizer):
            Self.bert(normalizer, &text, pieceStart: pieceStart)
        case .stripAccents:
            var kept = 0
            for i in text.scalars.indices where !Self.isCombiningMark(text.scalars[i]) {
                text.scalars[kept] = text.scalars[i]
                text.spans[kept] = text.spans[i]
                kept += 1
            }
            text.scalars.removeLast(text.scalars.count - kept)
            text.spans.removeLast(text.spans.count - kept)
        }
    }

    /// Runs BertNormalizer's pass over `text`, whose spans it keeps.
    private static func bert(_ normalizer: BertNormalizer, _ text: inout NormalizedText, pieceStart: Int) {
        var out = NormalizedText()
        var scratch = NormalizerScratch()
        text.scalars.withUnsafeBufferPointer { normalizer.normalize($0, 0..<$0.count, into: &out, scratch: &scratch) }
        // Its spans are indices into `text`: back to the original's.
        let empty = SourceSpan(start: text.spans.first?.start ?? pieceStart, end: text.spans.first?.start ?? pieceStart)
        for k in out.spans.indices {
            let span = out.spans[k]
            out.spans[k] = span.start == span.end || span.start >= text.spans.count ? empty : text.spans[span.start]
        }
        text = out
    }

    /// Whether a long text cut into chunks before plain spaces (a space between ASCII letters or
    /// digits) gives the same normalized chunks as the whole: true unless a Replace can touch
    /// such a space or letter, or change what the pre-tokenizer sees at the cut.
    var isChunkSafe: Bool {
        guard case let .replace(pattern, content) = self else { return true }
        func plain(_ c: UInt32) -> Bool {
            (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c)
        }
        func safe(_ pattern: ReplacePattern) -> Bool {
            switch pattern {
            case let .literal(literal):
                guard literal.count == 1 else { return false }
                return !plain(literal[0]) && (literal[0] != 0x20 || content == [0x20])
            case let .run(atom, minimum, _):
                let touchesPlain = (0x30...0x7A).contains { plain($0) && atom.contains($0) }
                return !touchesPlain && (!atom.contains(0x20) || minimum >= 2 || content == [0x20])
            case let .either(branches):
                return branches.allSatisfy(safe)
            }
        }
        return safe(pattern)
    }

    /// unicode-normalization's is_combining_mark (General_Category M), which HF's StripAccents drops;
    /// its tables are Unicode 9.0: marks assigned later are kept, and so is U+111C9 (Po until 11.0);
    /// U+1CF2 and U+1CF3 (Mc until 10.0) are dropped.
    static func isCombiningMark(_ value: UInt32) -> Bool {
        if value == 0x1CF2 || value == 0x1CF3 { return true }
        guard value >= 0x300, value != 0x111C9, let scalar = Unicode.Scalar(value),
              let age = scalar.properties.age, age.major <= 9 else { return false }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// Rust's char::is_whitespace: White_Space.
    static func isWhitespace(_ value: UInt32) -> Bool {
        UnicodeData.traits(value).contains(.whitespace)
    }
}

/// The pattern of a Replace normalizer: a literal string, or the regex shapes real tokenizers
/// use: runs of one character or class ("X{n,}", "X+", "X{n}", "\s{2,}", "[\n\r\t]"), and
/// alternatives of those ("\s{2,}|[\n\r\t]", DeBERTa-v3's), matched as the regex crate does:
/// leftmost, then the first alternative that matches there.
indirect enum ReplacePattern: Sendable {
    case literal([UInt32])
    case run(ScalarClass, minimum: Int, maximum: Int?)
    case either([ReplacePattern])

    /// The characters one regex atom stands for.
    enum ScalarClass: Sendable, Equatable {
        case one(UInt32)
        /// `\s`: Unicode White_Space, as the regex crate's.
        case whitespace
        /// `[...]` of characters and `\s`.
        case set([UInt32], whitespace: Bool)

        func contains(_ c: UInt32) -> Bool {
            switch self {
            case let .one(one): c == one
            case .whitespace: NormalizerStep.isWhitespace(c)
            case let .set(set, whitespace): set.contains(c) || (whitespace && NormalizerStep.isWhitespace(c))
            }
        }
    }

    /// Reads {"String": "..."} or {"Regex": "..."}; nil for a regex this reader does not know.
    init?(json: JSONValue) {
        if let literal = json["String"]?.string {
            guard !literal.isEmpty else { return nil }
            self = .literal(literal.unicodeScalars.map(\.value))
            return
        }
        guard let regex = json["Regex"]?.string else { return nil }
        var branches: [[Unicode.Scalar]] = [[]], depth = 0, escaped = false
        for scalar in regex.unicodeScalars {
            if !escaped && scalar == "|" && depth == 0 { branches.append([]); continue }
            if !escaped && scalar == "[" { depth += 1 }
            if !escaped && scalar == "]" { depth -= 1 }
            escaped = !escaped && scalar == "\\"
            branches[branches.count - 1].append(scalar)
        }
        let patterns = branches.map(Self.branch)
        guard !patterns.contains(where: { $0 == nil }) else { return nil }
        self = patterns.count == 1 ? patterns[0]! : .either(patterns.map { $0! })
    }

    /// One alternative: an atom (a character, an escape, `\s` or a bracket class), then an
    /// optional quantifier.
    private static func branch(_ regex: [Unicode.Scalar]) -> ReplacePattern? {
        var scalars = regex[...]
        /// An escaped character, or `\s`'s class (nil: an escape this reader does not know).
        func escape(_ escaped: Unicode.Scalar) -> ScalarClass? {
            switch escaped {
            case "t": .one(0x09)
            case "n": .one(0x0A)
            case "r": .one(0x0D)
            case "s": .whitespace
            case " ", ".", "-", "_", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "\\", "^", "$", "/": .one(escaped.value)
            default: nil
            }
        }
        guard let first = scalars.popFirst() else { return nil }
        let atom: ScalarClass
        switch first {
        case "\\":
            guard let escaped = scalars.popFirst(), let known = escape(escaped) else { return nil }
            atom = known
        case "[":
            var members: [UInt32] = [], whitespace = false
            while let next = scalars.popFirst(), next != "]" {
                switch next {
                case "\\":
                    guard let escaped = scalars.popFirst(), let known = escape(escaped) else { return nil }
                    if case let .one(c) = known { members.append(c) } else { whitespace = true }
                case "^", "-", "[": return nil  // negation, ranges and nested classes: not read
                default: members.append(next.value)
                }
            }
            guard regex.contains("]"), !members.isEmpty || whitespace else { return nil }
            atom = .set(members, whitespace: whitespace)
        case "(", ")", "]", "{", "}", "|", ".", "*", "+", "?", "^", "$":
            return nil
        default:
            atom = .one(first.value)
        }
        let quantifier = String(String.UnicodeScalarView(scalars))
        if quantifier.isEmpty {
            if case let .one(c) = atom { return .literal([c]) }
            return .run(atom, minimum: 1, maximum: 1)
        }
        if quantifier == "+" { return .run(atom, minimum: 1, maximum: nil) }
        guard quantifier.hasPrefix("{"), quantifier.hasSuffix("}") else { return nil }
        let parts = quantifier.dropFirst().dropLast().split(separator: ",", omittingEmptySubsequences: false)
        guard let low = Int(parts[0]), low >= 1 else { return nil }
        if parts.count == 1 { return .run(atom, minimum: low, maximum: low) }
        if parts.count == 2, parts[1].isEmpty { return .run(atom, minimum: low, maximum: nil) }
        return nil
    }

    /// The length of the match starting at `i`, or nil (runs are greedy).
    func match(at i: Int, in scalars: [UInt32]) -> Int? {
        switch self {
        case let .literal(pattern):
            guard i + pattern.count <= scalars.count, scalars[i] == pattern[0],
                  scalars[i..<(i + pattern.count)].elementsEqual(pattern) else { return nil }
            return pattern.count
        case let .run(atom, minimum, maximum):
            var end = i
            while end < scalars.count && atom.contains(scalars[end]) && (maximum.map { end - i < $0 } ?? true) { end += 1 }
            return end - i >= minimum ? end - i : nil
        case let .either(branches):
            for branch in branches { if let length = branch.match(at: i, in: scalars) { return length } }
            return nil
        }
    }

    /// Non-overlapping matches, left to right.
    func matches(in scalars: [UInt32]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        while i < scalars.count {
            if let length = match(at: i, in: scalars), length > 0 {
                out.append(i..<(i + length))
                i += length
            } else {
                i += 1
            }
        }
        return out
    }
}

extension NormalizedText {
    /// HF's NormalizedString::transform over the whole text, one entry per new scalar:
    /// change 0 replaces the next old scalar (and takes its alignment), -n replaces it and
    /// removes n more, +1 inserts a scalar with the alignment of the old scalar before the
    /// cursor (an empty span at the piece start when there is none). Old scalars never
    /// consumed are dropped, as in HF.
    mutating func transform(_ changes: [(UInt32, Int)], initialOffset: Int, pieceStart: Int) {
        var out = NormalizedText()
        out.scalars.reserveCapacity(changes.count)
        out.spans.reserveCapacity(changes.count)
        var cursor = initialOffset
        let empty = SourceSpan(start: pieceStart, end: pieceStart)
        for (scalar, change) in changes {
            let span: SourceSpan
            if change > 0 {
                span = cursor >= 1 && cursor - 1 < spans.count ? spans[cursor - 1] : empty
            } else {
                span = cursor < spans.count ? spans[cursor] : (spans.last ?? empty)
                cursor += 1 - change
            }
            out.append(scalar, span)
        }
        self = out
    }
}
