import Foundation

/// Masked-word prediction: for every [MASK] in a text, the most probable vocabulary entries.
public final class FillMask: ModelPipeline, @unchecked Sendable {
    /// The model (BERT-family or MobileBERT), loaded from the model folder.
    public let model: any EncoderModel
    /// The model's tokenizer, from its tokenizer.json (or vocab.txt).
    public let tokenizer: Tokenizer
    /// Vocabulary ids that are whole words: no ## piece, no special or [unused] token, no punctuation.
    private let wholeWord: [Bool]

    /// One token that could fill a mask, with its probability.
    public struct Candidate: Sendable, Equatable, Codable {
        public let token: String
        public let id: Int32
        public let probability: Float
    }

    /// The candidates for one `[MASK]` of the text, best first.
    public struct Prediction: Sendable, Equatable {
        /// Index of the [MASK] in the token sequence ([CLS] is 0).
        public let position: Int
        public let candidates: [Candidate]
    }

    /// The masked-LM head at every mask token.
    public let head: MaskedLMHead

    public init(model: any EncoderModel, tokenizer: Tokenizer) throws {
        head = try MaskedLMHead(model, maskId: tokenizer.maskId)
        self.model = model
        self.tokenizer = tokenizer
        decodesCandidates = tokenizer.marksWordStarts
        wholeWord = (0..<tokenizer.vocabularySize).map { id in
            wordStartSpelling(Int32(id), tokenizer, marksWordStarts: tokenizer.marksWordStarts) != nil
        }
    }

    /// Candidates of tokenizers that mark word starts (RoBERTa's, XLM-R's, ModernBERT's) are shown decoded, as transformers' fill-mask pipeline
    /// shows them (token_str): "Ġfox" as " fox", "▁fox" as "fox"; BERT's as the vocabulary has them.
    private let decodesCandidates: Bool

    /// A candidate's text: `Candidate.token`.
    public func candidateText(_ id: Int32) -> String {
        decodesCandidates ? tokenizer.decode([id], skipSpecialTokens: false) : tokenizer.token(of: id) ?? ""
    }

    /// Whether a vocabulary id is a whole word (the `wordsOnly` filter).
    public func isWholeWord(_ id: Int32) -> Bool { id >= 0 && Int(id) < wholeWord.count && wholeWord[Int(id)] }

    /// Top-k candidates for each [MASK] in `text`, in order. Probabilities are over the whole
    /// vocabulary; filters remove candidates without renormalising. `prefix` keeps words that
    /// start with the letters typed so far (case-insensitive) and implies `wordsOnly`.
    public func predict(_ text: String, topK k: Int = 5, wordsOnly: Bool = false, prefix: String? = nil) throws -> [Prediction] {
        guard k > 0 else { throw SwiftBERTError.invalidInput(reason: "top-k must be at least 1") }
        let encoding = try prepare(text)
        let batch = HeadBatch(threads: model.threads)
        let output = try model.encode([encoding.ids], typeIds: [encoding.typeIds], profile: nil, reading: [head.rowsRead(batch)])
        let masks = try head(output, batch)[0]
        return finish(masks, topK: k, wordsOnly: wordsOnly, prefix: prefix)
    }

    /// The text's tokens for the masked-LM head (truncated to the model's length), or why it
    /// cannot be filled: no mask, or its masks cut off. `predict` runs this, then `head` over a
    /// forward pass, then `finish`; the server runs the forward pass in a batch shared with
    /// other requests.
    public func prepare(_ text: String) throws -> Encoding {
        let encoding = tokenizer.encode(text, maxLength: model.config.encoder.maxSequenceLength)
        guard encoding.ids.contains(tokenizer.maskId) else {
            // The model's own mask token: [MASK] for BERT, <mask> for RoBERTa and XLM-R.
            let mask = tokenizer.token(of: tokenizer.maskId) ?? "[MASK]"
            throw SwiftBERTError.invalidInput(reason: encoding.wasTruncated
                ? "the text is longer than \(model.config.encoder.maxSequenceLength) tokens and its \(mask) was cut off"
                : "the text has no \(mask); write \(mask) where a word should be predicted")
        }
        return encoding
    }

    /// The top-k candidates of each mask's logits (`head`'s output for one text), filtered as
    /// `predict` says.
    public func finish(_ masks: [MaskedLMHead.Mask], topK k: Int, wordsOnly: Bool = false, prefix: String? = nil) -> [Prediction] {
        let typed = prefix?.lowercased()
        let filter: ((Int32) -> Bool)? = (wordsOnly || typed != nil) ? { [self] id in
            guard isWholeWord(id) else { return false }
            guard let typed, !typed.isEmpty else { return true }
            return candidateText(id).trimmingCharacters(in: .whitespaces).lowercased().hasPrefix(typed)
        } : nil
        return masks.map { mask in
            let top = topK(softmax(mask.logits), k: min(k, mask.logits.count), where: filter)  // no more than the vocabulary
            return Prediction(position: mask.position, candidates: top.map {
                Candidate(token: candidateText($0.id), id: $0.id, probability: $0.probability)
            })
        }
    }
}

/// The word a vocabulary entry spells when it starts a word; nil for a piece inside a word, a
/// special token or punctuation. BERT's entries as they are (no ## piece); RoBERTa's and
/// XLM-R's (`marksWordStarts`) only with their word-start mark, Ġ (byte-level BPE) or ▁
/// (SentencePiece), and decoded without it ("Ġfox" and "▁fox" spell "fox").
func wordStartSpelling(_ id: Int32, _ tokenizer: Tokenizer, marksWordStarts: Bool) -> String? {
    guard let token = tokenizer.token(of: id) else { return nil }
    guard marksWordStarts else { return readsAsWord(token) ? token : nil }
    guard token.hasPrefix("Ġ") || token.hasPrefix("▁") else { return nil }
    let word = tokenizer.decode([id], skipSpecialTokens: false).trimmingCharacters(in: .whitespaces)
    return readsAsWord(word) ? word : nil
}

/// A token that reads as a word: not a ## continuation, not [CLS]/[unused0]-style, and holding
/// at least one letter or digit.
func readsAsWord(_ token: String) -> Bool {
    if token.hasPrefix("##") || (token.hasPrefix("[") && token.hasSuffix("]")) { return false }
    return token.unicodeScalars.contains { $0.properties.isAlphabetic || $0.properties.numericType != nil }
}
