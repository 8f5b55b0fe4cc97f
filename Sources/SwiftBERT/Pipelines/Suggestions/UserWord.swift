import Foundation

/// A word of the user's own (a name, a term of their trade), with how often they write it when known.
public struct UserWord: Sendable, Equatable, Hashable {
    public var word: String
    /// Times the user wrote it: makes the suggester's frequency prior. nil for a plain word list.
    public var count: Int?

    public init(_ word: String, count: Int? = nil) {
        (self.word, self.count) = (word, count)
    }

    /// A word list: one word per line, optionally followed by whitespace and a count
    /// ("Kubernetes 12"). Blank lines and lines starting with # are skipped.
    public static func readList(_ url: URL) throws -> [UserWord] {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw SwiftBERTError.fileNotFound(path: url.path, hint: "Give a word list: one word per line, optionally followed by a count.")
        }
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw SwiftBERTError.invalidInput(reason: "\(url.path) is not readable UTF-8 text")
        }
        return try parseList(text, source: url.path)
    }

    static func parseList(_ text: String, source: String) throws -> [UserWord] {
        var words: [UserWord] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard let word = fields.first, !word.hasPrefix("#") else { continue }
            guard fields.count <= 2 else {
                throw SwiftBERTError.invalidInput(reason: "line \(n + 1) of \(source): one word per line, optionally followed by a count")
            }
            var count: Int?
            if fields.count == 2 {
                guard let value = Int(fields[1]), value >= 0 else {
                    throw SwiftBERTError.invalidInput(reason: "line \(n + 1) of \(source): \"\(fields[1])\" is not a count (a whole number of times)")
                }
                count = value
            }
            words.append(UserWord(String(word), count: count))
        }
        return words
    }

    /// The words of a text the user wrote, counted: a frequency list from their own writing.
    /// Words are runs of letters; each is spelt in lowercase unless the text never writes it so
    /// (names, acronyms), so a capital at a sentence start does not stick to a word.
    public static func counted(in text: String) -> [UserWord] {
        var counts: [String: Int] = [:]
        var spellings: [String: [String: Int]] = [:]
        for token in text.split(whereSeparator: { !$0.isLetter }) {
            let word = String(token), key = word.lowercased()
            counts[key, default: 0] += 1
            spellings[key, default: [:]][word, default: 0] += 1
        }
        return counts.keys.sorted().map { key in
            let forms = spellings[key]!
            let spelling = forms[key] != nil ? key
                : forms.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }!.key
            return UserWord(spelling, count: counts[key]!)
        }
    }
}
