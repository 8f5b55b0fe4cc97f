import Foundation
import SwiftBERT
import SwiftBERTCommandLine

/// What one benchmark run measures: `bert bench` and `SwiftBERTBenchmarks engine` both build one
/// from their options (`BenchmarkOptions`) and hand it to `Benchmark`.
package struct BenchmarkPlan: Sendable, Equatable {
    /// A batch of `batch` sequences of `sequenceLength` tokens each, [CLS] and [SEP] included.
    package struct Shape: Hashable, Sendable, CustomStringConvertible {
        package let batch: Int
        package let sequenceLength: Int
        package init(batch: Int, sequenceLength: Int) { (self.batch, self.sequenceLength) = (batch, sequenceLength) }
        package var tokens: Int { batch * sequenceLength }
        package var description: String { "\(batch)x\(sequenceLength)" }
    }

    package static let defaultModels = [ModelLocator.defaultEmbeddingModel, ModelLocator.defaultMaskedLMModel]
    package static let defaultPrecisions: [Precision] = [.fp32, .int8]
    /// Issue 5's cells: one short query, one full-length sequence, a full batch.
    package static let defaultShapes = [Shape(batch: 1, sequenceLength: 16), Shape(batch: 1, sequenceLength: 128),
                                       Shape(batch: 32, sequenceLength: 128)]
    package static let defaultThreads = [1, 2]
    package static let defaultSeconds = 3.0

    /// Model names (folders under weights/) or paths.
    package var models = defaultModels
    /// Compared side by side; speed-ups are against `.fp32`, accuracy always against FP32.
    package var precisions = defaultPrecisions
    package var shapes = defaultShapes
    package var threads = defaultThreads
    /// Timed rounds per cell (one pass per precision each); nil: rounds until `seconds` have
    /// passed, and at least `minimumRepetitions`.
    package var repetitions: Int?
    package var seconds = defaultSeconds
    package var minimumRepetitions = 3
    /// Attach a `StageProfile` to every timed pass and report where the time goes.
    package var profile = false
    /// Time the model's output heads (`RetrievalHead`'s parts) after every timed forward pass.
    package var timesHeads = false
    /// Real sentences for the accuracy figures (and the token ids of the timed inputs); nil:
    /// the repository's Tests/SwiftBERTTests/Fixtures/sentences.txt when it can be found.
    package var sentencesFile: String?
    /// How many of those sentences the accuracy figures use; nil: all, 0: no accuracy figures.
    package var accuracySentences: Int?
    /// Measure resident memory per precision in fresh child processes.
    package var measuresMemory = true

    package init() {}

    /// Every combination of the given batch sizes and sequence lengths; the defaults when
    /// neither is given (which leave out 32 x 16).
    package static func shapes(batches: [Int], sequenceLengths: [Int]) -> [Shape] {
        if batches.isEmpty, sequenceLengths.isEmpty { return defaultShapes }
        let batches = batches.isEmpty ? [1, 32] : batches
        let lengths = sequenceLengths.isEmpty ? [16, 128] : sequenceLengths
        return batches.flatMap { b in lengths.map { Shape(batch: b, sequenceLength: $0) } }
    }

    /// What is wrong with the plan, in the words of the flags; nil when it can run.
    package var problem: String? {
        if models.isEmpty { return "--model needs at least one model" }
        if precisions.isEmpty { return "--precision needs at least one of \(Precision.allCases.map(\.rawValue).joined(separator: ", "))" }
        if shapes.isEmpty { return "--batch and --seq need at least one value each" }
        if let bad = shapes.first(where: { !(1...maximumBatchSize).contains($0.batch) }) { return "--batch \(bad.batch): must be between 1 and \(maximumBatchSize)" }
        if let bad = shapes.first(where: { $0.sequenceLength < 2 }) {
            return "--seq \(bad.sequenceLength): must be at least 2 ([CLS] and [SEP])"
        }
        if threads.isEmpty || threads.contains(where: { !(1...maximumThreads).contains($0) }) { return "--threads needs values between 1 and \(maximumThreads)" }
        if let repetitions, repetitions < 1 { return "--repetitions must be at least 1" }
        if !(seconds >= 0 && seconds.isFinite) { return "--seconds must be a number, 0 or more" }
        if let accuracySentences, accuracySentences < 0 { return "--accuracy-sentences must be 0 or more" }
        return nil
    }

    /// A model's name as every figure from it is labelled: models whose name says their weights
    /// are random (bert-base-random, made by tools/make_random_bert.py) are for timing only.
    package static func label(model name: String) -> String {
        hasRandomWeights(model: name) ? "\(name) (random weights, timing only)" : name
    }

    /// Whether a model's outputs are meaningless (its accuracy is then not measured).
    package static func hasRandomWeights(model name: String) -> Bool {
        name.lowercased().contains("random")
    }
}

/// A benchmark that cannot run as asked: a flag it cannot use (the message names the flag), or a
/// memory probe that failed.
package struct BenchmarkError: Error, CustomStringConvertible, Equatable {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
