import COpenBLAS
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

/// FP32 against INT8, side by side on the same inputs: latency and throughput per cell (model,
/// batch x sequence length, threads), load time, file size, resident memory (in child processes,
/// see `BenchmarkMemoryProbe`) and accuracy against FP32 on real sentences. What `bert bench`
/// and `SwiftBERTBenchmarks engine` run; `Benchmark.main` is all either front end calls.
///
/// Timing: each round runs one forward pass (`encode`) per precision in turn, A B A B ..., so
/// the noise of a shared machine hits every precision alike; a cell reports the median and
/// 90th percentile of its rounds' wall times.
package final class Benchmark {
    package let plan: BenchmarkPlan
    /// How to start the memory-measuring child; nil: memory is not measured.
    package let memoryProbe: BenchmarkMemoryProbe.Launcher?
    private let progress: (String) -> Void

    /// `progress` receives a line per step (for stderr); the results come back from `run`.
    package init(plan: BenchmarkPlan, memoryProbe: BenchmarkMemoryProbe.Launcher?, progress: @escaping (String) -> Void = { _ in }) {
        self.plan = plan
        self.memoryProbe = memoryProbe
        self.progress = progress
    }

    /// Everything a front end does with its parsed options: answers a memory probe (when this
    /// process is the child) or runs the plan; returns the text to print on stdout.
    /// `probeArguments` start this same program in probe mode, e.g. ["bench", "--memory-probe"].
    package static func main(_ options: BenchmarkOptions, probeArguments: [String]) throws -> String {
        if let request = options.memoryProbe { return try BenchmarkMemoryProbe.respond(to: request) + "\n" }
        let benchmark = Benchmark(plan: try options.plan(), memoryProbe: .currentProgram(arguments: probeArguments),
                                  progress: options.quiet ? { _ in } : { writeStandardError("bench: \($0)\n") })
        let report = try benchmark.run()
        return options.json ? report.jsonText : report.text
    }

    package func run() throws -> BenchmarkReport {
        if let problem = plan.problem { throw BenchmarkError(problem) }
        let environment = BenchmarkEnvironment.current()
        progress("OpenBLAS core \(environment.openBLASCore), load average \(environment.loadAverage ?? "?")")
        let started = monotonicSeconds()
        let sentences = try loadSentences()
        let models = try plan.models.map { try measure(model: $0, sentences: sentences) }
        return BenchmarkReport(plan: plan, environment: environment, models: models,
                               loadAverageAtEnd: BenchmarkEnvironment.loadAverage(), seconds: monotonicSeconds() - started)
    }

    private func loadSentences() throws -> [String]? {
        if let path = plan.sentencesFile { return try BenchmarkSentences.load(URL(fileURLWithPath: path)) }
        return try BenchmarkSentences.defaultFile().map { try BenchmarkSentences.load($0) }
    }

    // MARK: - One model

    private func measure(model name: String, sentences: [String]?) throws -> BenchmarkReport.Model {
        let folder = try ModelLocator.folder(name, precisions: plan.precisions)
        let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
        let tokenizer = try Tokenizer.load(folder: folder)
        if let long = plan.shapes.first(where: { $0.sequenceLength > config.encoder.positionLimit }) {
            throw BenchmarkError("--seq \(long.sequenceLength): \(name) takes at most \(config.encoder.positionLimit) tokens")
        }
        var notes: [String] = []
        let family = ModelFamilies.family(of: config.encoder)
        let kind = (config.encoder.architecture ?? .bert).displayName, runs = family.precisions.map(\.rawValue).joined(separator: ", ")
        let precisions = plan.precisions.filter(family.precisions.contains)
        for precision in plan.precisions where !family.precisions.contains(precision) {
            notes.append("\(precision.rawValue) not measured: \(kind) runs in \(runs) only")
            progress("\(precision.rawValue) left out: \(kind) runs in \(runs) only")
        }
        guard !precisions.isEmpty else {
            throw BenchmarkError("--precision: \(name) is a \(kind) model, which runs in \(runs) only; ask for one of those")
        }
        let memory = measureMemory(folder: folder, name: name, precisions: precisions, notes: &notes)

        // Speed: one instance per precision for each thread count, all loaded at once.
        let text = (sentences ?? []).flatMap { tokenizer.encode($0, addSpecialTokens: false).ids }
        var loadSeconds: [Precision: Double] = [:]
        var cells: [BenchmarkReport.Cell] = []
        for threads in plan.threads {
            let models = try precisions.map { try loadTimedModel(folder: folder, threads: threads, precision: $0) }
            for model in models {
                loadSeconds[model.precision] = min(loadSeconds[model.precision] ?? .infinity, model.loadSeconds)
                // Fault the weights in before the first timed pass.
                _ = try model.encode(inputs(.init(batch: 1, sequenceLength: 16), text: text, tokenizer: tokenizer, vocabulary: config.encoder.vocabSize))
            }
            let heads = plan.timesHeads ? try outputHeads(models[0], tokenizer: tokenizer) : []
            for shape in plan.shapes {
                let batch = inputs(shape, text: text, tokenizer: tokenizer, vocabulary: config.encoder.vocabSize)
                let measured = try measureCell(models, batch: batch, shape: shape, threads: threads, heads: heads)
                cells += measured
                progress("\(name) \(shape), \(threads) thread\(threads == 1 ? "" : "s"): "
                         + measured.map { cell in
                             String(format: "%@ %.2f ms", cell.precision.rawValue, cell.medianMilliseconds)
                                 + (cell.speedUp.map { String(format: " (%.2fx)", $0) } ?? "")
                                 + (cell.headMilliseconds ?? []).map { String(format: " + %@ %.3f ms", $0.name, $0.milliseconds) }.joined()
                         }.joined(separator: ", ") + ", \(measured.first?.rounds ?? 0) rounds")
            }
        }

        let accuracy = try measureAccuracy(folder: folder, name: name, config: config, tokenizer: tokenizer, precisions: precisions,
                                           sentences: sentences, notes: &notes)
        let figures = precisions.map { precision in
            BenchmarkReport.PrecisionFigures(precision: precision, fileBytes: fileSize(folder.appendingPathComponent(precision.fileName)),
                                             loadSeconds: loadSeconds[precision] ?? .nan, memory: memory[precision],
                                             accuracy: accuracy[precision])
        }
        return BenchmarkReport.Model(name: name, path: folder.path, config: config, precisions: figures, cells: cells, notes: notes)
    }

    /// Each precision in its own child process, before this process has loaded anything big.
    private func measureMemory(folder: URL, name: String, precisions: [Precision], notes: inout [String]) -> [Precision: BenchmarkMemoryProbe.Usage] {
        guard plan.measuresMemory else { return [:] }
        guard let probe = memoryProbe else {
            notes.append("resident memory not measured: no child process to measure it in")
            return [:]
        }
        let largest = plan.shapes.max { $0.tokens < $1.tokens }!
        var usage: [Precision: BenchmarkMemoryProbe.Usage] = [:]
        for precision in precisions {
            progress("\(name) \(precision.rawValue): resident memory, in a child process")
            do { usage[precision] = try BenchmarkMemoryProbe.run(probe, folder: folder, precision: precision, largest: largest) } catch {
                notes.append("\(precision.rawValue) resident memory not measured: \(error)")
            }
        }
        return usage
    }

    private func measureAccuracy(folder: URL, name: String, config: ModelConfig, tokenizer: Tokenizer, precisions: [Precision], sentences: [String]?,
                                 notes: inout [String]) throws -> [Precision: BenchmarkAccuracy] {
        guard plan.accuracySentences != 0, precisions.contains(where: { $0 != .fp32 }) else { return [:] }
        if BenchmarkPlan.hasRandomWeights(model: name) {
            notes.append("random weights: outputs are meaningless, so no accuracy figures")
            return [:]
        }
        if config.encoder.mobileBert != nil, !config.heads.hasMaskedLMHead {
            notes.append("no accuracy figures: a MobileBERT model without its masked-LM head has neither fill-mask nor sentence embeddings")
            return [:]
        }
        guard let sentences else {
            notes.append("no accuracy figures: \(BenchmarkSentences.fixture) not found; pass --sentences FILE")
            return [:]
        }
        let used = Array(sentences.prefix(plan.accuracySentences ?? sentences.count))
        progress("\(name): accuracy against fp32 over \(used.count) sentences")
        return try BenchmarkAccuracy.measure(folder: folder, tokenizer: tokenizer, precisions: precisions,
                                             sentences: used, threads: plan.threads.max() ?? 1)
    }

    // MARK: - One cell

    /// Rounds of one pass per precision, in turn, until the plan's time or repetitions are spent.
    private func measureCell(_ models: [any EncoderModel], batch: [[Int32]], shape: BenchmarkPlan.Shape,
                             threads: Int, heads: [OutputHead]) throws -> [BenchmarkReport.Cell] {
        var wall = [[Double]](repeating: [], count: models.count)
        var cpu = wall
        var headSeconds = [[[Double]]](repeating: [[Double]](repeating: [], count: heads.count), count: models.count)
        var stages = [[StageProfile.Stage: [Double]]](repeating: [:], count: models.count)
        let start = monotonicSeconds()
        var rounds = 0
        while needsAnotherRound(after: rounds, elapsed: monotonicSeconds() - start) {
            for (i, model) in models.enumerated() {
                let profile = plan.profile ? StageProfile() : nil
                let (wall0, cpu0) = (monotonicSeconds(), processCPUSeconds())
                let output = try model.encode(batch, typeIds: nil, profile: profile)
                wall[i].append(monotonicSeconds() - wall0)
                cpu[i].append(processCPUSeconds() - cpu0)
                for (h, head) in heads.enumerated() {
                    let head0 = monotonicSeconds()
                    try head.run(output, HeadBatch(threads: threads))
                    headSeconds[i][h].append(monotonicSeconds() - head0)
                }
                for (stage, seconds) in profile?.seconds ?? [:] { stages[i][stage, default: []].append(seconds) }
            }
            rounds += 1
        }
        let medians = wall.map { percentile($0, 0.5) }
        let reference = models.firstIndex { $0.precision == .fp32 }.map { medians[$0] }
        return models.indices.map { i in
            BenchmarkReport.Cell(
                shape: shape, threads: threads, precision: models[i].precision, rounds: rounds,
                medianMilliseconds: medians[i] * 1e3, p90Milliseconds: percentile(wall[i], 0.9) * 1e3,
                cpuMedianMilliseconds: percentile(cpu[i], 0.5) * 1e3,
                speedUp: models[i].precision == .fp32 ? nil : reference.map { $0 / medians[i] },
                profileMilliseconds: plan.profile ? stages[i].mapValues { percentile($0, 0.5) * 1e3 } : nil,
                headMilliseconds: heads.isEmpty ? nil : zip(heads, headSeconds[i]).map { ($0.name, percentile($1, 0.5) * 1e3) })
        }
    }

    /// A head timed after the forward pass: its name and a call over the pass's output.
    struct OutputHead {
        let name: String
        let run: (EncoderOutput, HeadBatch) throws -> Void
    }

    /// The output heads `model` has: dense pooling always; sparse and multi-vector when its
    /// checkpoint has them. Heads run in FP32 whatever the encoder's precision, so one set serves all.
    private func outputHeads(_ model: any EncoderModel, tokenizer: Tokenizer) throws -> [OutputHead] {
        let dense = try SentenceHead(model)
        var heads = [OutputHead(name: "dense") { _ = dense($0, $1) }]
        if model.heads.contains(.sparseEmbedding) {
            let sparse = try SparseHead(model, tokenizer: tokenizer)
            heads.append(OutputHead(name: "sparse") { _ = try sparse($0, $1) })
        }
        if model.heads.contains(.multiVector) {
            let multiVector = try MultiVectorHead(model)
            heads.append(OutputHead(name: "multi-vector") { _ = try multiVector($0, $1) })
        }
        return heads
    }

    private func needsAnotherRound(after rounds: Int, elapsed: Double) -> Bool {
        if let fixed = plan.repetitions { return rounds < fixed }
        return rounds < plan.minimumRepetitions || (elapsed < plan.seconds && rounds < 100_000)
    }

    /// `shape.batch` sequences of `shape.sequenceLength` ids: consecutive word pieces of the
    /// benchmark sentences (each sequence starting where the previous one ended), framed as the
    /// tokenizer frames one text ([CLS] … [SEP]; … <|endoftext|> for Qwen3). The same ids for
    /// every precision. Without sentences, deterministic ids from the vocabulary.
    func inputs(_ shape: BenchmarkPlan.Shape, text: [Int32], tokenizer: Tokenizer, vocabulary: Int) -> [[Int32]] {
        let body = max(0, shape.sequenceLength - tokenizer.framingCount)
        return (0..<shape.batch).map { b in
            let ids = text.isEmpty ? syntheticIDs(body, vocabulary: vocabulary, offset: b * body)
                                   : (0..<body).map { text[(b * body + $0) % text.count] }
            return tokenizer.framed(ids)
        }
    }
}

