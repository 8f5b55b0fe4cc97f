import SwiftBERT
/// The --json shapes of `bert classify`, `bert rerank` and `bert ner` (issue 15), and their
/// plain-text tables.
package enum ClassificationReport {
    /// "labels": [{"label", "score"}], best first: `bert classify` writes one line per input, in
    /// input order, `{"index", "labels"}`.
    package static func fields(_ labels: [LabelScore]) -> [(String, OrderedJSON)] {
        [("labels", .array(labels.map { .object([("label", .string($0.label)), ("score", .float($0.score))]) }))]
    }

    /// "label  0.9123" lines, then a blank line.
    package static func text(_ labels: [LabelScore]) -> String {
        let width = labels.map(\.label.count).max() ?? 0
        return labels.map { "\($0.label.rightPadded(to: width))  \(String(format: "%.4f", Double($0.score)))\n" }.joined() + "\n"
    }
}

package enum RerankReport {
    /// {"query", "results": [{"index", "score", "text"}]}, best first.
    package static func json(query: String, _ results: [Reranker.Result]) -> OrderedJSON {
        .object([("query", .string(query)), ("results", .array(results.map {
            .object([("index", .int($0.index)), ("score", .float($0.score)), ("text", .string($0.text))])
        }))])
    }

    package static func text(_ results: [Reranker.Result]) -> String {
        results.map { "\(String(format: "%.4f", Double($0.score)))  [\($0.index)] \(singleLine($0.text))\n" }.joined()
    }
}

package enum EntityReport {
    /// "entities": [...] (`bert ner` writes one line per input, `{"index", "entities"}`): each
    /// entity as the token-classification pipeline gives it, {"entity_group", "score", "word",
    /// "start", "end"}, or with strategy none {"entity", "score", "index", "word", "start", "end"}
    /// (that index is the token's).
    package static func fields(_ entities: [Entity]) -> [(String, OrderedJSON)] {
        [("entities", .array(entities.map { entity in
            var fields: [(String, OrderedJSON)] = [(entity.index == nil ? "entity_group" : "entity", .string(entity.label)),
                                                    ("score", .float(entity.score))]
            if let token = entity.index { fields.append(("index", .int(token))) }
            fields += [("word", .string(entity.word)), ("start", .int(entity.start)), ("end", .int(entity.end))]
            return .object(fields)
        }))]
    }

    package static func text(_ entities: [Entity]) -> String {
        entities.map { "\($0.label)\t\(String(format: "%.4f", Double($0.score)))\t\($0.start)-\($0.end)\t\($0.word)\n" }.joined() + "\n"
    }
}
