import Foundation
import SwiftBERT
import SwiftBERTCommandLine

/// Something that offers words for the text typed so far: the suggester, and the baselines it
/// is measured against.
package protocol WordPredictor {
    func words(for text: String, topK: Int) throws -> [String]
}

extension WordSuggester: WordPredictor {
    package func words(for text: String, topK: Int) throws -> [String] {
        try suggest(text, topK: topK).map(\.word)
    }
}

/// Keystroke savings, the standard measure of AAC word prediction: a user types a text letter by
/// letter and picks the word from the suggestion bar as soon as it is among the top k. Picking
/// costs one keystroke and inserts the word and a space, so the text's own space after the word
/// is not typed (before punctuation the keyboard takes the space back, as phone keyboards do).
/// Everything that is not a word (spaces, punctuation, digits) is typed key by key.
package enum TypingSimulation {
    package struct Result: Sendable, Equatable {
        /// Keys pressed without suggestions: the text's characters (whitespace runs count as one space).
        package var characters = 0
        /// Keys pressed with suggestions.
        package var keystrokes = 0
        /// Words typed (runs of letters).
        package var words = 0
        /// Words that were among the top k before their first letter was typed.
        package var nextWordHits = 0

        package init() {}

        /// Share of keystrokes saved.
        package var keystrokeSavings: Double { characters == 0 ? 0 : 1 - Double(keystrokes) / Double(characters) }
        /// Share of words offered before their first letter: top-k next-word accuracy.
        package var nextWordAccuracy: Double { words == 0 ? 0 : Double(nextWordHits) / Double(words) }

        package static func + (a: Result, b: Result) -> Result {
            var sum = a
            sum.characters += b.characters
            sum.keystrokes += b.keystrokes
            sum.words += b.words
            sum.nextWordHits += b.nextWordHits
            return sum
        }
    }

    /// Types `text` with `predictor`. A suggestion matches the word meant when it is the same
    /// letters ignoring case. Predictors see at most the last `contextCharacters` of the text.
    package static func run(_ text: String, predictor: WordPredictor, topK: Int = 3,
                           contextCharacters: Int = 1500) throws -> Result {
        let chars = Array(normalizedWhitespace(text))
        var result = Result()
        var i = 0
        while i < chars.count {
            guard chars[i].isLetter else {
                result.characters += 1
                result.keystrokes += 1
                i += 1
                continue
            }
            var end = i
            while end < chars.count, chars[end].isLetter { end += 1 }
            let word = String(chars[i..<end])
            let target = word.lowercased()
            let context = String(chars[max(0, i - contextCharacters)..<i])
            result.words += 1
            result.characters += end - i
            var cost = end - i
            for typedCount in 0..<(end - i) {
                let offered = try predictor.words(for: context + String(chars[i..<i + typedCount]), topK: topK)
                guard offered.contains(where: { $0.lowercased() == target }) else { continue }
                if typedCount == 0 { result.nextWordHits += 1 }
                cost = typedCount + 1
                if end < chars.count, chars[end] == " " {
                    result.characters += 1  // the space the pick inserted
                    end += 1
                }
                break
            }
            result.keystrokes += cost
            i = end
        }
        return result
    }

    /// Runs of whitespace as one space, ends trimmed: hard-wrapped lines become running text.
    package static func normalizedWhitespace(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}

/// The most frequent words of a training text that start with the letters typed: the classic
/// word-prediction baseline, blind to context.
package struct FrequencyBaseline: WordPredictor {
    /// Lowercased words, most frequent first (ties alphabetical, so runs repeat exactly).
    package let ranked: [String]

    package init(trainingText: String) {
        var counts: [String: Int] = [:]
        for word in trainingText.split(whereSeparator: { !$0.isLetter }) { counts[word.lowercased(), default: 0] += 1 }
        ranked = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
    }

    package func words(for text: String, topK: Int) -> [String] {
        let typed = TypedText(text).partial.lowercased()
        return Array(ranked.lazy.filter { $0.hasPrefix(typed) }.prefix(topK))
    }
}

/// The masked-LM suggester that keyboards and AAC boards hand-roll: the text split on spaces,
/// the characters after the last space taken as the typed word, the mask token written into the
/// text ("[MASK]", or "<mask>" for RoBERTa and XLM-R),
/// and the model's top vocabulary entries as they come (## pieces, punctuation, special tokens),
/// kept when they start with the typed characters. The baseline `WordSuggester` replaces.
package final class HandRolledMaskedLM: WordPredictor {
    package let model: any EncoderModel
    package let tokenizer: Tokenizer
    /// Words of context written before the mask (the last ones), to fit the model's window.
    package let contextWords: Int
    private var cache: (context: String, probabilities: [Float])?

    package init(model: any EncoderModel, tokenizer: Tokenizer, contextWords: Int = 40) {
        (self.model, self.tokenizer, self.contextWords) = (model, tokenizer, contextWords)
    }

    package func words(for text: String, topK k: Int) throws -> [String] {
        let split = text.lastIndex(of: " ").map { text.index(after: $0) } ?? text.startIndex
        let context = text[..<split].split(separator: " ").suffix(contextWords).joined(separator: " ")
        let typed = text[split...].lowercased()
        let probabilities: [Float]
        if let cache, cache.context == context {
            probabilities = cache.probabilities
        } else {
            let mask = tokenizer.token(of: tokenizer.maskId) ?? "[MASK]"
            let encoding = tokenizer.encode(context.isEmpty ? mask : context + " " + mask)
            guard let mask = encoding.ids.lastIndex(of: tokenizer.maskId) else { return [] }
            probabilities = softmax(try model.maskedLMLogits(model.encode([encoding.ids]), at: [(0, mask)])[0])
            cache = (context, probabilities)
        }
        let filter: ((Int32) -> Bool)? = typed.isEmpty ? nil : { [tokenizer] id in
            tokenizer.token(of: id)?.hasPrefix(typed) ?? false
        }
        return topK(probabilities, k: k, where: filter).map { tokenizer.token(of: $0.id) ?? "" }
    }
}
