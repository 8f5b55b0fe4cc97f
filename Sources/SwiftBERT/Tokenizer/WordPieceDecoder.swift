/// HF's WordPiece decoder: "##" pieces join the previous token, others get a space before
/// them, and with cleanup each token loses the space HF puts before punctuation and clitics.
struct WordPieceDecoder: Sendable {
    var prefix = "##"
    var cleanup = true

    func decode(_ tokens: [String]) -> String {
        var text = ""
        for (i, token) in tokens.enumerated() {
            var piece: String
            if i == 0 {
                piece = token
            } else if !prefix.isEmpty, token.unicodeScalars.starts(with: prefix.unicodeScalars) {
                // Rust's replacen(prefix, "", 1): the first occurrence, which is this prefix.
                piece = String(token.unicodeScalars.dropFirst(prefix.unicodeScalars.count))
            } else {
                piece = " " + token
            }
            if cleanup { piece = Self.cleanUp(piece) }
            text += piece
        }
        return text
    }

    /// HF applies these replacements to each token (with its leading space), in this order.
    private static let replacements: [(String, String)] = [
        (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
        (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
    ]

    static func cleanUp(_ piece: String) -> String {
        guard piece.utf8.contains(0x20) else { return piece }  // every pattern has a space
        var piece = piece
        for (pattern, replacement) in replacements {
            piece = piece.replacingAll(pattern, with: replacement)
        }
        return piece
    }
}

extension String {
    /// Replaces every non-overlapping occurrence, left to right, comparing Unicode scalars
    /// (as Rust's str::replace compares bytes), not Swift Characters.
    func replacingAll(_ pattern: String, with replacement: String) -> String {
        let source = Array(unicodeScalars)
        let target = Array(pattern.unicodeScalars)
        guard source.count >= target.count else { return self }
        var result = String.UnicodeScalarView()
        var i = 0
        while i < source.count {
            if i + target.count <= source.count, source[i..<(i + target.count)].elementsEqual(target) {
                result.append(contentsOf: replacement.unicodeScalars)
                i += target.count
            } else {
                result.append(source[i])
                i += 1
            }
        }
        return String(result)
    }
}
