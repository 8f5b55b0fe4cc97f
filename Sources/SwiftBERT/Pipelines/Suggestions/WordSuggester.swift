import Foundation

/// A word offered to someone typing, as on a keyboard's or an AAC board's suggestion bar.
public struct Suggestion: Sendable, Equatable, Codable {
    /// What kind of suggestion it is.
    public enum Kind: String, Sendable, Codable {
        /// A word to follow the text, which ends in whitespace or punctuation.
        case nextWord = "next_word"
        /// A word starting with the letters being typed.
        case completion
        /// A word near the letters typed, for a typo.
        case correction
    }

    /// The word as it should be inserted, cased as the user writes it.
    public let word: String
    public let kind: Kind
    /// The word's probability at the cursor, times the likelihood of the typed letters when
    /// meaning it (1 for next words and completions, `typoFactor`^cost for corrections):
    /// comparable across the kinds of one list. The probability is the masked-LM's, mixed with
    /// the recent words' and the word list's counts when there are such (see `WordSuggester.Options`).
    public let score: Float

    public init(word: String, kind: Kind, score: Float) {
        (self.word, self.kind, self.score) = (word, kind, score)
    }
}

/// Next-word suggestions, completions and typo corrections from a BERT masked-LM, for a
/// suggestion bar: the text typed so far with the model's mask token after it ([MASK] for BERT,
/// <mask> for RoBERTa and XLM-R), read once per word.
///
/// Candidates are whole words only (no ## pieces or RoBERTa word-inner pieces, punctuation or
/// special tokens) from an index
/// built once (`WordIndex`: a trie over the vocabulary's whole words and the user's own words),
/// found by prefix for completions and by a bounded edit-distance search for corrections; the
/// model's distribution for the current context is kept while the user types the letters of a
/// word, so a keystroke costs at most one forward pass and usually none.
///
/// A word's probability mixes the model's with two things the model reads poorly: the words
/// of the user's recent text, and (when the user's word list has counts) how often the user
/// writes each word. A suggester also remembers the words it offered for the word being typed:
/// when the next call types on (same context, more letters), those words were passed over and
/// give their slots to others. docs/suggest.md has the measurements behind each part.
///
/// Safe to call from several threads (calls are serialised); one suggester serves one user.
public final class WordSuggester: @unchecked Sendable {
    /// How suggestions are scored; the defaults are the measured ones (docs/suggest.md).
    public struct Options: Sendable {
        /// Word pieces of context the model reads before the mask (the latest ones, about 25
        /// words): what bounds a forward pass, and so the latency of the first keystroke of a
        /// word. 64 gave no better suggestions than 32 in the quality benchmark (docs/suggest.md).
        public var contextTokens = 32
        /// The likelihood of the typed letters per unit of edit cost when meaning another word:
        /// a correction's score is the model's probability times `typoFactor`^cost, so a
        /// correction outranks an exact completion only when the model finds it that much likelier.
        public var typoFactor: Float = 0.003
        /// A user's word that is several word pieces is scored by its first piece's probability
        /// times this factor per further piece.
        public var pieceFactor: Float = 0.1
        /// Costs of typing errors, and the keyboard layout whose neighbouring keys are cheap slips.
        public var errors = TypingErrorModel()
        /// A word's probability is the mixture
        ///   (1 - f - r) × model + f × (its share of the word list's counts) + r × (its share of the recent words)
        /// where f is `frequencyWeight` when some user word has a count (else 0). Counts are the
        /// user's typing history (or text like theirs): they rank words the model knows little
        /// about. Tuned on held-out text with splade-tiny, a weak masked-LM; a stronger model
        /// deserves a larger share (lower weights).
        public var frequencyWeight: Float = 0.5
        /// r above: the user's last `recentWords` words, each word's count over `recentWords`
        /// (so a short text gives small shares, not a few huge ones). People repeat their words
        /// (names, the topic at hand), which a model reading `contextTokens` sees only in part.
        public var recencyWeight: Float = 0.3
        public var recentWords = 300
        /// Words offered for the word being typed and passed over (the user typed on) score
        /// this much of their probability while the user goes on typing that word, so that other
        /// words get the slots. 1 keeps offering them.
        public var passedOverFactor: Float = 0.001
        /// Corrected completions (words whose beginning is near the typed letters) from this many
        /// typed letters on; shorter input is corrected as whole words only.
        public var correctedCompletionsFrom = 4

        public init() {}
    }

    /// The model (BERT-family or MobileBERT), loaded from the model folder.
    public let model: any EncoderModel
    /// The model's tokenizer, from its tokenizer.json (or vocab.txt).
    public let tokenizer: Tokenizer
    public let options: Options

