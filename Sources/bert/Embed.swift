import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
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

            --sparse gives lexical weights instead: {"index": i, "sparse": [{"index": token_id, "value": w}, ...]} \
            per line (jsonl only), ids ascending. For a masked-LM model such as splade-tiny (SPLADE), \
            w = max over the text's tokens of log(1 + relu(masked-LM logit)); for BGE-M3 converted with \
            its sparse_linear.pt, w = max over the tokens of each id of relu(sparse_linear(h)), without \
            the special tokens (FlagEmbedding's lexical weights).

            --multi-vector gives BGE-M3's ColBERT vectors (a model converted with colbert_linear.pt): \
            {"index": i, "vectors": [[...], ...]}, one L2-normalised vector per token after [CLS]. \
            --sparse and --multi-vector together, with --dense for the sentence vector too, give all \
            of them in one record from one forward pass.

            --chunk N cuts each text into chunks of at most N tokens as the model sees them ([CLS], \
            [SEP] and the prompt count; N at most --max-length or the model's limit), between words, \
            consecutive chunks sharing the most whole words of at most --overlap K tokens; a word \
            longer than a chunk is split. Each chunk is embedded as its own text. With \
            --chunk-pooling none (the default) one line per chunk (jsonl only): {"index": i, "chunk": c, \
            "start": s, "end": e, "tokens": t, "embedding": [...]}, s..<e the chunk's code-point \
            offsets in text i (Python's text[s:e]), t its token count; with mean, one record per text \
            in any format, the mean of its chunks' vectors, L2-normalised unless --no-normalize.

            Ctrl-C (SIGINT) or SIGTERM stops at the next batch and leaves a valid output holding the \
            first records of the input, each complete (exit status 130 or 143); the same command \
            with --resume continues it without repeating or missing a record. A second signal \
            stops at once.

            Examples:
              bert embed "The cat sat on the mat." "A dog slept."
              bert embed --input corpus.txt --format npy --output corpus.npy
              bert embed --input corpus.txt --format npy --output corpus.npy --resume
              jq -c '{text: .body}' posts.json | bert embed --input-format jsonl
              bert embed --model splade-tiny --sparse "The cat sat on the mat."
              bert embed --model bge-m3 --dense --sparse --multi-vector --input docs.txt
              bert embed --input docs.txt --chunk 256 --overlap 32 --output chunks.jsonl
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

    @Flag(help: "Lexical weights over the vocabulary instead of a dense vector: SPLADE (a masked-LM model such as splade-tiny) or BGE-M3's sparse head (jsonl).")
    var sparse = false

    @Flag(help: "BGE-M3's ColBERT vectors, one per token after [CLS], instead of a dense vector (jsonl).")
    var multiVector = false

    @Flag(help: "With --sparse or --multi-vector: the sentence vector too, in the same record (\"embedding\").")
    var dense = false

    @Flag(help: "Continue an interrupted run: keep the complete records already in --output and embed the rest of the same input (a missing output starts afresh).")
    var resume = false

    @Flag var role: TextRole?

    @Option(help: ArgumentHelp("Store vectors as float32 (default), int8 or uint8 (255 steps per dimension between its minimum and maximum over --calibration), binary or ubinary (signs, 8 to a byte): sentence-transformers' quantize_embeddings.", valueName: "type"))
    var embeddingType: EmbeddingType = .float32

    @Option(help: ArgumentHelp("For --embedding-type int8 or uint8: a float32 .npy of embeddings of texts like these, from the same model (bert embed --format npy), whose per-dimension minima and maxima set the steps.", valueName: "file"))
    var calibration: String?

    @OptionGroup var embedding: EmbeddingOptions
    @OptionGroup var chunking: ChunkOptions
    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if resume, output == "-" { throw ValidationError("--resume needs --output FILE: the output of the run to continue") }
        if sparse || multiVector, format != .jsonl { throw ValidationError("--sparse and --multi-vector write jsonl only") }
        if sparse || multiVector, resume { throw ValidationError("--sparse and --multi-vector do not --resume; embed the rest of the input on its own") }
        if dense, !sparse, !multiVector { throw ValidationError("--dense adds the sentence vector to --sparse or --multi-vector records; without them, leave it out") }
        if sparse || multiVector, embeddingType != .float32 { throw ValidationError("--embedding-type quantises dense vectors; it does not combine with --sparse or --multi-vector") }
        if embeddingType.needsRanges, calibration == nil {
            throw ValidationError("--embedding-type \(embeddingType.rawValue) needs --calibration FILE.npy: embeddings of texts like these (bert embed --format npy --output FILE.npy), whose ranges set its 255 steps")
        }
        if !embeddingType.needsRanges, calibration != nil { throw ValidationError("--calibration sets the ranges of --embedding-type int8 or uint8; \(embeddingType.rawValue) has none") }
        try validateChunking()
    }

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
            throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount, expected: .texts(to: "embed"))
        }
        let bert = try engine.load(model)
        if sparse || multiVector { return try embedOutputs(bert, reader, skips: skips) }
        if let size = chunking.chunk { return try embedChunks(bert, reader, size: size, skips: skips) }
        let embedder = try SentenceEmbedder(bert)
        let quantizer = try outputQuantizer(embedder)
        var stream = EmbeddingStream(embedder: embedder, options: embeddingOptions(embedder))
        // From here on SIGINT/SIGTERM stop at the next batch with a complete output.
        Interruption.installSignalHandlers()
        defer { Interruption.removeSignalHandlers() }
        stream.interruption = .process
        let writer: EmbeddingWriter
        if resume {
            (writer, stream.resumeAfter) = try EmbeddingWriter.resuming(format: format, path: output, dimension: quantizer.dimension, quantizer: quantizer)
        } else {
            writer = try EmbeddingWriter(format: format, sink: OutputSink.open(output), dimension: quantizer.dimension, quantizer: quantizer)
        }

        let bar = plan.progressBar()
        skips.beforeMessage = bar.finish
        let kept = stream.resumeAfter
        let resumed = {
            if !plan.quiet { writeStandardError("bert: \(output) holds \(kept) records; resuming with record \(kept + 1) of the input\n") }
        }
        let summary = try bar.around { try stream.embed(reader, into: writer, progress: bar.update, resumed: resumed) }
        try writer.sink.close()

        skips.summarize(source: reader.sourceName)
        reportTruncation(summary.truncated, of: summary.records, limit: effectiveLimit(embedding.maxLength, bert.config))
        if plan.isStreamed, !plan.quiet {
            writeStandardError(String(format: "bert: embedded %d lines in %.2f s (%.0f lines/s)\n",
                                      summary.records, summary.seconds, summary.recordsPerSecond))
        }
    }
}

