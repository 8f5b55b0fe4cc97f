/// A token of tokenizer.json's "added_tokens" list ([CLS], [MASK], ... or user additions).
struct AddedToken: Sendable, Equatable {
    var id: Int32
    var content: String
    var singleWord = false
    var lstrip = false
    var rstrip = false
    /// Matched on the normalized text if true, on the raw text if false (HF's rule).
    var normalized = false
    /// Skipped by `decode(skipSpecialTokens: true)`.
    var special = true
}

/// One piece of a split text: either plain text to tokenize, or an added token found in it.
struct TextPiece {
    var range: Range<Int>
    var addedTokenId: Int32?
}

/// Finds added tokens in a scalar sequence the way HF's AddedVocabulary does: Aho-Corasick
/// leftmost-longest matches, then the single_word, lstrip and rstrip rules on each match.
struct AddedTokenMatcher: Sendable {
    private struct Pattern: Sendable {
        var scalars: [UInt32]
        var token: AddedToken
    }
    /// Patterns by first scalar, longest first.
    private let patternsByFirstScalar: [UInt32: [Pattern]]
    /// Cheap filters before the dictionary: which ASCII scalars start a pattern, and whether any
    /// non-ASCII one does.
    private let asciiFirstScalars: [Bool]
    private let hasNonASCIIFirstScalar: Bool

    var isEmpty: Bool { patternsByFirstScalar.isEmpty }

    /// `contents[i]` is what to look for (the token's content, normalized for normalized tokens).
    init(tokens: [AddedToken], contents: [[UInt32]]) {
        var byFirst: [UInt32: [Pattern]] = [:]
        var seen = Set<[UInt32]>()
        for (token, scalars) in zip(tokens, contents) where !scalars.isEmpty && seen.insert(scalars).inserted {
            byFirst[scalars[0], default: []].append(Pattern(scalars: scalars, token: token))
        }
        patternsByFirstScalar = byFirst.mapValues { $0.sorted { $0.scalars.count > $1.scalars.count } }
        asciiFirstScalars = (0..<128).map { byFirst[UInt32($0)] != nil }
        hasNonASCIIFirstScalar = byFirst.keys.contains { $0 >= 128 }
    }

    /// Splits `text[range]` into plain pieces and added tokens; the pieces cover the range.
    func split(_ text: UnsafeBufferPointer<UInt32>, _ range: Range<Int>, into pieces: inout [TextPiece]) {
        // Most tokenizers have no added token of one kind: one plain piece, without scanning.
        if isEmpty {
            pieces.append(TextPiece(range: range, addedTokenId: nil))
            return
        }
        var pieceStart = range.lowerBound
        var position = range.lowerBound
        while position < range.upperBound {
            guard let (pattern, matchEnd) = longestMatch(text, at: position, end: range.upperBound) else {
                position += 1
                continue
            }
            let token = pattern.token
            var start = position
            var stop = matchEnd
            position = matchEnd
            if token.singleWord {
                let wordBefore = start > range.lowerBound && Self.isWordScalar(text[start - 1])
                let wordAfter = stop < range.upperBound && Self.isWordScalar(text[stop])
                if wordBefore || wordAfter { continue }
            }
            if token.lstrip {
                while start > pieceStart && Self.isWhitespace(text[start - 1]) { start -= 1 }
            }
            if token.rstrip {
                while stop < range.upperBound && Self.isWhitespace(text[stop]) { stop += 1 }
                position = stop
            }
            if pieceStart < start { pieces.append(TextPiece(range: pieceStart..<start, addedTokenId: nil)) }
            pieces.append(TextPiece(range: start..<stop, addedTokenId: token.id))
            pieceStart = stop
        }
        if pieceStart < range.upperBound || range.isEmpty {
            pieces.append(TextPiece(range: pieceStart..<range.upperBound, addedTokenId: nil))
        }
    }

    private func longestMatch(_ text: UnsafeBufferPointer<UInt32>, at position: Int, end: Int) -> (Pattern, Int)? {
        let first = text[position]
        if first < 128 ? !asciiFirstScalars[Int(first)] : !hasNonASCIIFirstScalar { return nil }
        guard let candidates = patternsByFirstScalar[first] else { return nil }
        for pattern in candidates where pattern.scalars.count <= end - position {
            var k = 1
            while k < pattern.scalars.count && text[position + k] == pattern.scalars[k] { k += 1 }
            if k == pattern.scalars.count { return (pattern, position + k) }
        }
        return nil
    }

    /// Rust regex `\s`: White_Space.
    private static func isWhitespace(_ value: UInt32) -> Bool {
        UnicodeData.traits(value).contains(.whitespace)
    }

    /// Rust regex `\w`: Alphabetic, marks, decimal digits, connector punctuation, join controls.
    private static func isWordScalar(_ value: UInt32) -> Bool {
        guard let scalar = Unicode.Scalar(value) else { return false }
        let properties = scalar.properties
        if properties.isAlphabetic || properties.isJoinControl { return true }
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
        default: return false
        }
    }
}
