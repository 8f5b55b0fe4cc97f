import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

extension Precision: ExpressibleByArgument {}
extension Pooling: ExpressibleByArgument {}
extension InputFormat: ExpressibleByArgument {}
extension EmbeddingFormat: ExpressibleByArgument {}
extension EmbeddingType: ExpressibleByArgument {}

/// `bert embed --query`, `--document`, `--classification` or `--clustering`.
extension TextRole: EnumerableFlag {
    public static func help(for value: TextRole) -> ArgumentHelp? {
        switch value {
        case .query: "Embed the texts as search queries: with the model's \"query\" prompt if it has one, else none (sentence-transformers' encode_query)."
        case .document: "Embed the texts as documents to search: with the model's \"document\" prompt if it has one, else none (encode_document); what `bert search --embeddings` reads."
        case .classification: "Embed the texts to classify them: with the model's \"classification\" (or \"Classification\") prompt if it has one, else none."
        case .clustering: "Embed the texts to cluster them: with the model's \"clustering\" (or \"Clustering\") prompt if it has one, else none."
        }
    }
}

/// How the encoder runs: --precision, --threads.
struct EngineOptions: ParsableArguments {
    @Option(help: "Encoder precision: fp32 (exact), bf16 (BF16 Linear layers), int8, int8-attention (attention in integers too) or int8-weights (faster, approximate; need `bert quantize`), int8-static (calibrated activation ranges; needs `bert quantize --calibrate FILE`).")
    var precision: Precision = .fp32

    @Option(help: "Worker threads for a forward pass (default: one per core).")
    var threads: Int?

    func validate() throws {
        if let threads, !(1...maximumThreads).contains(threads) { throw ValidationError("--threads must be between 1 and \(maximumThreads)") }
    }

    /// The model folder for a name or path, loaded (`loadModel`): any architecture, any head.
    func load(_ nameOrPath: String) throws -> LoadedModel {
        // A Hugging Face folder (say, one `bert train-classifier` wrote) is converted on first use.
        let folder = try ModelLocator.folder(nameOrPath, precisions: [precision])
        return try loadModel(folder: folder, threads: threads, precision: precision)
    }
}

/// Sentence-embedding settings shared by embed, similarity and search.
/// TEI's truncation_direction, spelt as a command-line value.
enum TruncationDirection: String, ExpressibleByArgument, CaseIterable {
    case right, left
}

struct EmbeddingOptions: ParsableArguments {
    @Option(help: "Pooling of token vectors: cls, mean, max, mean_sqrt_len_tokens, weightedmean or lasttoken (default: the model's own).")
    var pooling: Pooling?

    @Option(help: ArgumentHelp("Put the model's prompt NAME before every text (config_sentence_transformers.json; default: the model's default prompt).", valueName: "name"))
    var promptName: String?

    @Option(help: ArgumentHelp("Put TEXT before every text (\"\" for no prompt at all); wins over --prompt-name.", valueName: "text"))
    var prompt: String?

    @Option(help: "Tokens per input, [CLS] and [SEP] included; longer inputs are truncated (default: the model's limit).")
    var maxLength: Int?

    @Option(help: ArgumentHelp("Matryoshka: keep each vector's first N values, normalised again unless --no-normalize (TEI's and OpenAI's dimensions; default: all).", valueName: "n"))
    var dimensions: Int?

    @OptionGroup var batch: BatchOptions

    func validate() throws {
        if let maxLength, maxLength < 2 { throw ValidationError("--max-length must be at least 2 ([CLS] and [SEP])") }
        if let dimensions, dimensions < 1 { throw ValidationError("--dimensions must be at least 1") }
    }

    /// `normalize` nil: as the model says (its Normalize module).
    func options(normalize: Bool? = nil) -> SentenceEmbedder.Options {
        SentenceEmbedder.Options(pooling: pooling, normalize: normalize, maxLength: maxLength, batchSize: batch.batchSize,
                                 promptName: promptName, prompt: prompt, truncates: batch.truncate, truncatesLeft: batch.truncationDirection == .left,
                                 dimensions: dimensions)
    }
}

/// A command that prints its best `--top-k` results: its `validate` checks the count.
protocol TopKCommand: ParsableArguments {
    var topK: Int { get }
}

extension TopKCommand {
    func validate() throws {
        if topK < 1 { throw ValidationError("--top-k must be at least 1") }
    }
}

/// The model a masked-LM command uses and how it runs (fill, suggest).
struct MaskedLMModelOptions: ParsableArguments {
    @Option(help: "Model with a masked-LM head: a name under weights/ or a path.")
    var model = ModelLocator.defaultMaskedLMModel

    @OptionGroup var engine: EngineOptions

    func load() throws -> LoadedModel { try engine.load(model) }
}

/// The model a sentence-embedding command uses, its embedding settings and how it runs
/// (similarity, search).
struct EmbeddingModelOptions: ParsableArguments {
    @Option(help: "Model name (a folder under weights/) or path to a converted model.")
    var model = ModelLocator.defaultEmbeddingModel

    @OptionGroup var embedding: EmbeddingOptions
    @OptionGroup var engine: EngineOptions

    /// The model and an embedder over it.
    func load() throws -> (LoadedModel, SentenceEmbedder) {
        let loaded = try engine.load(model)
        return (loaded, try SentenceEmbedder(loaded))
    }
}

/// Where texts come from: arguments, --input FILE, or stdin.
struct InputOptions: ParsableArguments {
    @Argument(help: "Texts to process. With none, texts are read from --input or stdin.")
    var texts: [String] = []

    @Option(name: [.short, .long], help: ArgumentHelp("Read texts from FILE, one per line; - is stdin.", valueName: "file"))
    var input: String?

