import Foundation

/// Labels chosen at call time, through a natural-language-inference classifier (an NLI
/// *ForSequenceClassification checkpoint with an "entailment" label: DeBERTa-v3 MNLI, BART-MNLI's
/// kind): each text is the premise, and "This example is {label}." the hypothesis of one pair
/// per candidate label. Scored as transformers' zero-shot-classification pipeline does: softmax of
/// the entailment logits across the labels, or, with `multiLabel` (or one label), each label's
/// softmax of (contradiction, entailment) on its own.
public final class ZeroShotClassifier: @unchecked Sendable {
    public let classifier: TextClassifier
    /// The classifier's label whose name starts with "entail", and the one read as contradiction
    /// (the first label, or the last when entailment is the first), as transformers picks them.
    public let entailment: Int
    public let contradiction: Int
    /// transformers' default hypothesis.
    public static let defaultTemplate = "This example is {}."

    public init(classifier: TextClassifier) throws {
        guard let entailment = classifier.labels.firstIndex(where: { $0.lowercased().hasPrefix("entail") }) else {
            throw SwiftBERTError.invalidInput(reason: "\(classifier.model.folder.lastPathComponent) has no entailment label (its labels: \(classifier.labels.joined(separator: ", "))); zero-shot classification needs an NLI classifier, one trained on MNLI or XNLI")
        }
        (self.classifier, self.entailment) = (classifier, entailment)
        contradiction = entailment == 0 ? classifier.labels.count - 1 : 0
    }

    public convenience init(_ model: LoadedModel) throws {
        try self.init(classifier: TextClassifier(model))
    }

    /// The hypothesis of each label: `template` with the label at `{}`.
    public static func hypotheses(_ labels: [String], template: String = defaultTemplate) -> [String] {
        labels.map { template.replacingOccurrences(of: "{}", with: $0) }
    }

    /// Every candidate label with its score for each text, best first (ties keep the order given).
    /// `template` holds `{}`, where each label goes.
    public func classify(_ texts: [String], labels candidates: [String], template: String = defaultTemplate, multiLabel: Bool = false,
                         batchSize: Int = 32, truncation: Truncation = Truncation()) throws -> [[LabelScore]] {
        guard !candidates.isEmpty else { throw SwiftBERTError.invalidInput(reason: "give at least one candidate label") }
        guard template.contains("{}") else {
            throw SwiftBERTError.invalidInput(reason: "the hypothesis template '\(printable(template))' has no {} for the label; write it as \"This example is {}.\"")
        }
        let hypotheses = Self.hypotheses(candidates, template: template)
        let premises = texts.flatMap { text in candidates.map { _ in text } }
        let logits = try classifier.logits(premises, pairs: texts.flatMap { _ in hypotheses }, batchSize: batchSize, truncation: truncation)
        return texts.indices.map { t in
            let rows = logits[(t * candidates.count)..<((t + 1) * candidates.count)]
            let scores = multiLabel || candidates.count == 1
                ? rows.map { softmax([$0[contradiction], $0[entailment]])[1] }
                : softmax(rows.map { $0[entailment] })
            return bestFirst(scores).map { LabelScore(label: candidates[$0], score: scores[$0]) }
        }
    }
}
