import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

/// The benchmark's options, the one definition of them: `bert bench` includes them with
/// `@OptionGroup`, and `SwiftBERTBenchmarks engine` parses them with `BenchmarkOptions.parse`.
/// List options take comma-separated values and may be repeated; `plan()` checks them.
package struct BenchmarkOptions: ParsableArguments, Sendable {
    @Option(name: .customLong("model"), help: ArgumentHelp("Models (names under weights/ or paths). (default: all-MiniLM-L6-v2,splade-tiny)", valueName: "names"))
    package var models: [String] = []

    @Option(name: .customLong("precision"), help: ArgumentHelp("Precisions to compare: fp32, bf16, int8, int8-attention, int8-weights, int8-static. (default: fp32,int8)", valueName: "list"))
    package var precisions: [String] = []

    @Option(name: .customLong("batch"), help: ArgumentHelp("Sequences per pass. With --seq, every combination is run. (default: cells 1x16, 1x128, 32x128)", valueName: "list"))
    package var batches: [String] = []

    @Option(name: .customLong("seq"), help: ArgumentHelp("Tokens per sequence, [CLS] and [SEP] included.", valueName: "list"))
    package var sequenceLengths: [String] = []

    @Option(name: .customLong("threads"), help: ArgumentHelp("Worker threads per pass. (default: 1,2)", valueName: "list"))
    package var threads: [String] = []

    @Option(help: "Timed rounds per cell, exactly (instead of --seconds).")
    package var repetitions: Int?

    @Option(help: ArgumentHelp("Time per cell: rounds go on until it has passed, at least 3 of them. (default: \(BenchmarkPlan.defaultSeconds))", valueName: "seconds"))
    package var seconds: Double?

    @Flag(help: "Per-stage profile of the timed passes (embeddings, QKV, attention, ..., LayerNorm).")
    package var profile = false

    @Flag(help: "Also time each output head the model has (dense pooling, sparse, multi-vector) on every pass's hidden states.")
    package var heads = false

    @Option(help: ArgumentHelp("Sentences for accuracy, one per line. (default: the repository's 300-sentence fixture)", valueName: "file"))
    package var sentences: String?

    @Option(help: ArgumentHelp("Use only the first N sentences for accuracy; 0 skips accuracy.", valueName: "n"))
    package var accuracySentences: Int?

    @Flag(help: "Do not measure resident memory (no child processes).")
    package var noMemory = false

    @Flag(help: "JSON: a list of rows (model, precision, batch, seq, threads, median_ms, ...).")
    package var json = false

    @Flag(name: [.short, .long], help: "No progress lines on stderr.")
    package var quiet = false

    /// Set by the parent in the child process that measures memory: the request it answers.
    @Option(help: .hidden)
    package var memoryProbe: String?

    package init() {}

    /// A flag the plan cannot use is a usage error, in the words of `plan()`.
    package func validate() throws {
        guard memoryProbe == nil else { return }
        do { _ = try plan() } catch let error as BenchmarkError { throw ValidationError(error.message) }
    }

    /// The checked plan.
    package func plan() throws -> BenchmarkPlan {
        var plan = BenchmarkPlan()
        let models = Self.list(self.models)
        if !models.isEmpty { plan.models = models }
        if !precisions.isEmpty {
            plan.precisions = []
            for name in Self.list(precisions) {
                guard let precision = Precision(rawValue: name) else {
                    throw BenchmarkError("--precision \(name): not one of \(Precision.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                if !plan.precisions.contains(precision) { plan.precisions.append(precision) }
            }
        }
        plan.shapes = BenchmarkPlan.shapes(batches: try Self.integers(batches, flag: "--batch"),
                                           sequenceLengths: try Self.integers(sequenceLengths, flag: "--seq"))
        if !threads.isEmpty { plan.threads = try Self.integers(threads, flag: "--threads") }
        plan.repetitions = repetitions
        if let seconds { plan.seconds = seconds }
        plan.profile = profile
        plan.timesHeads = heads
        plan.sentencesFile = sentences
        plan.accuracySentences = accuracySentences
        plan.measuresMemory = !noMemory
        if let problem = plan.problem { throw BenchmarkError(problem) }
        return plan
    }

    /// "a,b" "c" -> [a, b, c].
    static func list(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func integers(_ values: [String], flag: String) throws -> [Int] {
        try list(values).map { text in
            guard let value = Int(text) else { throw BenchmarkError("\(flag) \(text): not a whole number") }
            return value
        }
    }
}
