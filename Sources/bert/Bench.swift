import ArgumentParser
import Foundation
import SwiftBERT

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare FP32 and INT8 side by side: latency, tokens/s, load time, size, memory, accuracy.",
        discussion: """
            Every cell (model, batch x seq, threads) runs one forward pass per precision in turn, \
            A B A B ..., and reports median and p90 wall time, tokens per second and FP32's median \
            over each other precision's. Resident memory is measured per precision in a fresh child \
            process (VmRSS/VmHWM from /proc/self/status); accuracy is against FP32 over real sentences \
            (Tests/SwiftBERTTests/Fixtures/sentences.txt): sentence-embedding cosine for models \
            without a masked-LM head, fill-mask top-1/top-5 agreement for models with one. List \
            options take comma-separated values and may be repeated. The default run takes about a \
            minute; progress goes to stderr. Reference: docs/int8.md, docs/benchmarks-int8.md.

            Examples:
              bert bench
              bert bench --model bert-base-random --seq 128 --threads 1 --profile
              bert bench --model all-MiniLM-L6-v2,splade-tiny,bert-base-random --precision fp32,int8,int8-weights --seconds 10
              bert bench --json | jq '.[] | select(.precision == "int8") | .speedup_vs_fp32'
            """)

    @Option(name: .customLong("model"), help: ArgumentHelp("Models (names under weights/ or paths). (default: all-MiniLM-L6-v2,splade-tiny)", valueName: "names"))
    var models: [String] = []

    @Option(name: .customLong("precision"), help: ArgumentHelp("Precisions to compare: fp32, int8, int8-weights. (default: fp32,int8)", valueName: "list"))
    var precisions: [String] = []

    @Option(name: .customLong("batch"), help: ArgumentHelp("Sequences per pass. With --seq, every combination is run. (default: cells 1x16, 1x128, 32x128)", valueName: "list"))
    var batches: [String] = []

    @Option(name: .customLong("seq"), help: ArgumentHelp("Tokens per sequence, [CLS] and [SEP] included.", valueName: "list"))
    var sequenceLengths: [String] = []

    @Option(name: .customLong("threads"), help: ArgumentHelp("Worker threads per pass. (default: 1,2)", valueName: "list"))
    var threads: [String] = []

    @Option(help: "Timed rounds per cell, exactly (instead of --seconds).")
    var repetitions: Int?

    @Option(help: ArgumentHelp("Time per cell: rounds go on until it has passed, at least 3 of them. (default: \(BenchmarkPlan.defaultSeconds))", valueName: "seconds"))
    var seconds: Double?

    @Flag(help: "Per-stage profile of the timed passes (embeddings, QKV, attention, ..., LayerNorm).")
    var profile = false

    @Option(help: ArgumentHelp("Sentences for accuracy, one per line. (default: the repository's 300-sentence fixture)", valueName: "file"))
    var sentences: String?

    @Option(help: ArgumentHelp("Use only the first N sentences for accuracy; 0 skips accuracy.", valueName: "n"))
    var accuracySentences: Int?

    @Flag(help: "Do not measure resident memory (no child processes).")
    var noMemory = false

    @Flag(help: "JSON: a list of rows (model, precision, batch, seq, threads, median_ms, ...).")
    var json = false

    @Flag(name: [.short, .long], help: "No progress lines on stderr.")
    var quiet = false

    /// Set by the parent in the child process that measures memory.
    @Option(help: .hidden)
    var memoryProbe: String?

    var flags: BenchmarkFlags {
        var flags = BenchmarkFlags()
        (flags.models, flags.precisions, flags.batches, flags.sequenceLengths, flags.threads) =
            (models, precisions, batches, sequenceLengths, threads)
        (flags.repetitions, flags.seconds, flags.profile, flags.json, flags.quiet) = (repetitions, seconds, profile, json, quiet)
        (flags.sentencesFile, flags.accuracySentences, flags.measuresMemory, flags.memoryProbe) =
            (sentences, accuracySentences, !noMemory, memoryProbe)
        return flags
    }

    func validate() throws {
        guard memoryProbe == nil else { return }
        do { _ = try flags.plan() } catch let error as BenchmarkError { throw ValidationError(error.message) }
    }

    func run() throws {
        let output: String
        do { output = try Benchmark.main(flags, probeArguments: ["bench", "--memory-probe"]) } catch let error as BenchmarkError {
            throw CLIError.usage(error.message)
        }
        let out = OutputSink.standardOutput()
        try out.write(output)
        try out.close()
    }
}
