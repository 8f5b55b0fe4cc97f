import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Suggest: ParsableCommand, TopKCommand {
    static let configuration = CommandConfiguration(
        abstract: "Suggest the next word, completions or typo corrections for text being typed.",
        discussion: """
            TEXT is what the user has typed so far. Ending in a space (or punctuation, or empty): \
            the words most likely to come next. Ending in a partial word: words starting with it, \
            ranked by the masked-LM in context, and corrections within a small edit distance when \
            the letters fit no likelier word. Only whole words are offered, cased as the user \
            writes. Each suggestion has its kind (next_word, completion, correction) and score. \
            Reference: docs/suggest.md.

            Examples:
              bert suggest "I would like a cup of "
              bert suggest --top-k 5 "The weather is beau"
              bert suggest --words names.txt --json "Meet me at Kub"
            """)

    @Argument(help: "The text typed so far (quote it to keep a trailing space).")
    var text: String

    @Option(name: .customLong("top-k"), help: "Suggestions to offer.") var topK = 3

    @Option(help: ArgumentHelp("The user's own words (names, jargon) from FILE: one per line, optionally followed by a count.", valueName: "file")) var words: String?

    @Flag(help: "JSON: {\"suggestions\": [{\"word\", \"kind\", \"score\"}]}.") var json = false

    @OptionGroup var model: MaskedLMModelOptions

    func run() throws {
        let userWords = try words.map(readWordList) ?? []
        let loaded = try model.load()
        let suggestions = try WordSuggester(model: loaded.encoder, tokenizer: loaded.tokenizer, userWords: userWords).suggest(text, topK: topK)
        try writeResult(json ? SuggestionReport.json(suggestions).text + "\n" : SuggestionReport.text(suggestions))
    }
}

/// The --words file's words. A folder is input that cannot be read (66), as `--input` says of one;
/// the library, reading it as text, would call it bad data (65).
func readWordList(_ path: String) throws -> [UserWord] {
    var isFolder: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
        throw StreamError.unreadable(path: path, reason: "it is a directory; give a word list file: one word per line, optionally followed by a count")
    }
    return try UserWord.readList(URL(fileURLWithPath: path))
}