extension Embed {
    /// Whether `--resume` can continue this command's output (the dense vectors' writer can).
    var canResume: Bool { chunking.chunk == nil && !sparse && !multiVector }

    /// How vectors are stored (`--embedding-type`, `--calibration`), checked before any output:
    /// the dimension (after `--dimensions`) and, for int8 and uint8, the calibration's ranges.
    func outputQuantizer(_ embedder: SentenceEmbedder) throws -> EmbeddingQuantizer {
        if let dimensions = embedding.dimensions { try embedder.checkDimensions(dimensions) }
        let dimension = embedding.dimensions ?? embedder.model.config.embeddingDimension
        let ranges = try calibration.map { path in
            let calibration = try NPYReader(path: path)
            guard calibration.columns == dimension else {
                throw CLIError.usage("--calibration \(path) holds \(calibration.columns)-dimensional vectors, and this run writes \(dimension); calibrate with embeddings of the same model and --dimensions")
            }
            return try EmbeddingRanges(calibration: calibration.readAll())
        }
        return try EmbeddingQuantizer(embeddingType, dimension: dimension, ranges: ranges)
    }

    /// The embedding options the command line gives, in the role of --query or --document.
    func embeddingOptions(_ embedder: SentenceEmbedder) -> SentenceEmbedder.Options {
        let options = embedding.options(normalize: noNormalize ? false : nil)
        return role.map { embedder.options(options, as: $0) } ?? options
    }

    /// `--sparse`, `--multi-vector` (and `--dense`): one JSON line per input record with every
    /// output asked for, all from one forward pass, a batch at a time.
    func embedOutputs(_ model: LoadedModel, _ reader: TextRecordReader, skips: SkipReport) throws {
        let embedder = try SentenceEmbedder(model)
        let outputs = RetrievalOutputs().union(dense ? .dense : []).union(sparse ? .sparse : []).union(multiVector ? .multiVector : [])
        // Fail before any output for a model without the heads asked for.
        if sparse { _ = try embedder.sparseHead() }
        if multiVector { _ = try embedder.multiVectorHead() }
        let options = embeddingOptions(embedder)
        let sink = try OutputSink.open(output)
        var truncated = 0
        // SIGINT/SIGTERM stop between batches, leaving whole lines.
        Interruption.installSignalHandlers()
        defer { Interruption.removeSignalHandlers() }
        let written = try reader.forEachBatch(upTo: embedding.batch.batchSize, interruption: .process, output: sink.name, finish: sink.close) { (records: [TextRecord]) in
            let embedded = try embedder.embed(records.map(\.text), outputs: outputs, options: options)
            truncated += embedded.truncated.count
            // A record's index is its place in the input, as every other `bert embed` output gives it.
            for (record, result) in zip(records, embedded.embeddings) {
                var fields: [(String, OrderedJSON)] = [("index", .int(record.index))]
                if let vector = result.dense { fields.append(("embedding", .array(vector.map { .float($0) }))) }
                if let vector = result.sparse {
                    fields.append(("sparse", .array(zip(vector.indices, vector.values).map { .object([("index", .int(Int($0))), ("value", .float($1))]) })))
                }
                if let vectors = result.multiVector { fields.append(("vectors", .array(vectors.map { .array($0.map { .float($0) }) }))) }
                try sink.write(OrderedJSON.object(fields).text + "\n")
            }
            try sink.flush()
        }
        try sink.close()
        skips.summarize(source: reader.sourceName)
        reportTruncation(truncated, of: written, limit: effectiveLimit(embedding.maxLength, model.config))
    }
}

