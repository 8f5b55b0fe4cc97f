import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Tokenize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show how texts split into the model's tokens (WordPiece, SentencePiece or BPE): tokens, ids and offsets.",
        discussion: """
            Same inputs as embed: arguments, --input FILE or stdin. The table has one row per token \
            (token, id, start, end; offsets in Unicode code points of the input, [start, end)) and a \
            blank line between inputs; --json gives one object per input and line.

            Examples:
              bert tokenize "Unbelievable, isn't it?"
              bert tokenize --json --input texts.txt | jq -c '.ids | length'
            """)

    @OptionGroup var input: InputOptions

    @Flag(help: "JSON Lines: {\"index\", \"tokens\", \"ids\", \"offsets\": [[start, end], ...]} per input.")
    var json = false

    @Option(help: "Model whose tokenizer to use: a name under weights/ or a path.")
    var model = ModelLocator.defaultEmbeddingModel

    @Option(help: "Truncate to this many tokens, special tokens included.")
    var maxLength: Int?

    @Flag(help: "Leave out [CLS] and [SEP].")
    var noSpecialTokens = false

    func validate() throws {
        if let maxLength, maxLength < 1 { throw ValidationError("--max-length must be at least 1") }
    }

    func run() throws {
        let skips = SkipReport()
        let plan = input.plan
        let reader = try plan.reader(report: skips)
        guard try reader.peek() != nil else {
            throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount, expected: .texts(to: "tokenize"))
        }
        let tokenizer = try Tokenizer.load(folder: ModelLocator.resolve(model))
        // A limit below the framing would truncate nothing (Hugging Face's rule), not cut to it.
        if let maxLength, !noSpecialTokens, maxLength < tokenizer.framingCount {
            let framing = tokenizer.framed([]).map { tokenizer.token(of: $0) ?? "\($0)" }.joined(separator: " ")
            throw CLIError.usage("--max-length \(maxLength) cannot hold the \(tokenizer.framingCount) tokens this model frames every text with (\(framing)); give at least \(tokenizer.framingCount), or --no-special-tokens")
        }
        let sink = OutputSink.standardOutput()
        let writer = TokenizationWriter(json: json, sink: sink)
        while let record = try reader.next() {
            try writer.write(index: record.index,
                             encoding: tokenizer.encode(record.text, maxLength: maxLength, addSpecialTokens: !noSpecialTokens))
        }
        try sink.close()
        skips.summarize(source: reader.sourceName)
    }
}