    private let lock = NSLock()
    /// The vocabulary's whole words, folded once; the index is rebuilt from them when user words change.
    private let vocabularyWords: [WordIndex.Word]
    private var userWords: [WordIndex.Word] = []
    private var index: WordIndex
    /// The reading of the last context: the same while the letters of a word are typed.
    private var cache: ContextReading?
    /// The words offered for the word being typed, which the user has passed over by typing on.
    private var offered: (context: Substring, typed: String, words: Set<Int32>)?
    private var runs = 0
    /// RoBERTa's and XLM-R's vocabularies mark the first piece of a word (Ġ, ▁) instead of the others (##).
    private let marksWordStarts: Bool

    public init(model: any EncoderModel, tokenizer: Tokenizer, userWords: [UserWord] = [], options: Options = Options()) throws {
        guard model.config.heads.hasMaskedLMHead else {
            throw SwiftBERTError.invalidInput(reason: "\(model.folder.lastPathComponent) has no masked-LM head; suggestions need a *ForMaskedLM model such as splade-tiny")
        }
        guard tokenizer.maskId >= 0 else {
            throw SwiftBERTError.invalidInput(reason: "the tokenizer of \(model.folder.lastPathComponent) has no mask token ([MASK] or <mask>); suggestions need the tokenizer of a masked-LM")
        }
        guard options.contextTokens >= 1, options.contextTokens + 3 <= model.config.encoder.positionLimit else {
            throw SwiftBERTError.invalidInput(reason: "contextTokens must be between 1 and \(model.config.encoder.positionLimit - 3)")
        }
        (self.model, self.tokenizer, self.options) = (model, tokenizer, options)
        marksWordStarts = tokenizer.marksWordStarts
        vocabularyWords = Self.vocabularyWords(tokenizer, limit: model.config.encoder.vocabSize, marksWordStarts: marksWordStarts)
        index = WordIndex(words: vocabularyWords)
        if !userWords.isEmpty { addUserWords(userWords) }
    }

    public convenience init(folder: URL, threads: Int? = nil, precision: Precision = .fp32,
                            userWords: [UserWord] = [], options: Options = Options()) throws {
        let model = try loadModel(folder: folder, threads: threads, precision: precision)
        try self.init(model: model.encoder, tokenizer: model.tokenizer, userWords: userWords, options: options)
    }

    /// Words the suggester can offer: the vocabulary's whole words and the user's.
    public var wordCount: Int { lock.withLock { index.count } }

    /// Forward passes run so far: at most one per call, none while the context stays the same.
    public var modelRuns: Int { lock.withLock { runs } }

    // MARK: - User words

    /// Adds a user's own words (names, jargon): offered for completion and correction, and as
    /// next words when the model finds them likely. A word that is not one vocabulary entry is
    /// scored by its first word piece (see `Options.pieceFactor`). Words with spaces are ignored.
    public func addUserWords<S: Sequence<String>>(_ words: S) {
        addUserWords(words.map { UserWord($0) })
    }

    /// Adds a user's own words; those with a count also make the frequency prior (`Options.frequencyWeight`).
    public func addUserWords(_ words: [UserWord]) {
        let new = words.compactMap(indexWord)
        guard !new.isEmpty else { return }
        lock.withLock {
            userWords += new
            index = WordIndex(words: vocabularyWords + userWords)
            cache = nil  // its recent-word shares are by position in the old index
        }
    }

    private func indexWord(_ user: UserWord) -> WordIndex.Word? {
        let word = user.word.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !word.isEmpty, !word.contains(where: \.isWhitespace), word.contains(where: \.isLetter) else { return nil }
        // A word after a space: RoBERTa's first piece then carries its word-start mark.
        let pieces = tokenizer.plainTextIds(marksWordStarts ? " " + word : word)
        guard let first = pieces.first, first != tokenizer.unkId else { return nil }
        let weight = pow(options.pieceFactor, Float(pieces.count - 1))
        return WordIndex.Word(key: WordIndex.Word.key(foldedWord(word)), spelling: word, ids: [first], weight: weight,
                              isUserWord: true, inVocabulary: false, count: max(0, user.count ?? 0))
    }

    /// Whole words of the vocabulary: entries that start a word (`wordStartSpelling`) and hold
    /// only letters, so no punctuation, numbers or symbols are offered.
    private static func vocabularyWords(_ tokenizer: Tokenizer, limit: Int, marksWordStarts: Bool) -> [WordIndex.Word] {
        (0..<min(tokenizer.vocabularySize, limit)).compactMap { id in
            guard let word = wordStartSpelling(Int32(id), tokenizer, marksWordStarts: marksWordStarts),
                  word.allSatisfy(\.isLetter) else { return nil }
            return WordIndex.Word(key: WordIndex.Word.key(foldedWord(word)), spelling: word, ids: [Int32(id)],
                                  weight: 1, isUserWord: false, inVocabulary: true)
        }
    }