/// `--chunk`: texts cut into windows of at most N tokens, embedded chunk by chunk.
struct ChunkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Cut each text into chunks of at most N tokens, [CLS], [SEP] and the prompt included, between words; each chunk embedded as its own text.", valueName: "n"))
    var chunk: Int?

    @Option(help: ArgumentHelp("Tokens consecutive chunks share: the most whole words of at most K tokens (default 0).", valueName: "k"))
    var overlap: Int?

    @Option(help: ArgumentHelp("none: a jsonl line per chunk, with its offsets (default); mean: one vector per text, the mean of its chunks'.", valueName: "none|mean"))
    var chunkPooling: ChunkPooling?
}

extension ChunkPooling: ExpressibleByArgument {}

extension Embed {
    func validateChunking() throws {
        guard chunking.chunk != nil else {
            if chunking.overlap != nil || chunking.chunkPooling != nil { throw ValidationError("--overlap and --chunk-pooling need --chunk N, the chunk size in tokens") }
            return
        }
        if sparse || multiVector { throw ValidationError("--chunk embeds dense vectors; it does not combine with --sparse or --multi-vector") }
        if resume { throw ValidationError("--chunk does not --resume; embed the rest of the input on its own") }
        if chunking.chunkPooling != .mean, format != .jsonl {
            throw ValidationError("--chunk writes jsonl, a line per chunk; for \(format.rawValue), one vector per text, add --chunk-pooling mean")
        }
    }

    /// `--chunk`: the chunks of a batch of texts embedded together; a line per chunk, or (mean)
    /// one record per text through the usual writer.
    func embedChunks(_ model: LoadedModel, _ reader: TextRecordReader, size: Int, skips: SkipReport) throws {
        let embedder = try SentenceEmbedder(model)
        let options = embeddingOptions(embedder)
        let overlap = chunking.overlap ?? 0
        _ = try embedder.chunker(maxTokens: size, overlap: overlap, options: options)  // a bad size fails before the output is made
        let quantizer = try outputQuantizer(embedder)
        let sink = try OutputSink.open(output)
        let means = chunking.chunkPooling == .mean
            ? try EmbeddingWriter(format: format, sink: sink, dimension: quantizer.dimension, quantizer: quantizer) : nil
        var chunks = 0
        // SIGINT/SIGTERM stop between batches, leaving whole texts (all their chunks) in a valid file.
        Interruption.installSignalHandlers()
        defer { Interruption.removeSignalHandlers() }
        let finish = { try means?.finish(); try sink.close() }
        let texts = try reader.forEachBatch(upTo: embedding.batch.batchSize, interruption: .process, output: sink.name, finish: finish) { (records: [TextRecord]) in
            let embedded = try embedder.embedChunks(records.map(\.text), maxTokens: size, overlap: overlap, options: options)
            chunks += embedded.chunks.count
            if let means {
                let vectors = TextChunker.meanVectors(embedded.vectors, of: embedded.chunks, textCount: records.count,
                                                      normalize: embedder.head(for: options).normalize)
                for (record, vector) in zip(records, vectors) { try means.write(index: record.index, vector: vector) }
            } else {
                for (chunk, vector) in zip(embedded.chunks, embedded.vectors) {
                    let values: [OrderedJSON] = embeddingType == .float32 ? vector.map { .float($0) } : try quantizer.values(vector).map { .int($0) }
                    try sink.write(OrderedJSON.object([
                        ("index", .int(records[chunk.textIndex].index)), ("chunk", .int(chunk.chunkIndex)),
                        ("start", .int(chunk.start)), ("end", .int(chunk.end)), ("tokens", .int(chunk.tokenCount)),
                        ("embedding", .array(values)),
                    ]).text + "\n")
                }
            }
            try sink.flush()
        }
        try finish()
        skips.summarize(source: reader.sourceName)
        if !input.plan.quiet { writeStandardError("bert: cut \(texts) texts into \(chunks) chunks of at most \(size) tokens\n") }
    }
}

/// The token limit inputs are truncated to.
func effectiveLimit(_ requested: Int?, _ config: ModelConfig) -> Int {
    min(requested ?? config.encoder.maxSequenceLength, config.encoder.positionLimit)
}
