import Foundation

/// Suggestions as {"suggestions": [{"word", "kind", "score"}]} or as a ranked list for people.
package enum SuggestionReport {
    package static func json(_ suggestions: [Suggestion]) -> OrderedJSON {
        .object([("suggestions", .array(suggestions.map {
            .object([("word", .string($0.word)), ("kind", .string($0.kind.rawValue)), ("score", .float($0.score))])
        }))])
    }

    /// "  1. world       completion  0.0123" lines, or a note that there is none.
    package static func text(_ suggestions: [Suggestion]) -> String {
        guard !suggestions.isEmpty else { return "(no suggestions)\n" }
        let width = suggestions.map(\.word.count).max() ?? 0
        return suggestions.enumerated().map { rank, s in
            "  \(String(rank + 1).leftPadded(to: 2)). \(s.word.rightPadded(to: width))  \(s.kind.rawValue.rightPadded(to: 10))  \(String(format: "%.4g", Double(s.score)))\n"
        }.joined()
    }
}