    @OptionGroup var reading: ReadingOptions

    func validate() throws {
        if !texts.isEmpty, input != nil { throw ValidationError("give texts as arguments or with --input, not both") }
    }

    var plan: InputPlan { reading.plan(input.map { .file($0) } ?? (texts.isEmpty ? .standardInput : .texts(texts))) }
}

/// A command that reads its texts with `InputOptions`, so it has --skip-invalid.
protocol ReadsTextInput {}
extension Embed: ReadsTextInput {}
extension Classify: ReadsTextInput {}
extension NER: ReadsTextInput {}
extension Tokenize: ReadsTextInput {}

/// How streamed lines are read and reported: --input-format, --skip-invalid, --quiet.
struct ReadingOptions: ParsableArguments {
    @Option(help: "lines: one text per line. jsonl: each line a JSON string or an object with a \"text\" field.")
    var inputFormat: InputFormat = .lines

    @Flag(help: "Skip lines that are not valid UTF-8 (or not valid JSON Lines) instead of stopping; each is reported on stderr.")
    var skipInvalid = false

    @Flag(name: [.short, .long], help: "No progress bar or summary on stderr (warnings are still shown).")
    var quiet = false

    func plan(_ source: TextSource) -> InputPlan {
        InputPlan(source: source, format: inputFormat, skipInvalid: skipInvalid, quiet: quiet)
    }
}

/// Resolved input settings: the reader, the terminal hint and the progress bar that go with them.
struct InputPlan {
    let source: TextSource
    let format: InputFormat
    let skipInvalid: Bool
    let quiet: Bool

    /// True when texts are streamed from a file or stdin rather than given as arguments.
    var isStreamed: Bool {
        if case .texts = source { return false }
        return true
    }

    var readsStandardInput: Bool { source == .standardInput || source == .file("-") }

    /// A reader that reports skipped lines as it meets them.
    func reader(report: SkipReport) throws -> TextRecordReader {
        if readsStandardInput, isTerminal(STDIN_FILENO), !quiet {
            writeStandardError("bert: reading texts from the terminal, one per line; end with Ctrl-D\n")
        }
        return try TextRecordReader(source, format: format, skipInvalid: skipInvalid) { report.skipped($0) }
    }

    /// A progress bar for streamed input when stderr is a terminal (not while typing into stdin).
    func progressBar() -> ProgressBar {
        let typing = readsStandardInput && isTerminal(STDIN_FILENO)
        return ProgressBar(unit: "lines", enabled: isStreamed && !quiet && !typing && isTerminal(STDERR_FILENO))
    }
}

/// Reports lines left out by --skip-invalid: each one as it is met, then a count and list.
final class SkipReport {
    private(set) var lines: [Int] = []
    private var count = 0
    /// Runs before each message, to erase a progress bar.
    var beforeMessage: () -> Void = {}

    func skipped(_ record: SkippedRecord) {
        count += 1
        if lines.count < 20 { lines.append(record.line) }
        beforeMessage()
        writeStandardError("bert: skipped line \(record.line): \(record.error.reason)\n")
    }

    /// "skipped 3 invalid lines of data.txt: 4, 9, 12"; nothing when none were skipped.
    func summarize(source: String) {
        guard count > 0 else { return }
        let list = lines.map(String.init).joined(separator: ", ") + (count > lines.count ? ", …" : "")
        writeStandardError("bert: skipped \(count) invalid line\(count == 1 ? "" : "s") of \(source): \(list)\n")
    }
}

/// The note on inputs cut to the model's limit: the count, on stderr.
func reportTruncation(_ truncated: Int, of records: Int, limit: Int) {
    guard truncated > 0 else { return }
    writeStandardError("bert: \(truncated) of \(records) inputs were longer than \(limit) tokens and were truncated\n")
}

/// Writes a command's whole result to stdout, then closes it (a reader that stopped reading
/// surfaces as StreamError.outputClosed).
func writeResult(_ text: String) throws {
    let out = OutputSink.standardOutput()
    try out.write(text)
    try out.close()
}

/// Whether two paths name the same existing file (same device and inode).
func sameFile(_ a: String, _ b: String) -> Bool {
    var sa = stat(), sb = stat()
    guard stat(a, &sa) == 0, stat(b, &sb) == 0 else { return false }
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
}

extension ProgressBar {
    /// Runs `body`, then erases the bar, also when `body` throws, so an error starts its own line.
    func around<T>(_ body: () throws -> T) rethrows -> T {
        defer { finish() }
        return try body()
    }
}

/// --batch-size, --truncate and --truncation-direction: how the commands that run the model over
/// many inputs (embed, similarity, search, classify, ner) batch them and fit them to its limit.
struct BatchOptions: ParsableArguments {
    @Option(help: "Inputs per forward pass (at most \(maximumBatchSize)).")
    var batchSize = 32

    @Flag(inversion: .prefixedNo, help: "Cut inputs longer than the limit (--no-truncate: refuse them, as TEI's truncate=false).")
    var truncate = true

    @Option(help: ArgumentHelp("Which end of a long input is cut: right (its end, the default) or left (its start), as TEI's truncation_direction.", valueName: "right|left"))
    var truncationDirection: TruncationDirection = .right

    func validate() throws {
        if !(1...maximumBatchSize).contains(batchSize) { throw ValidationError("--batch-size must be between 1 and \(maximumBatchSize)") }
    }

    /// --truncate / --no-truncate and --truncation-direction, as the library takes them.
    var truncation: Truncation { Truncation(truncates: truncate, fromLeft: truncationDirection == .left) }
}
