import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// `bert embed --input` on real 2,000- and 10,000-line files: one record per line, vectors equal
/// to the library's on a sample, peak memory flat as the file grows, lines/s. Opt-in because it
/// takes minutes: SWIFTBERT_BIG_TESTS=1 swift test --filter CLIBigFileTests. It measures
/// .build/release/bert when built (set SWIFTBERT_BERT to choose); the numbers go to docs/cli.md.
final class CLIBigFileTests: XCTestCase {
    struct Run {
        let lines: Int
        let seconds: Double
        let linesPerSecond: Double
        let peak: PeakMemory
    }

    func testTenThousandLinesStreamInFlatMemory() throws {
        guard ProcessInfo.processInfo.environment["SWIFTBERT_BIG_TESTS"] == "1" else {
            throw XCTSkip("set SWIFTBERT_BIG_TESTS=1 to run the 10,000-line check (minutes)")
        }
        let bert = try XCTUnwrap(Self.executable, "build bert first: swift build -c release --product bert")
        _ = try convertedModel("all-MiniLM-L6-v2")
        let corpus = try realLines(10_000)
        var report = "binary: \(bert)\n"
        var runs: [Run] = []
        for count in [2_000, 10_000] {
            let input = temporaryPath("lines-\(count).txt")
            try Data((corpus.prefix(count).joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: input))
            let output = temporaryPath("lines-\(count).npy")
            let (result, peak) = try runMeasured(bert, ["embed", "--input", input, "--format", "npy", "--output", output])
            XCTAssertEqual(result.status, 0, result.stderr)

            // One output row per input line, in order; a sample equals the library's vectors.
            let npy = try NPYReader(path: output)
            XCTAssertEqual(npy.rows, count)
            let rows = try npy.readAll()
            let sample = stride(from: 0, to: count, by: count / 25).map { $0 }
            let embedder = try SentenceEmbedder(model: try loadModel("all-MiniLM-L6-v2"),
                                            tokenizer: try Tokenizer.load(folder: convertedModel("all-MiniLM-L6-v2")))
            let expected = try embedder.embed(sample.map { corpus[$0] }).vectors
            let worst = zip(sample, expected).map { maxAbsDifference(rows[$0], $1) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 1e-6)

            let summary = try XCTUnwrap(result.stderr.split(separator: "\n").last { $0.contains("embedded") })
            let numbers = summary.split(whereSeparator: { " ()".contains($0) }).compactMap { Double($0) }
            let run = Run(lines: count, seconds: numbers[1], linesPerSecond: numbers[2], peak: peak)
            runs.append(run)
            report += String(format: "%6d lines: %.1f s, %.0f lines/s, peak VmRSS %.1f MiB (anonymous %.1f MiB, mapped files %.1f MiB), sample of %d max |diff| %g\n",
                             count, run.seconds, run.linesPerSecond, peak.mib(peak.rss), peak.mib(peak.anonymous), peak.mib(peak.file),
                             sample.count, Double(worst))
        }
        print(report)
        try? report.write(toFile: temporaryPath("big-file-report.txt"), atomically: true, encoding: .utf8)
        // Flat: five times the lines may not cost more than a few MiB of extra scratch memory.
        XCTAssertLessThan(runs[1].peak.anonymous - runs[0].peak.anonymous, 16 << 20, report)
    }

    static var executable: String? {
        if let path = ProcessInfo.processInfo.environment["SWIFTBERT_BERT"] { return path }
        return [".build/release/bert", ".build/debug/bert"].map { repositoryRoot.appendingPathComponent($0).path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Non-blank UTF-8 lines of the licence texts every Debian system has.
    func realLines(_ count: Int) throws -> [String] {
        let fm = FileManager.default
        var files = ((try? fm.contentsOfDirectory(atPath: "/usr/share/common-licenses")) ?? []).sorted().map { "/usr/share/common-licenses/\($0)" }
        files += ((try? fm.contentsOfDirectory(atPath: "/usr/share/doc")) ?? []).sorted().map { "/usr/share/doc/\($0)/copyright" }
        var lines: [String] = []
        for file in files where lines.count < count {
            guard let data = fm.contents(atPath: file), let text = String(data: data, encoding: .utf8) else { continue }
            lines += text.split(separator: "\n").map(String.init).filter { !$0.allSatisfy(\.isWhitespace) }
        }
        guard lines.count >= count else { throw XCTSkip("only \(lines.count) licence lines on this system") }
        return Array(lines.prefix(count))
    }
}

/// Peak memory of a child process, sampled from /proc/<pid>/status every 10 ms.
struct PeakMemory {
    var rss = 0, anonymous = 0, file = 0
    func mib(_ bytes: Int) -> Double { Double(bytes) / 1_048_576 }
}

func runMeasured(_ executable: String, _ arguments: [String]) throws -> (ProcessResult, PeakMemory) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    var peak = PeakMemory()
    let status = "/proc/\(process.processIdentifier)/status"
    let collector = DispatchGroup()
    let stderrData = Collected(), stdoutData = Collected()
    DispatchQueue.global().async(group: collector) { stderrData.data = err.fileHandleForReading.readDataToEndOfFile() }
    DispatchQueue.global().async(group: collector) { stdoutData.data = out.fileHandleForReading.readDataToEndOfFile() }
    while process.isRunning {
        if let text = try? String(contentsOfFile: status, encoding: .utf8) {
            func field(_ name: String) -> Int {
                guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
                return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1024
            }
            peak.rss = max(peak.rss, field("VmRSS"))
            peak.anonymous = max(peak.anonymous, field("RssAnon"))
            peak.file = max(peak.file, field("RssFile"))
        }
        usleep(10_000)
    }
    collector.wait()
    process.waitUntilExit()
    return (ProcessResult(status: process.terminationStatus, stdout: String(decoding: stdoutData.data, as: UTF8.self),
                          stderr: String(decoding: stderrData.data, as: UTF8.self), stdoutData: stdoutData.data), peak)
}
