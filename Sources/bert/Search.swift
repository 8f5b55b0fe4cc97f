import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Search: ParsableCommand, TopKCommand {
    static let configuration = CommandConfiguration(
        abstract: "The corpus lines most similar to a query, best first, with cosine scores.",
        discussion: """
            The corpus is embedded in batches as it is read and only the best --top-k lines are kept, \
            so a corpus of any size searches in bounded memory. With --embeddings, the vectors come \
            from `bert embed --document --format npy` run on the same corpus, and only the query is \
            embedded. The query gets the model's "query" prompt and the corpus lines its "document" \
            prompt, where the model has them (EmbeddingGemma, Qwen3-Embedding), as \
            sentence-transformers' encode_query and encode_document; --prompt-name or --prompt puts \
            one prompt before both. Output: score, line number and text, tab-separated; --json for an \
            object.

            Examples:
              bert search --corpus faq.txt "how do I reset my password"
              bert embed --document --input faq.txt --format npy --output faq.npy
              bert search --corpus faq.txt --embeddings faq.npy --top-k 3 "reset password"
            """)

    @Argument(help: "The query text.")
    var query: String

    @Option(help: ArgumentHelp("Corpus to search, one text per line; - is stdin.", valueName: "file"))
    var corpus: String

    @Option(help: ArgumentHelp("Precomputed corpus vectors (.npy from `bert embed --document --format npy`).", valueName: "file"))
    var embeddings: String?

    @Option(name: .customLong("top-k"), help: "Number of results.")
    var topK = 10

    @OptionGroup var reading: ReadingOptions

    @Flag(help: "JSON: {\"query\", \"results\": [{\"index\", \"line\", \"score\", \"text\"}]}.")
    var json = false

    @OptionGroup var model: EmbeddingModelOptions

    func run() throws {
        let plan = reading.plan(.file(corpus))
        let skips = SkipReport()
        let reader = try plan.reader(report: skips)
        let precomputed = try embeddings.map { try NPYReader(path: $0) }
        guard try reader.peek() != nil else {
            throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount,
                                         expected: ExpectedInput("corpus lines to search", advice: "give --corpus a file of texts, one per line"))
        }
        let (bert, embedder) = try model.load()
        let stream = EmbeddingStream(embedder: embedder, options: model.embedding.options())

        let bar = plan.progressBar()
        skips.beforeMessage = bar.finish
        let result = try bar.around {
            try stream.search(query, in: reader, topK: topK, precomputed: precomputed, progress: bar.update)
        }
        try writeResult(json ? SearchReport.json(query: query, hits: result.hits).text + "\n" : SearchReport.text(hits: result.hits))

        skips.summarize(source: reader.sourceName)
        reportTruncation(result.summary.truncated, of: result.summary.records, limit: effectiveLimit(model.embedding.maxLength, bert.config))
        if !plan.quiet {
            writeStandardError(String(format: "bert: searched %d lines in %.2f s (%.0f lines/s)\n",
                                      result.summary.records, result.summary.seconds, result.summary.recordsPerSecond))
        }
    }
}
