import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels
@testable import SwiftBERTBench

/// The harness benchmark behind `bert bench`: options, the report's shape, a one-round run on splade-tiny.
/// Functional only: no timing is asserted.
final class BenchmarkTests: XCTestCase {
    static let sentencesFile = repositoryRoot.appendingPathComponent(BenchmarkSentences.fixture).path

    /// One model, one thread, one round per cell, accuracy over the first sentences of the fixture.
    static func oneRoundPlan(_ folder: URL, accuracySentences: Int) -> BenchmarkPlan {
        var plan = BenchmarkPlan()
        plan.models = [folder.path]
        plan.threads = [1]
        plan.repetitions = 1
        plan.sentencesFile = sentencesFile
        plan.accuracySentences = accuracySentences
        return plan
    }

    func testOptionsTakeCommaListsAndRepeats() throws {
        let options = try BenchmarkOptions.parse([
            "--model", "splade-tiny,all-MiniLM-L6-v2", "--model", "bert-base-random", "--precision", "fp32, int8-weights",
            "--precision", "int8,fp32", "--batch", "1,4", "--seq", "16", "--threads", "2", "--repetitions", "5", "--profile", "--json",
        ])
        let plan = try options.plan()
        XCTAssertEqual(plan.models, ["splade-tiny", "all-MiniLM-L6-v2", "bert-base-random"])
        XCTAssertEqual(plan.precisions, [.fp32, .int8Weights, .int8])
        XCTAssertEqual(plan.shapes, [.init(batch: 1, sequenceLength: 16), .init(batch: 4, sequenceLength: 16)])
        XCTAssertEqual(plan.threads, [2])
        XCTAssertEqual(plan.repetitions, 5)
        XCTAssertTrue(plan.profile)
        XCTAssertTrue(options.json)
    }

    func testDefaultPlanIsIssue5sCells() throws {
        let plan = try BenchmarkOptions.parse([]).plan()
        XCTAssertEqual(plan.models, ["all-MiniLM-L6-v2", "splade-tiny"])
        XCTAssertEqual(plan.precisions, [.fp32, .int8])
        XCTAssertEqual(plan.shapes.map(\.description), ["1x16", "1x128", "32x128"])
        XCTAssertEqual(plan.threads, [1, 2])
        XCTAssertEqual(BenchmarkPlan.shapes(batches: [], sequenceLengths: [128]).map(\.description), ["1x128", "32x128"])
    }

    /// Parsing checks the plan too, so both front ends refuse a bad flag before anything runs.
    func testBadFlagsNameTheFlag() {
        for (arguments, expected) in [
            (["--precision", "int4"], "--precision int4"), (["--seq", "1"], "--seq 1"), (["--batch", "x"], "--batch x"),
            (["--threads", "0"], "--threads"), (["--repetitions", "0"], "--repetitions"), (["--frobnicate"], "--frobnicate"),
            (["--seconds"], "--seconds"),
        ] {
            XCTAssertThrowsError(try BenchmarkOptions.parse(arguments), arguments.joined(separator: " ")) { error in
                let message = BenchmarkOptions.message(for: error)
                XCTAssertTrue(message.contains(expected), message)
            }
        }
    }

    /// The child that measures memory is started with only --memory-probe: no plan is checked.
    func testMemoryProbeSkipsThePlanCheck() throws {
        let options = try BenchmarkOptions.parse(["--memory-probe", "{}", "--precision", "int4"])
        XCTAssertEqual(options.memoryProbe, "{}")
    }

    func testRandomWeightsAreLabelled() {
        XCTAssertEqual(BenchmarkPlan.label(model: "bert-base-random"), "bert-base-random (random weights, timing only)")
        XCTAssertEqual(BenchmarkPlan.label(model: "splade-tiny"), "splade-tiny")
    }

    func testPercentileInterpolates() {
        XCTAssertEqual(percentile([3, 1, 2], 0.5), 2)
        XCTAssertEqual(percentile([1, 2, 3, 4], 0.5), 2.5)
        XCTAssertEqual(percentile(Array(1...11).map(Double.init), 0.9), 10, accuracy: 1e-12)
        XCTAssertEqual(percentile([7], 0.9), 7)
    }

