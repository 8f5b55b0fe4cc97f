import Foundation

/// What the user has typed so far, split where suggestions apply: the context before the word
/// being typed, and the letters of that word typed so far.
public struct TypedText: Equatable, Sendable {
    /// Everything before the word being typed.
    public let context: Substring
    /// The word being typed; empty when the text ends in whitespace or punctuation (or is empty).
    public let partial: Substring
    /// Whether a sentence begins at the word: nothing before it but opening quotes or brackets,
    /// or a full stop, ! ? … or a line break.
    public let startsSentence: Bool

    /// `extendsAcross` says whether the word could go on past an inner apostrophe or hyphen
    /// ("O'Br" when O'Brien is a known word): asked with the folded letters, only when the text has one.
    public init(_ text: String, extendsAcross: (String) -> Bool = { _ in false }) {
        var start = text.endIndex
        while start > text.startIndex, isWordCharacter(text[text.index(before: start)]) {
            start = text.index(before: start)
        }
        // A word joined by ' or - (O'Brien, e-mail) stays one word when the index knows such a word;
        // otherwise the mark ends the word, as BERT's pre-tokenizer splits there.
        while start < text.endIndex, start > text.startIndex {
            let mark = text.index(before: start)
            guard innerMarks.contains(text[mark]), mark > text.startIndex,
                  isWordCharacter(text[text.index(before: mark)]) else { break }
            var head = mark
            while head > text.startIndex, isWordCharacter(text[text.index(before: head)]) { head = text.index(before: head) }
            guard extendsAcross(foldedWord(text[head...])) else { break }
            start = head
        }
        context = text[..<start]
        partial = text[start...]
        startsSentence = Self.startsSentence(after: context)
    }

    /// Sentence start: nothing before the word, or a sentence end or line break, looking past
    /// spaces and opening quotes or brackets.
    static func startsSentence(after context: Substring) -> Bool {
        var rest = context
        while let last = rest.last, last.isWhitespace || openers.contains(last) {
            if last.isNewline { return true }
            rest = rest.dropLast()
        }
        guard let last = rest.last else { return true }
        return sentenceEnds.contains(last)
    }

    private static let openers: Set<Character> = ["(", "[", "{", "\"", "'", "“", "‘", "«", "¿", "¡"]
    private static let sentenceEnds: Set<Character> = [".", "!", "?", "…"]
}

/// Letters, digits and combining marks make words; everything else (spaces, punctuation,
/// symbols) separates them, as in BERT's pre-tokenizer.
func isWordCharacter(_ c: Character) -> Bool {
    c.isLetter || c.isNumber || c.unicodeScalars.allSatisfy { $0.properties.generalCategory == .nonspacingMark }
}

/// Apostrophes and hyphens that may join a user's word (O'Brien, e-mail).
let innerMarks: Set<Character> = ["'", "’", "-"]

/// The form words are indexed and matched under: lowercase, without accents, so "Café", "cafe"
/// and "CAFÉ" are one word, as an uncased BERT vocabulary sees them.
func foldedWord<S: StringProtocol>(_ word: S) -> String {
    // ASCII needs no accent folding, and Foundation's folding is slow for the recent-word count.
    if word.utf8.allSatisfy({ $0 < 0x80 }) { return word.lowercased() }
    return String(word).folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
}

/// How the user writes the word being typed, which the suggestions follow.
enum TypedCasing: Equatable {
    /// Keep the word's own spelling (lowercase for an uncased vocabulary, "iPhone" for a user's word).
    case asSpelled
    /// A capital first letter: typed so, or the first word of a sentence.
    case capitalized
    /// Two or more letters typed, all capitals.
    case upper

    init(partial: Substring, startsSentence: Bool) {
        let letters = partial.filter(\.isLetter)
        if letters.count >= 2, letters.allSatisfy(\.isUppercase) {
            self = .upper
        } else if let first = letters.first {
            self = first.isUppercase ? .capitalized : .asSpelled
        } else {
            // Nothing typed yet: a capital at sentence start, as a keyboard's automatic shift.
            self = startsSentence ? .capitalized : .asSpelled
        }
    }

    func apply(to word: String) -> String {
        switch self {
        case .asSpelled: return word
        case .upper: return word.uppercased()
        case .capitalized:
            // Only a word spelt all in lowercase gets the capital: "iPhone" and "McDonald" stay.
            guard let first = word.first, word == word.lowercased() else { return word }
            return first.uppercased() + word.dropFirst()
        }
    }
}
