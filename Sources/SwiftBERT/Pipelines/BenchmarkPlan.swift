import Foundation

/// What one benchmark run measures: `bert bench` and `SwiftBERTBenchmarks engine` both build one
/// from their flags (`BenchmarkFlags`) and hand it to `Benchmark`.
public struct BenchmarkPlan: Sendable, Equatable {
    /// A batch of `batch` sequences of `sequenceLength` tokens each, [CLS] and [SEP] included.
    public struct Shape: Hashable, Sendable, CustomStringConvertible {
        public let batch: Int
        public let sequenceLength: Int
        public init(batch: Int, sequenceLength: Int) { (self.batch, self.sequenceLength) = (batch, sequenceLength) }
        public var tokens: Int { batch * sequenceLength }
        public var description: String { "\(batch)x\(sequenceLength)" }
    }

    public static let defaultModels = [ModelLocator.defaultEmbeddingModel, ModelLocator.defaultMaskedLMModel]
    public static let defaultPrecisions: [Precision] = [.fp32, .int8]
    /// Issue 5's cells: one short query, one full-length sequence, a full batch.
    public static let defaultShapes = [Shape(batch: 1, sequenceLength: 16), Shape(batch: 1, sequenceLength: 128),
                                       Shape(batch: 32, sequenceLength: 128)]
    public static let defaultThreads = [1, 2]
    public static let defaultSeconds = 3.0

    /// Model names (folders under weights/) or paths.
    public var models = defaultModels
    /// Compared side by side; speed-ups are against `.fp32`, accuracy always against FP32.
    public var precisions = defaultPrecisions
    public var shapes = defaultShapes
    public var threads = defaultThreads
    /// Timed rounds per cell (one pass per precision each); nil: rounds until `seconds` have
    /// passed, and at least `minimumRepetitions`.
    public var repetitions: Int?
    public var seconds = defaultSeconds
    public var minimumRepetitions = 3
    /// Attach a `StageProfile` to every timed pass and report where the time goes.
    public var profile = false
    /// Real sentences for the accuracy figures (and the token ids of the timed inputs); nil:
    /// the repository's Tests/SwiftBERTTests/Fixtures/sentences.txt when it can be found.
    public var sentencesFile: String?
    /// How many of those sentences the accuracy figures use; nil: all, 0: no accuracy figures.
    public var accuracySentences: Int?
    /// Measure resident memory per precision in fresh child processes.
    public var measuresMemory = true

    public init() {}

    /// Every combination of the given batch sizes and sequence lengths; the defaults when
    /// neither is given (which leave out 32 x 16).
    public static func shapes(batches: [Int], sequenceLengths: [Int]) -> [Shape] {
        if batches.isEmpty, sequenceLengths.isEmpty { return defaultShapes }
        let batches = batches.isEmpty ? [1, 32] : batches
        let lengths = sequenceLengths.isEmpty ? [16, 128] : sequenceLengths
        return batches.flatMap { b in lengths.map { Shape(batch: b, sequenceLength: $0) } }
    }

    /// What is wrong with the plan, in the words of the flags; nil when it can run.
    public var problem: String? {
        if models.isEmpty { return "--model needs at least one model" }
        if precisions.isEmpty { return "--precision needs at least one of \(Precision.allCases.map(\.rawValue).joined(separator: ", "))" }
        if shapes.isEmpty { return "--batch and --seq need at least one value each" }
        if let bad = shapes.first(where: { $0.batch < 1 }) { return "--batch \(bad.batch): must be at least 1" }
        if let bad = shapes.first(where: { $0.sequenceLength < 2 }) {
            return "--seq \(bad.sequenceLength): must be at least 2 ([CLS] and [SEP])"
        }
        if threads.isEmpty || threads.contains(where: { $0 < 1 }) { return "--threads needs values of at least 1" }
        if let repetitions, repetitions < 1 { return "--repetitions must be at least 1" }
        if !(seconds >= 0) { return "--seconds must be 0 or more" }
        if let accuracySentences, accuracySentences < 0 { return "--accuracy-sentences must be 0 or more" }
        return nil
    }

    /// A model's name as every figure from it is labelled: models whose name says their weights
    /// are random (bert-base-random, made by tools/make_random_bert.py) are for timing only.
    public static func label(model name: String) -> String {
        hasRandomWeights(model: name) ? "\(name) (random weights, timing only)" : name
    }

    /// Whether a model's outputs are meaningless (its accuracy is then not measured).
    public static func hasRandomWeights(model name: String) -> Bool {
        name.lowercased().contains("random")
    }
}

/// The benchmark's flags as text, before they are checked: the one place that turns command-line
/// values into a `BenchmarkPlan`. List flags take comma-separated values and may be repeated.
public struct BenchmarkFlags: Sendable, Equatable {
    public var models: [String] = []
    public var precisions: [String] = []
    public var batches: [String] = []
    public var sequenceLengths: [String] = []
    public var threads: [String] = []
    public var repetitions: Int?
    public var seconds: Double?
    public var profile = false
    public var json = false
    public var quiet = false
    public var sentencesFile: String?
    public var accuracySentences: Int?
    public var measuresMemory = true
    /// Set in the child process that measures memory: the request it answers.
    public var memoryProbe: String?

    public static let usage = """
        [--model NAME,...] [--precision fp32,int8,int8-weights] [--batch 1,32] [--seq 16,128] [--threads 1,2] \
        [--repetitions N | --seconds S] [--profile] [--json] [--quiet] [--sentences FILE] [--accuracy-sentences N] [--no-memory]
        """

    public init() {}

    /// Parses `--flag value` pairs, for programs without swift-argument-parser. A bare word is a model.
    public init(arguments: [String]) throws {
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchmarkError("\(flag) needs a value") }
            return arguments[index]
        }
        func number<T: LosslessStringConvertible>(_ flag: String) throws -> T {
            let text = try value(flag)
            guard let number = T(text) else { throw BenchmarkError("\(flag) \(text): not a number") }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--model": models.append(try value(argument))
            case "--precision": precisions.append(try value(argument))
            case "--batch": batches.append(try value(argument))
            case "--seq": sequenceLengths.append(try value(argument))
            case "--threads": threads.append(try value(argument))
            case "--repetitions": repetitions = try number(argument)
            case "--seconds": seconds = try number(argument)
            case "--sentences": sentencesFile = try value(argument)
            case "--accuracy-sentences": accuracySentences = try number(argument)
            case "--memory-probe": memoryProbe = try value(argument)
            case "--profile": profile = true
            case "--json": json = true
            case "--quiet", "-q": quiet = true
            case "--no-memory": measuresMemory = false
            default:
                guard !argument.hasPrefix("-") else { throw BenchmarkError("unknown flag \(argument)") }
                models.append(argument)
            }
            index += 1
        }
    }

    /// The checked plan.
    public func plan() throws -> BenchmarkPlan {
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
        plan.sentencesFile = sentencesFile
        plan.accuracySentences = accuracySentences
        plan.measuresMemory = measuresMemory
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

/// A benchmark that cannot run as asked: a flag it cannot use (the message names the flag), or a
/// memory probe that failed.
public struct BenchmarkError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
