import Foundation

/// Hugging Face's aggregation strategies for token classification.
public enum AggregationStrategy: String, Sendable, CaseIterable {
    /// Every token with its best label (the "O" ones left out).
    case none
    /// Adjacent tokens with the same entity type grouped (a B- starts a new group).
    case simple
    /// As simple, words first labelled by their first token.
    case first
    /// As simple, words first labelled by the average of their tokens' scores.
    case average
    /// As simple, words first labelled by their most confident token.
    case max
}

/// One entity found in a text, with code-point offsets into it (as Python counts).
public struct Entity: Sendable, Equatable {
    /// The label ("B-PER") with strategy none; the entity type ("PER") otherwise.
    public let label: String
    public let score: Float
    public let word: String
    public let start: Int
    public let end: Int
    /// The token's position in the encoded sequence (strategy none only).
    public let index: Int?
}

/// Named-entity recognition and other token labelling: a *ForTokenClassification checkpoint,
/// with the token-classification pipeline's post-processing of transformers.
public final class TokenClassifier: ModelPipeline, @unchecked Sendable {
    /// The encoder, loaded from the model folder.
    public let model: any EncoderModel
    /// The model's tokenizer, from its tokenizer.json (or vocab.txt).
    public let tokenizer: Tokenizer
    public let head: TokenClassificationHead
    public let labels: [String]
    /// Labels that are not entities (HF's ignore_labels default).
    public var ignoredLabels: Set<String> = ["O"]

    public init(model: any EncoderModel, tokenizer: Tokenizer) throws {
        head = try TokenClassificationHead(model)
        labels = head.labels
        (self.model, self.tokenizer) = (model, tokenizer)
    }

    /// Entities of each text, in text order. Texts longer than the model's limit are cut (their
    /// entities found in what is kept) or refused as `truncation` says.
    public func entities(_ texts: [String], aggregation: AggregationStrategy = .simple, batchSize: Int = 32,
                         truncation: Truncation = Truncation()) throws -> [[Entity]] {
        let encodings = try tokenizer.encode(texts, limit: model.config.encoder.maxSequenceLength, truncation: truncation)
        var result = [[Entity]](repeating: [], count: texts.count)
        for start in stride(from: 0, to: texts.count, by: max(1, batchSize)) {
            let chunk = Array(start..<min(start + max(1, batchSize), texts.count))
            let output = try model.encode(chunk.map { encodings[$0].ids }, typeIds: chunk.map { encodings[$0].typeIds })
            let logits = head(output, HeadBatch(threads: model.threads))
            for (s, index) in chunk.enumerated() {
                let scores = logits[s].map(softmax)
                result[index] = entities(texts[index], encodings[index], scores, aggregation)
            }
        }
        return result
    }

    /// One token before aggregation (HF's pre_entity).
    struct Piece {
        var word: String
        var scores: [Float]
        var start: Int
        var end: Int
        var index: Int
        var isSubword: Bool
    }

    func entities(_ text: String, _ encoding: Encoding, _ scores: [[Float]], _ strategy: AggregationStrategy) -> [Entity] {
        let scalars = Array(text.unicodeScalars)
        var pieces: [Piece] = []
        // WordPiece marks continuations with "##" (HF: the model has a continuing_subword_prefix);
        // Unigram and byte-level BPE mark word starts instead.
        let marksContinuations = !tokenizer.marksWordStarts
        // The tokens the template added are skipped (HF's special_tokens_mask); a special token
        // written in the text is a token like any other, as in HF's pipeline.
        for t in 0..<encoding.count where encoding.specialTokensMask[t] == 0 {
            let range = encoding.offsets[t]
            let lower = Swift.min(range.lowerBound, scalars.count), upper = Swift.min(range.upperBound, scalars.count)
            let original = String(String.UnicodeScalarView(scalars[lower..<upper]))
            var word = encoding.tokens[t]
            // With continuation marks, a token whose text differs in length from what it covers is
            // a sub-word (HF's test, in code points); without (HF's "fallback heuristic"), a token
            // continues a word unless it starts the text or a space is just before it or at its start.
            var isSubword = marksContinuations
                ? word.unicodeScalars.count != upper - lower
                : lower > 0 && scalars[lower - 1] != " " && (lower >= scalars.count || scalars[lower] != " ")
            if encoding.ids[t] == tokenizer.unkId { word = original; isSubword = false }
            pieces.append(Piece(word: word, scores: scores[t], start: range.lowerBound, end: range.upperBound, index: t, isSubword: isSubword))
        }
        var labelled: [Entity]
        switch strategy {
        case .none, .simple:
            labelled = pieces.map { piece in
                let best = argmax(piece.scores)
                return Entity(label: labels[best], score: piece.scores[best], word: piece.word, start: piece.start, end: piece.end, index: piece.index)
            }
        case .first, .average, .max:
            var words: [[Piece]] = []
            for piece in pieces {
                if piece.isSubword, !words.isEmpty { words[words.count - 1].append(piece) } else { words.append([piece]) }
            }
            labelled = words.map { aggregateWord($0, strategy) }
        }
        if strategy != .none { labelled = group(labelled) }
        return labelled.filter { !ignoredLabels.contains($0.label) }
    }

    func aggregateWord(_ pieces: [Piece], _ strategy: AggregationStrategy) -> Entity {
        let word = tokenizer.convertTokensToString(pieces.map(\.word))
        let scores: [Float]
        switch strategy {
        case .max:
            // The piece whose best score is highest (the first of equals, as Python's max).
            var best = pieces[0]
            for piece in pieces.dropFirst() where piece.scores.max()! > best.scores.max()! { best = piece }
            scores = best.scores
        case .average:
            scores = (0..<pieces[0].scores.count).map { j in pieces.reduce(Float(0)) { $0 + $1.scores[j] } / Float(pieces.count) }
        default:
            scores = pieces[0].scores
        }
        let best = argmax(scores)
        return Entity(label: labels[best], score: scores[best], word: word, start: pieces[0].start, end: pieces.last!.end, index: nil)
    }

    /// HF's group_entities: adjacent entities of one type join unless the next one is a B-.
    func group(_ entities: [Entity]) -> [Entity] {
        func tag(_ label: String) -> (bi: String, type: String) {
            if label.hasPrefix("B-") { return ("B", String(label.dropFirst(2))) }
            if label.hasPrefix("I-") { return ("I", String(label.dropFirst(2))) }
            return ("I", label)
        }
        var groups: [[Entity]] = []
        for entity in entities {
            if let last = groups.last?.last {
                let (bi, type) = tag(entity.label)
                if type == tag(last.label).type && bi != "B" { groups[groups.count - 1].append(entity); continue }
            }
            groups.append([entity])
        }
        return groups.map { members in
            // The type after the first "-" of the first member's label (split("-", 1)[-1]).
            let first = members[0].label
            let type = first.firstIndex(of: "-").map { String(first[first.index(after: $0)...]) } ?? first
            let score = members.reduce(Float(0)) { $0 + $1.score } / Float(members.count)
            return Entity(label: type, score: score, word: tokenizer.convertTokensToString(members.map(\.word)),
                          start: members[0].start, end: members.last!.end, index: nil)
        }
    }
}

func argmax(_ values: [Float]) -> Int {
    var best = 0
    for i in values.indices where values[i] > values[best] { best = i }
    return best
}
