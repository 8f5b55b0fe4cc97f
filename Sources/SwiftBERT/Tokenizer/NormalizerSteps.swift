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
        switch pattern {
        case let .literal(literal):
            guard literal.count == 1 else { return false }
            return !plain(literal[0]) && (literal[0] != 0x20 || content == [0x20])
        case let .run(c, minimum, _):
            return !plain(c) && (c != 0x20 || minimum >= 2 || content == [0x20])
        }
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

/// The pattern of a Replace normalizer: a literal string, or the one regex shape real
/// tokenizers use ("X{n,}", "X+", "X{n}": runs of one character).
enum ReplacePattern: Sendable {
    case literal([UInt32])
    case run(UInt32, minimum: Int, maximum: Int?)

    /// Reads {"String": "..."} or {"Regex": "..."}; nil for a regex this reader does not know.
    init?(json: JSONValue) {
        if let literal = json["String"]?.string {
            guard !literal.isEmpty else { return nil }
            self = .literal(literal.unicodeScalars.map(\.value))
            return
        }
        guard let regex = json["Regex"]?.string else { return nil }
        var scalars = Array(regex.unicodeScalars)
        guard !scalars.isEmpty else { return nil }
        var character = scalars.removeFirst()
        if character == "\\" {
            guard !scalars.isEmpty else { return nil }
            let escaped = scalars.removeFirst()
            switch escaped {
            case "t": character = "\t"
            case "n": character = "\n"
            case "r": character = "\r"
            case " ", ".", "-", "_", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "\\", "^", "$", "/": character = escaped
            default: return nil
            }
        } else if "()[]{}|.*+?^$\\".unicodeScalars.contains(character) {
            return nil
        }
        let quantifier = String(String.UnicodeScalarView(scalars))
        if quantifier.isEmpty {
            self = .literal([character.value])
        } else if quantifier == "+" {
            self = .run(character.value, minimum: 1, maximum: nil)
        } else if quantifier.hasPrefix("{"), quantifier.hasSuffix("}") {
            let body = quantifier.dropFirst().dropLast()
            let parts = body.split(separator: ",", omittingEmptySubsequences: false)
            guard let low = Int(parts[0]), low >= 1 else { return nil }
            if parts.count == 1 {
                self = .run(character.value, minimum: low, maximum: low)
            } else if parts.count == 2, parts[1].isEmpty {
                self = .run(character.value, minimum: low, maximum: nil)
            } else {
                return nil
            }
        } else {
            return nil
        }
    }

    /// Non-overlapping matches, left to right (greedy runs).
    func matches(in scalars: [UInt32]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        switch self {
        case let .literal(pattern):
            while i + pattern.count <= scalars.count {
                if scalars[i] == pattern[0] && scalars[i..<(i + pattern.count)].elementsEqual(pattern) {
                    out.append(i..<(i + pattern.count))
                    i += pattern.count
                } else {
                    i += 1
                }
            }
        case let .run(character, minimum, maximum):
            while i < scalars.count {
                guard scalars[i] == character else { i += 1; continue }
                var end = i
                while end < scalars.count && scalars[end] == character { end += 1 }
                var start = i
                // A bounded run {n} matches n at a time; an unbounded one takes it all.
                while end - start >= minimum {
                    let length = maximum.map { min($0, end - start) } ?? (end - start)
                    out.append(start..<(start + length))
                    start += length
                    if maximum == nil { break }
                }
                i = end
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
