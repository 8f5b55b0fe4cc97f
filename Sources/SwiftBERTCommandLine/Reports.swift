import Foundation
import SwiftBERT

// The text and JSON shapes of the `bert` command's outputs, here so that a Swift program
// printing the same results prints them the same way.

/// Writes tokenizations one input at a time: a tab-separated table (token, id, start, end;
/// offsets in Unicode code points, a blank line between inputs) or JSON Lines
/// ({"index", "tokens", "ids", "offsets": [[start, end], ...]}).
package final class TokenizationWriter {
    package let json: Bool
    package let sink: OutputSink
    private var count = 0

    package init(json: Bool, sink: OutputSink) {
        (self.json, self.sink) = (json, sink)
    }

    package func write(index: Int, encoding: Encoding) throws {
        defer { count += 1 }
        if json {
            let object = OrderedJSON.object([
                ("index", .int(index)),
                ("tokens", .array(encoding.tokens.map { .string($0) })),
                ("ids", .array(encoding.ids.map { .int(Int($0)) })),
                ("offsets", .array(encoding.offsets.map { .array([.int($0.lowerBound), .int($0.upperBound)]) })),
            ])
            var bytes: [UInt8] = []
            object.write(into: &bytes)
            bytes.append(0x0A)
            return try sink.write(bytes)
        }
        var text = count > 0 ? "\n" : ""
        for i in encoding.ids.indices {
            let offset = i < encoding.offsets.count ? encoding.offsets[i] : 0..<0
            text += "\(encoding.tokens[i])\t\(encoding.ids[i])\t\(offset.lowerBound)\t\(offset.upperBound)\n"
        }
        try sink.write(text)
    }
}

/// Fill-mask results as {"masks": [{"position", "candidates": [{"token", "id", "probability"}]}]}
/// or as a ranked list per [MASK] for people.
package enum FillMaskReport {
    package static func json(_ predictions: [FillMask.Prediction]) -> OrderedJSON {
        .object([("masks", .array(predictions.map { prediction in
            .object([
                ("position", .int(prediction.position)),
                ("candidates", .array(prediction.candidates.map {
                    .object([("token", .string($0.token)), ("id", .int(Int($0.id))), ("probability", .float($0.probability))])
                })),
            ])
        }))])
    }

    /// "[MASK] 1 of 1 (token 6)" then "  1. paris   41.23%" lines; `maskToken` is the model's own
    /// (<mask> for RoBERTa and XLM-R).
    package static func text(_ predictions: [FillMask.Prediction], maskToken: String = "[MASK]") -> String {
        var out = ""
        for (n, prediction) in predictions.enumerated() {
            out += "\(maskToken) \(n + 1) of \(predictions.count) (token \(prediction.position))\n"
            if prediction.candidates.isEmpty { out += "  (no candidate passes the filters)\n" }
            let width = prediction.candidates.map(\.token.count).max() ?? 0
            for (rank, candidate) in prediction.candidates.enumerated() {
                let percent = String(format: "%6.2f%%", Double(candidate.probability) * 100)
                out += "  \(String(rank + 1).leftPadded(to: 2)). \(candidate.token.rightPadded(to: width))  \(percent)\n"
            }
        }
        return out
    }
}

/// Cosine similarity of every pair of vectors.
package func similarityMatrix(_ vectors: [[Float]]) -> [[Float]] {
    vectors.map { a in vectors.map { b in cosineSimilarity(a, b) } }
}

package enum SimilarityReport {
    /// {"texts": [...], "matrix": [[...], ...]}
    package static func json(texts: [String], matrix: [[Float]]) -> OrderedJSON {
        .object([("texts", .array(texts.map { .string($0) })),
                 ("matrix", .array(matrix.map { .array($0.map { .float($0) }) }))])
    }

    /// A table with 4-decimal scores, one row per text, labelled with its number and start.
    package static func text(texts: [String], matrix: [[Float]]) -> String {
        let header = "     " + texts.indices.map { "[\($0 + 1)]".leftPadded(to: 8) }.joined()
        var out = header + "\n"
        for (i, row) in matrix.enumerated() {
            out += "[\(i + 1)]".rightPadded(to: 5)
            out += row.map { String(format: "%8.4f", Double($0)) }.joined()
            out += "   " + abbreviate(texts[i], to: 40) + "\n"
        }
        return out
    }
}

package enum SearchReport {
    /// {"query", "results": [{"index", "line", "score", "text"}]}
    package static func json(query: String, hits: [SearchHit]) -> OrderedJSON {
        .object([("query", .string(query)), ("results", .array(hits.map {
            .object([("index", .int($0.index)), ("line", .int($0.line)), ("score", .float($0.score)), ("text", .string($0.text))])
        }))])
    }

    /// "score<TAB>line<TAB>text" per hit, best first.
    package static func text(hits: [SearchHit]) -> String {
        hits.map { String(format: "%.4f", Double($0.score)) + "\t\($0.line)\t" + oneLine($0.text) + "\n" }.joined()
    }
}

/// The text on one line: newlines and tabs as spaces, so a table row stays a row.
func oneLine(_ text: String) -> String {
    String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
}

func abbreviate(_ text: String, to width: Int) -> String {
    let flat = oneLine(text)
    return flat.count <= width ? flat : String(flat.prefix(width - 1)) + "…"
}