/// The machine a benchmark ran on.
package struct BenchmarkEnvironment: Sendable, Equatable {
    /// The kernel set OpenBLAS chose at run time ("Haswell", "Cooperlake", ...).
    package let openBLASCore: String
    /// OPENBLAS_CORETYPE, which overrides OpenBLAS's choice; nil when unset.
    package let openBLASCoreType: String?
    package let processors: Int
    package let cpuModel: String?
    /// The 1-minute load average when the run started: how busy the machine was.
    package let loadAverage: String?

    package static func current() -> BenchmarkEnvironment {
        let cpuModel = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        return BenchmarkEnvironment(openBLASCore: openBLASCoreName(),
                                    openBLASCoreType: ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"],
                                    processors: ProcessInfo.processInfo.activeProcessorCount, cpuModel: cpuModel,
                                    loadAverage: loadAverage())
    }

    /// openblas_get_corename(): the kernels OpenBLAS's sgemm runs on this machine, as chosen.
    package static func openBLASCoreName() -> String {
        String(cString: openblas_get_corename()).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func loadAverage() -> String? {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init)
    }
}

// MARK: - Helpers

/// What a benchmark times: the encoder a converted folder holds, in one precision.
func loadTimedModel(folder: URL, threads: Int, precision: Precision) throws -> any EncoderModel {
    try loadEncoder(folder: folder, threads: threads, precision: precision)
}

private func monotonicSeconds() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}

/// CPU time of the whole process (all threads): with one thread, the pass's time without the
/// waits for a core that a shared machine adds to wall time.
private func processCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// The q-quantile with linear interpolation between closest ranks (numpy's default).
func percentile(_ values: [Double], _ q: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let position = q * Double(sorted.count - 1)
    let lower = Int(position.rounded(.down)), upper = min(lower + 1, sorted.count - 1)
    return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - Double(lower))
}

private func fileSize(_ url: URL) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
}