    /// The masking rule of Int8AccuracyTests: 281 of the fixture's 300 sentences get a [MASK].
    func testMaskingRuleMatchesTheAccuracyTests() throws {
        let tokenizer = try Tokenizer.load(folder: convertedModel("splade-tiny"))
        let sentences = try BenchmarkSentences.load(URL(fileURLWithPath: Self.sentencesFile))
        XCTAssertEqual(sentences.count, 300)
        let masked = BenchmarkAccuracy.maskedSentences(sentences, tokenizer: tokenizer)
        XCTAssertEqual(masked.count, 281)
        XCTAssertTrue(masked.allSatisfy { $0.components(separatedBy: "[MASK]").count == 2 })
    }

    /// One round on splade-tiny, both precisions, in this process (memory needs a child: off).
    func testTinyRunReportsEveryCell() throws {
        var plan = Self.oneRoundPlan(try convertedModel("splade-tiny"), accuracySentences: 30)
        plan.shapes = [.init(batch: 1, sequenceLength: 16), .init(batch: 2, sequenceLength: 8)]
        plan.profile = true
        let report = try Benchmark(plan: plan, memoryProbe: nil).run()

        let model = try XCTUnwrap(report.models.first)
        XCTAssertEqual(model.cells.map { "\($0.shape) \($0.precision.rawValue)" }, ["1x16 fp32", "1x16 int8", "2x8 fp32", "2x8 int8"])
        XCTAssertTrue(model.cells.allSatisfy { $0.rounds == 1 && $0.medianMilliseconds > 0 && $0.tokensPerSecond > 0 })
        XCTAssertTrue(model.cells.allSatisfy { ($0.speedUp == nil) == ($0.precision == .fp32) })
        XCTAssertEqual(model.cells.first?.profileMilliseconds?.keys.contains(.qkv), true)
        guard case let .fillMask(top1, top5, count)? = model.figures(.int8)?.accuracy else {
            return XCTFail("no fill-mask accuracy for int8: \(String(describing: model.figures(.int8)?.accuracy))")
        }
        XCTAssertTrue((0...1).contains(top1) && (0...1).contains(top5))
        XCTAssertGreaterThan(count, 20)
        XCTAssertNil(model.figures(.fp32)?.accuracy)
        XCTAssertTrue(model.notes.contains { $0.contains("resident memory not measured") })

        // JSON: a list of rows, each with the documented keys first.
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(report.jsonText.utf8)) as? [[String: Any]])
        XCTAssertEqual(rows.count, 4)
        for key in ["model", "label", "precision", "batch", "seq", "threads", "median_ms", "p90_ms", "tokens_per_second",
                    "speedup_vs_fp32", "file_bytes", "load_ms", "weights_resident_bytes", "peak_resident_bytes", "accuracy",
                    "profile_ms", "openblas_core"] {
            XCTAssertTrue(rows.allSatisfy { $0[key] != nil }, key)
        }
        XCTAssertEqual(rows.map { $0["precision"] as? String }, ["fp32", "int8", "fp32", "int8"])
        XCTAssertEqual(rows.map { $0["seq"] as? Int }, [16, 16, 8, 8])
        XCTAssertTrue(rows[0]["speedup_vs_fp32"] is NSNull)
        XCTAssertNotNil((rows[1]["accuracy"] as? [String: Any])?["top1_agreement"] as? Double)
        XCTAssertTrue(report.jsonText.hasPrefix("[\n{\"model\":"))

        // Text: the tables and the OpenBLAS core.
        XCTAssertTrue(report.text.contains("OpenBLAS core: \(BenchmarkEnvironment.openBLASCoreName())"))
        XCTAssertTrue(report.text.contains("| batch x seq | threads | precision | median ms |"))
        XCTAssertTrue(report.text.contains("Profile, "))
    }

    /// The child's side of the memory protocol, answered in this process.
    func testMemoryProbeAnswersWithOneJSONLine() throws {
        let request = #"{"folder":"\#(try convertedModel("splade-tiny").path)","precision":"int8","batch":2,"sequenceLength":16}"#
        let answer = try BenchmarkMemoryProbe.respond(to: request)
        XCTAssertFalse(answer.contains("\n"))
        let usage = try JSONDecoder().decode(BenchmarkMemoryProbe.Usage.self, from: Data(answer.utf8))
        XCTAssertEqual(usage.batch, 2)
        XCTAssertGreaterThan(usage.residentBeforeLoad, 0)
        XCTAssertGreaterThanOrEqual(usage.peakResident, usage.residentAfterFirstPass)
        XCTAssertThrowsError(try BenchmarkMemoryProbe.respond(to: "{}"))
    }

    /// MobileBERT (a random-weight fixture, so the figures mean nothing: the mechanics are the
    /// test) is timed through the masked-LM model API in the precisions it runs in; bf16, which
    /// it does not, is left out with a note instead of refusing the model.
    func testMobileBertIsTimedInItsPrecisions() throws {
        let folder = try MobileBertTests.converted("mobilebert-nonorm")
        var plan = Self.oneRoundPlan(folder, accuracySentences: 20)
        plan.precisions = [.fp32, .bf16, .int8Weights]
        plan.shapes = [.init(batch: 2, sequenceLength: 16)]
        plan.measuresMemory = false
        let report = try Benchmark(plan: plan, memoryProbe: nil).run()
        let model = try XCTUnwrap(report.models.first)
        XCTAssertEqual(model.cells.map { "\($0.shape) \($0.precision.rawValue)" }, ["2x16 fp32", "2x16 int8-weights"])
        XCTAssertTrue(model.cells.allSatisfy { $0.medianMilliseconds > 0 })
        XCTAssertTrue(model.notes.contains("bf16 not measured: MobileBERT runs in fp32, int8, int8-weights only"), "\(model.notes)")
        XCTAssertTrue(report.text.contains("bf16 not measured"), report.text)
        guard case .fillMask? = model.figures(.int8Weights)?.accuracy else {
            return XCTFail("no fill-mask figures: \(String(describing: model.figures(.int8Weights)?.accuracy))")
        }
        XCTAssertNil(model.figures(.bf16))

        // Its memory, in the probe's child (answered here), and a plan with no precision it runs.
        let answer = try BenchmarkMemoryProbe.respond(to: #"{"folder":"\#(folder.path)","precision":"int8","batch":2,"sequenceLength":16}"#)
        XCTAssertGreaterThan(try JSONDecoder().decode(BenchmarkMemoryProbe.Usage.self, from: Data(answer.utf8)).peakResident, 0)
        plan.precisions = [.bf16]
        XCTAssertThrowsError(try Benchmark(plan: plan, memoryProbe: nil).run()) { error in
            XCTAssertTrue("\(error)".contains("--precision") && "\(error)".contains("MobileBERT"), "\(error)")
        }
    }

    /// Every family's precisions come from its `ModelFamily` entry: Qwen3 (a random-weight
    /// fixture) does not run int8-static, so the bench leaves it out with a note; before, it
    /// failed asking for a `bert quantize --calibrate` that Qwen3 refuses.
    func testAFamilysPrecisionsBoundWhatIsTimed() throws {
        var plan = Self.oneRoundPlan(try Qwen3Tests.converted(), accuracySentences: 0)
        plan.precisions = [.fp32, .int8Static]
        plan.shapes = [.init(batch: 1, sequenceLength: 8)]
        plan.measuresMemory = false
        let model = try XCTUnwrap(try Benchmark(plan: plan, memoryProbe: nil).run().models.first)
        XCTAssertEqual(model.cells.map { "\($0.shape) \($0.precision.rawValue)" }, ["1x8 fp32"])
        XCTAssertTrue(model.notes.contains("int8-static not measured: Qwen3 runs in fp32, int8, int8-attention, int8-weights, bf16 only"), "\(model.notes)")
    }

    func testSequenceLongerThanTheModelIsRefused() throws {
        var plan = BenchmarkPlan()
        plan.models = [try convertedModel("splade-tiny").path]
        plan.shapes = [.init(batch: 1, sequenceLength: 600)]
        plan.measuresMemory = false
        XCTAssertThrowsError(try Benchmark(plan: plan, memoryProbe: nil).run()) { error in
            XCTAssertTrue("\(error)".contains("--seq 600"), "\(error)")
        }
    }
}

