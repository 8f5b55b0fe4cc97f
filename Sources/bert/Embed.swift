import ArgumentParser
import Foundation
import SwiftBERT
#if canImport(Glibc)
import Glibc
#endif

struct Embed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sentence embeddings: one vector per input text, in input order.",
        discussion: """
            Texts come from the arguments, or one per line from --input FILE or stdin. A file of any \
            size streams in bounded memory; output is written as it goes. Inputs longer than the \
            model's limit are truncated and counted on stderr.

            Formats: jsonl (default) {"index": i, "embedding": [...]} per line; json, an array of the \
            same objects; npy, an (N, D) float32 array for numpy.load; tsv, one vector per line.

            Examples:
              bert embed "The cat sat on the mat." "A dog slept."
              bert embed --input corpus.txt --format npy --output corpus.npy
              jq -c '{text: .body}' posts.json | bert embed --input-format jsonl
            """)

    @OptionGroup var input: InputOptions

    @Option(help: "Output format: jsonl, json, npy or tsv.")
    var format: EmbeddingFormat = .jsonl

    @Option(name: [.short, .long], help: ArgumentHelp("Write to FILE instead of stdout.", valueName: "file"))
    var output = "-"

    @Option(help: "Model name (a folder under weights/) or path to a converted model.")
    var model = ModelLocator.defaultEmbeddingModel

    @Flag(help: "Keep vectors as pooled, without L2 normalisation.")
    var noNormalize = false

    @OptionGroup var embedding: EmbeddingOptions
    @OptionGroup var engine: EngineOptions

    func run() throws {
        if format == .npy, output == "-", isTerminal(STDOUT_FILENO) {
            throw CLIError.usage("npy is binary; use --output FILE or redirect stdout")
        }
        if let path = input.input, output != "-", path != "-", sameFile(path, output) {
            throw CLIError.usage("--output \(output) is the input file; writing would destroy it before it is read")
        }
        let skips = SkipReport()
        let plan = input.plan
        let reader = try plan.reader(report: skips)
        // Fail on empty input before loading anything or creating the output.
        guard try reader.peek() != nil else {
            throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount)
        }
        let (bert, tokenizer) = try engine.load(model)
        let stream = EmbeddingStream(embedder: SentenceEmbedder(model: bert, tokenizer: tokenizer),
                                     options: embedding.options(normalize: !noNormalize))
        let sink = try OutputSink.open(output)
        let writer = try EmbeddingWriter(format: format, sink: sink, dimension: bert.config.hiddenSize)

        let bar = plan.progressBar()
        skips.beforeMessage = bar.finish
        let summary = try bar.around { try stream.embed(reader, into: writer, progress: bar.update) }
        try sink.close()

        skips.summarize(source: reader.sourceName)
        reportTruncation(summary, limit: effectiveLimit(embedding.maxLength, bert.config))
        if plan.isStreamed, !plan.quiet {
            writeStandardError(String(format: "bert: embedded %d lines in %.2f s (%.0f lines/s)\n",
                                      summary.records, summary.seconds, summary.recordsPerSecond))
        }
    }
}

/// The token limit inputs are truncated to.
func effectiveLimit(_ requested: Int?, _ config: BertConfig) -> Int {
    min(requested ?? config.maxSequenceLength, config.maxPositionEmbeddings)
}