    // MARK: - Suggesting

    /// Up to `topK` words for `text`, the text typed so far, best first: next words when it
    /// ends in whitespace or punctuation (or is empty), else completions of the word being typed
    /// and, where the typed letters fit no likelier completion, corrections of them.
    public func suggest(_ text: String, topK k: Int = 3) throws -> [Suggestion] {
        guard k > 0 else { throw SwiftBERTError.invalidInput(reason: "top-k must be at least 1") }
        let k = min(k, 1 << 16)  // far more than any list shows; keeps the sizes computed from k finite
        return try lock.withLock {
            let typed = TypedText(text) { [index] in index.node(for: WordIndex.Word.key($0)) != nil }
            let context = try reading(of: typed.context)
            let casing = TypedCasing(partial: typed.partial, startsSentence: typed.startsSentence)
            let letters = foldedWord(typed.partial)
            let passedOver = wordsPassedOver(context: typed.context, typed: letters)
            let ranked = letters.isEmpty
                ? nextWords(context, k: k)
                : wordsFor(typed: letters, context, passedOver: passedOver, k: k)
            offered = (typed.context, letters, passedOver.union(ranked.map(\.word)))
            return ranked.map { candidate in
                Suggestion(word: casing.apply(to: display(candidate.word, context)), kind: candidate.kind, score: candidate.score)
            }
        }
    }

    fileprivate struct Candidate {
        let word: Int32
        let kind: Suggestion.Kind
        let score: Float
    }

    /// The words offered earlier for this word, when the user has typed on past them: the same
    /// context, and letters that extend the ones typed then.
    private func wordsPassedOver(context: Substring, typed: String) -> Set<Int32> {
        guard options.passedOverFactor < 1, let offered, offered.context == context,
              typed.count > offered.typed.count, typed.hasPrefix(offered.typed) else { return [] }
        return offered.words
    }

    private func nextWords(_ context: ContextReading, k: Int) -> [Candidate] {
        var best = TopCandidates(k: k)
        for w in 0..<Int32(index.count) {
            best.offer(Candidate(word: w, kind: .nextWord, score: probability(of: w, context)))
        }
        return best.ranked
    }

    /// Completions score the word's probability; corrections that times the typo likelihood.
    /// Each word is ranked by its best reading.
    private func wordsFor(typed folded: String, _ context: ContextReading, passedOver: Set<Int32>, k: Int) -> [Candidate] {
        let key = WordIndex.Word.key(folded)
        var best = TopCandidates(k: k)
        // A word the user has passed over is unlikely to be the one meant: it keeps a slot only
        // when nothing else fits.
        func offer(_ w: Int32, _ kind: Suggestion.Kind, _ score: Float) {
            best.offer(Candidate(word: w, kind: kind, score: passedOver.contains(w) ? score * options.passedOverFactor : score))
        }
        let completions = index.completions(of: key)
        for w in completions {
            offer(w, .completion, probability(of: w, context))
        }
        let letters = key.count
        let maxCost = options.errors.maxCost(forLength: letters)
        if maxCost > 0 {
            var search = EditSearch(index: index, errors: options.errors, typed: key, maxCost: maxCost,
                                    matchesPrefixes: letters >= options.correctedCompletionsFrom)
            for match in search.run() {
                let likelihood = pow(options.typoFactor, match.cost)
                for w in match.words where !completions.contains(w) {
                    offer(w, .correction, likelihood * probability(of: w, context))
                }
            }
        }
        var ranked = best.ranked
        // When corrections are offered, so is the typed word itself if it is a real word: the
        // user may mean it, and must be able to keep it.
        if ranked.contains(where: { $0.kind == .correction }), let own = index.word(spelled: key),
           !ranked.contains(where: { $0.word == own }) {
            let candidate = Candidate(word: own, kind: .completion, score: probability(of: own, context))
            if ranked.count < k { ranked.append(candidate) } else { ranked[k - 1] = candidate }
        }
        return ranked
    }

    /// The probability of word `w` at the cursor: the model's (its variants added, times its
    /// weight), mixed with its share of the word list's counts and of the recent words.
    @inline(__always)
    private func probability(of w: Int32, _ context: ContextReading) -> Float {
        let i = Int(w)
        var p: Float = 0
        for j in Int(index.idStart[i])..<Int(index.idStart[i + 1]) { p += context.probabilities[Int(index.scoreIds[j])] }
        p *= index.weights[i] * context.modelShare
        if index.hasPriors { p += options.frequencyWeight * index.priors[i] }
        if context.recencyShare > 0 { p += context.recencyShare * context.recent[i] }
        return p
    }

