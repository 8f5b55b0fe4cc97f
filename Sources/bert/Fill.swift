import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Fill: ParsableCommand, TopKCommand {
    static let configuration = CommandConfiguration(
        abstract: "Predict the words hidden by [MASK], with probabilities.",
        discussion: """
            For each [MASK] (<mask> for RoBERTa and XLM-R models) in TEXT, the --top-k most probable vocabulary entries. Probabilities are \
            over the whole vocabulary; the filters remove candidates without renormalising. \
            --prefix is the letter filter of AAC boards: only words starting with the letters typed \
            so far (it implies --words-only).

            Examples:
              bert fill "The capital of France is [MASK]."
              bert fill --prefix dr --top-k 3 "I would like a [MASK] of water."
              bert fill --json "Paris is the [MASK] of [MASK]." | jq '.masks[0]'
            """)

    @Argument(help: "Text holding one or more [MASK].")
    var text: String

    @Option(name: .customLong("top-k"), help: "Candidates per [MASK].") var topK = 5

    @Flag(help: "Only whole words: no ## pieces, punctuation or special tokens.") var wordsOnly = false

    @Option(help: ArgumentHelp("Only words starting with these letters (case-insensitive).", valueName: "letters")) var prefix: String?

    @Flag(help: "JSON: {\"masks\": [{\"position\", \"candidates\": [{\"token\", \"id\", \"probability\"}]}]}.") var json = false

    @OptionGroup var model: MaskedLMModelOptions

    func run() throws {
        let loaded = try model.load()
        let tokenizer = loaded.tokenizer
        let predictions = try FillMask(loaded).predict(text, topK: topK, wordsOnly: wordsOnly, prefix: prefix)
        let maskToken = tokenizer.token(of: tokenizer.maskId) ?? "[MASK]"
        try writeResult(json ? FillMaskReport.json(predictions).text + "\n" : FillMaskReport.text(predictions, maskToken: maskToken))
        // Masks in the part of the text cut to the limit have no predictions: say so, or they would just be missing.
        let masks = tokenizer.encode(text).ids.count { $0 == tokenizer.maskId }
        if predictions.count < masks {
            let limit = loaded.encoder.config.encoder.maxSequenceLength
            writeStandardError("bert: \(masks - predictions.count) of \(masks) \(maskToken) tokens were cut off with the text past the model's limit of \(limit) tokens, so they have no predictions; shorten the text\n")
        }
    }
}
