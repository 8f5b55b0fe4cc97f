/// How a pipeline fits a text to the model's token limit: TEI's `truncate` and
/// `truncation_direction`, the same for every task (embed, classify, rerank, ner).
public struct Truncation: Sendable, Equatable {
    /// false: a text longer than the limit is refused with a typed error naming it, not cut.
    public var truncates: Bool
    /// true: a long text loses its start; false: its end; nil: as the model's tokenizer.json says.
    public var fromLeft: Bool?

    public init(truncates: Bool = true, fromLeft: Bool? = nil) {
        (self.truncates, self.fromLeft) = (truncates, fromLeft)
    }
}

extension Tokenizer {
    /// Each text (with its pair, if any) framed and fitted to `limit` tokens as `truncation` says;
    /// the first `keepingStart` scalars of each (its prompt) are never cut from the left.
    /// Throws, naming the first input that is too long, when truncation is off.
    func encode(_ texts: [String], pairs: [String]? = nil, limit: Int, truncation: Truncation, keepingStart: Int = 0) throws -> [Encoding] {
        let encodings = texts.indices.map {
            encode(texts[$0], pair: pairs?[$0], maxLength: limit, truncatesLeft: truncation.fromLeft, keepingStart: keepingStart)
        }
        if !truncation.truncates, let long = encodings.firstIndex(where: \.wasTruncated) {
            throw SwiftBERTError.invalidInput(reason: "input \(long) is longer than \(limit) tokens, the limit; shorten it or allow truncation")
        }
        return encodings
    }
}