    /// A user's spelling, else the most probable of the vocabulary's variants ("Paris" over "paris").
    private func display(_ w: Int32, _ context: ContextReading) -> String {
        let word = index.words[Int(w)]
        guard !word.isUserWord, word.ids.count > 1,
              let best = word.ids.max(by: { context.probabilities[Int($0)] < context.probabilities[Int($1)] }) else { return word.spelling }
        return wordStartSpelling(best, tokenizer, marksWordStarts: marksWordStarts) ?? word.spelling
    }

    // MARK: - Reading the context

    /// What the text before the cursor says about the next word; the same for every letter of a word.
    private struct ContextReading {
        /// The text it was read from: the key of the cache.
        let text: Substring
        /// The model's distribution over the vocabulary at a mask after the text.
        let probabilities: [Float]
        /// Each indexed word's share of the last `recentWords` words of the text.
        let recent: [Float]
        /// The mixture's weights: the model gets what the counts and recent words leave.
        let modelShare: Float
        let recencyShare: Float
    }

    /// The reading of `context`: one forward pass for a new context, none for the context of
    /// the previous call (the user is typing the letters of one word).
    private func reading(of context: Substring) throws -> ContextReading {
        if let cache, cache.text == context { return cache }
        let input = modelInput(context: context)
        let mask = input.count - 2  // before [SEP]: the only row read
        let output = try model.encode([input], typeIds: nil, profile: nil, reading: [.position(mask)])
        let logits = try model.maskedLMLogits(output, at: [(0, mask)])[0]
        runs += 1
        let recent = recentShares(context)
        let recencyShare = recent == nil ? 0 : options.recencyWeight
        let reading = ContextReading(
            text: context, probabilities: softmax(logits),
            recent: recent ?? [], modelShare: 1 - recencyShare - (index.hasPriors ? options.frequencyWeight : 0),
            recencyShare: recencyShare)
        cache = reading
        return reading
    }

    /// [CLS] context [MASK] [SEP] (RoBERTa: <s> context <mask> </s>), with the context's last
    /// `contextTokens` word pieces. Special tokens typed by the user ("[MASK]", "<mask>", "<s>")
    /// are read as plain text, never as control tokens.
    func modelInput(context: Substring) -> [Int32] {
        // Only the tail can be read: tokenizing a long text in full on every keystroke would cost
        // more than the forward pass. 16 characters a piece is generous; the cut is at a space.
        // Trailing spaces are the mask's: BERT drops them anyway, and RoBERTa's <mask> takes the
        // space before it (lstrip), where byte-level BPE would make a lone "Ġ" of it.
        let text = tail(of: context, characters: options.contextTokens * 16)
        let specials: Set<Int32> = [tokenizer.clsId, tokenizer.sepId, tokenizer.maskId, tokenizer.padId]
        let pieces = tokenizer.plainTextIds(String(text.reversed().drop(while: \.isWhitespace).reversed()))
            .suffix(options.contextTokens)
            .map { specials.contains($0) ? tokenizer.unkId : $0 }
        return [tokenizer.clsId] + pieces + [tokenizer.maskId, tokenizer.sepId]
    }

    /// Each indexed word's count among the last `recentWords` words of the context, over
    /// `recentWords` (a short text makes small shares, not a few huge ones); nil when none.
    private func recentShares(_ context: Substring) -> [Float]? {
        guard options.recencyWeight > 0, options.recentWords > 0 else { return nil }
        let words = tail(of: context, characters: options.recentWords * 16)
            .split(whereSeparator: { !isWordCharacter($0) }).suffix(options.recentWords)
        var shares: [Float]?
        let unit = 1 / Float(options.recentWords)
        for word in words {
            guard let w = index.word(spelled: WordIndex.Word.key(folding: word)) else { continue }
            if shares == nil { shares = [Float](repeating: 0, count: index.count) }
            shares![Int(w)] += unit
        }
        return shares
    }
}

/// The last `characters` of a text, from the first space on: no half word at the start.
private func tail(of text: Substring, characters: Int) -> Substring {
    let tail = text.suffix(characters)
    guard tail.startIndex > text.startIndex, let space = tail.firstIndex(where: \.isWhitespace) else { return tail }
    return tail[space...]
}

/// The k best candidates seen, best first (ties: the first seen stays ahead).
private struct TopCandidates {
    let k: Int
    private(set) var ranked: [WordSuggester.Candidate] = []

    init(k: Int) {
        self.k = k
        ranked.reserveCapacity(k + 1)
    }

    mutating func offer(_ candidate: WordSuggester.Candidate) {
        if ranked.count == k, candidate.score <= ranked[k - 1].score { return }
        var slot = ranked.count
        while slot > 0, ranked[slot - 1].score < candidate.score { slot -= 1 }
        ranked.insert(candidate, at: slot)
        if ranked.count > k { ranked.removeLast() }
    }
}