/// `bert bench` end to end, with memory measured in child processes of the built executable.
final class CLIBenchmarkTests: CLITestCase {
    func testBenchJSONHasMemoryFromChildProcesses() throws {
        let result = try bert("bench", "--model", "splade-tiny", "--precision", "fp32,int8-weights", "--batch", "1", "--seq", "16",
                              "--threads", "1", "--repetitions", "1", "--accuracy-sentences", "10", "--json", "--quiet")
        XCTAssertEqual(result.status, 0, result.stderr)
        // --quiet leaves nothing on stderr but a portable build's one warning (KernelReport), which
        // a bench user should see.
        XCTAssertEqual(result.stderr.split(separator: "\n").filter { !$0.hasPrefix("SwiftBERT: warning: portable build") }, [])
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: result.stdoutData) as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["precision"] as? String }, ["fp32", "int8-weights"])
        for row in rows {
            XCTAssertEqual(row["model"] as? String, "splade-tiny")
            XCTAssertGreaterThan(row["weights_resident_bytes"] as? Int ?? 0, 0)
            XCTAssertGreaterThan(row["peak_resident_bytes"] as? Int ?? 0, 0)
            XCTAssertNotNil(row["median_ms"] as? Double)
        }
    }

    /// A decoder's tokenizer has no [CLS]: the bench frames its inputs as the tokenizer frames a
    /// text (Qwen3: the ids, then <|endoftext|>). It sent id -1 before, and the model refused it.
    func testBenchFramesInputsAsTheTokenizerDoes() throws {
        let folder = try Qwen3Tests.converted()
        let tokenizer = try Tokenizer.load(folder: folder)
        let ids = tokenizer.encode("the cat sat", addSpecialTokens: false).ids
        XCTAssertEqual(tokenizer.framed(ids), tokenizer.encode("the cat sat").ids)
        XCTAssertEqual(tokenizer.framed(ids).last, tokenizer.id(of: "<|endoftext|>"))
        let minilm = try Tokenizer.load(folder: convertedModel("all-MiniLM-L6-v2"))
        let pieces = minilm.encode("the cat sat", addSpecialTokens: false).ids
        XCTAssertEqual(minilm.framed(pieces), [minilm.clsId] + pieces + [minilm.sepId])
        let result = try bert("bench", "--model", folder.path, "--precision", "fp32", "--batch", "2", "--seq", "16",
                              "--threads", "1", "--repetitions", "1", "--accuracy-sentences", "4", "--json", "--quiet")
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: result.stdoutData) as? [[String: Any]])
        XCTAssertEqual(rows.count, 1)
        XCTAssertNotNil(rows.first?["median_ms"] as? Double)
    }

    /// The memory probe ends with its bench, even one killed by SIGKILL (a job's timeout): found
    /// by tools/fuzz/cli_fuzz.py, whose timed-out `bench --batch 100000` (now at most 4096) left a probe running
    /// for 19 minutes.
    func testMemoryProbeEndsWhenItsBenchIsKilled() throws {
        let bench = Process()
        bench.executableURL = URL(fileURLWithPath: bertPath)
        bench.arguments = ["bench", "--model", "all-MiniLM-L6-v2", "--precision", "fp32", "--batch", "4096", "--seq", "128",
                           "--threads", "1", "--seconds", "0.05", "--accuracy-sentences", "0"]
        bench.standardOutput = FileHandle.nullDevice
        bench.standardError = FileHandle.nullDevice
        try bench.run()
        defer { if bench.isRunning { kill(bench.processIdentifier, SIGKILL) } }
        func children() -> [pid_t] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> pid_t? in
                guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { return nil }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 1 && pid_t(fields[1]) == bench.processIdentifier ? pid : nil
            }
        }
        var probe: pid_t?
        let deadline = Date().addingTimeInterval(60)
        while probe == nil, Date() < deadline, bench.isRunning { probe = children().first; if probe == nil { usleep(100_000) } }
        let child = try XCTUnwrap(probe, "no memory probe started")
        kill(bench.processIdentifier, SIGKILL)
        let end = Date().addingTimeInterval(10)
        while kill(child, 0) == 0, Date() < end { usleep(100_000) }
        XCTAssertNotEqual(kill(child, 0), 0, "the probe \(child) outlived its bench by 10 s")
        if kill(child, 0) == 0 { kill(child, SIGKILL) }
    }

    func testBenchRejectsUnknownPrecision() throws {
        let result = try bert("bench", "--precision", "int4")
        XCTAssertEqual(result.status, 64)
        XCTAssertTrue(result.stderr.contains("--precision int4"), result.stderr)
    }
}
