import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// Long jobs stopped half-way: an interrupted stream leaves a valid output holding a prefix of
/// whole records, and resuming it gives exactly the output of an uninterrupted run.
final class HostileInterruptTests: XCTestCase {
    static let dimension = 128  // splade-tiny: small and fast

    func embedder() throws -> SentenceEmbedder {
        try SentenceEmbedder(model: try loadModel("splade-tiny", threads: 1), tokenizer: try Tokenizer.load(folder: convertedModel("splade-tiny")))
    }

    /// `count` lines of varying length.
    func inputFile(_ count: Int) throws -> String {
        let words = "the cat sat on a mat while dogs bark loudly at night and people sleep in quiet houses near rivers".split(separator: " ")
        let lines = (0..<count).map { i in "Line \(i): " + (0..<(3 + i * 7 % 29)).map { words[($0 * 5 + i) % words.count] }.joined(separator: " ") }
        return try temporaryFile(lines.joined(separator: "\n") + "\n")
    }

    /// Runs the stream over `input` into `path`; `stopAfter`: request a stop once that many records are embedded.
    @discardableResult
    func run(_ input: String, _ path: String, format: EmbeddingFormat, resume: Bool = false, stopAfter: Int? = nil) throws -> (records: Int, resumed: Int) {
        var stream = EmbeddingStream(embedder: try embedder(), options: .init(batchSize: 4))  // windows of 32
        let interruption = Interruption()
        stream.interruption = interruption
        let writer: EmbeddingWriter
        if resume {
            (writer, stream.resumeAfter) = try EmbeddingWriter.resuming(format: format, path: path, dimension: Self.dimension)
        } else {
            writer = try EmbeddingWriter(format: format, sink: OutputSink.open(path), dimension: Self.dimension)
        }
        defer { try? writer.sink.close() }
        let summary = try stream.embed(TextRecordReader(.file(input)), into: writer) { progress in
            if let stopAfter, progress.records >= stopAfter { interruption.request(signal: SIGINT) }
        }
        return (summary.records, summary.resumed)
    }

    /// Records in an output file, parsed by the format's own rules (so: a valid document).
    func records(_ path: String, _ format: EmbeddingFormat) throws -> [[Float]] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        switch format {
        case .jsonl:
            XCTAssertTrue(data.isEmpty || data.last == 0x0A, "ends with a whole line")
            return try data.split(separator: 0x0A).map { line in
                let object = try XCTUnwrap(JSONSerialization.jsonObject(with: line) as? [String: Any])
                return try XCTUnwrap(object["embedding"] as? [Double]).map(Float.init)
            }
        case .json:
            let array = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [[String: Any]])
            XCTAssertEqual(array.map { $0["index"] as? Int }, Array(0..<array.count))
            return try array.map { try XCTUnwrap($0["embedding"] as? [Double]).map(Float.init) }
        case .npy:
            let npy = try NPYReader(path: path)
            XCTAssertEqual(data.count, npyHeaderSize + npy.rows * npy.columns * 4, "header row count matches the data")
            return try npy.readAll()
        case .tsv:
            return data.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self).split(separator: "\t").map { Float(String($0))! } }
        }
    }

    func testInterruptedStreamLeavesAValidPrefixAndResumeMatchesAnUninterruptedRun() throws {
        let input = try inputFile(300)
        for format in EmbeddingFormat.allCases {
            let reference = temporaryPath("reference.\(format)")
            XCTAssertEqual(try run(input, reference, format: format).records, 300)
            let path = temporaryPath("interrupted.\(format)")
            XCTAssertThrowsError(try run(input, path, format: format, stopAfter: 70)) { error in
                // The stop comes after the batch that reaches 70 records (72), in the third window
                // [64, 96), which is dropped: the output holds the first two windows.
                XCTAssertEqual(error as? StreamError, .interrupted(signal: SIGINT, records: 64, output: path))
                XCTAssertEqual((error as? StreamError)?.exitStatus, 130)
            }
            let prefix = try records(path, format)
            XCTAssertEqual(prefix.count, 64, "\(format)")
            XCTAssertEqual(prefix, Array(try records(reference, format).prefix(64)), "\(format): a prefix of the full output")

            let resumed = try run(input, path, format: format, resume: true)
            XCTAssertEqual(resumed.resumed, 64)
            XCTAssertEqual(resumed.records, 236)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), try Data(contentsOf: URL(fileURLWithPath: reference)),
                           "\(format): resumed output is byte for byte the uninterrupted one")

            // Resuming a finished output changes nothing.
            XCTAssertEqual(try run(input, path, format: format, resume: true).records, 0)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), try Data(contentsOf: URL(fileURLWithPath: reference)))
        }
    }

    /// A hard kill (SIGKILL, power loss) can leave half a record and, for npy, a header that
    /// still says 0 rows. Resuming keeps the whole records and recomputes the rest.
    func testResumeAfterAHardKillCutsTheHalfWrittenRecord() throws {
        let input = try inputFile(100)
        for format in EmbeddingFormat.allCases {
            let reference = temporaryPath("hard-reference.\(format)")
            try run(input, reference, format: format)
            let expected = try records(reference, format)
            var data = try Data(contentsOf: URL(fileURLWithPath: reference))
            // Cut in the middle of record 41 (0-based 40).
            let cut: Int
            switch format {
            case .npy:
                data.replaceSubrange(0..<npyHeaderSize, with: npyHeader(rows: 0, columns: 0))
                cut = npyHeaderSize + 40 * Self.dimension * 4 + 200
            case .jsonl, .tsv:
                cut = data.split(separator: 0x0A, omittingEmptySubsequences: false).prefix(40).reduce(0) { $0 + $1.count + 1 } + 100
            case .json:
                let text = String(decoding: data, as: UTF8.self)
                var end = text.startIndex
                for _ in 0..<40 { end = text.range(of: "]}", range: end..<text.endIndex)!.upperBound }
                cut = text.utf8.distance(from: text.startIndex, to: end) + 150
            }
            let path = temporaryPath("hard.\(format)")
            try data.prefix(cut).write(to: URL(fileURLWithPath: path))
            let resumed = try run(input, path, format: format, resume: true)
            XCTAssertEqual(resumed.resumed, 40, "\(format)")
            XCTAssertEqual(resumed.records, 60, "\(format)")
            let got = try records(path, format)
            XCTAssertEqual(got.count, 100, "\(format)")
            XCTAssertEqual(Array(got.prefix(40)), Array(expected.prefix(40)), "\(format): the kept records are untouched")
            // Later batches start at another record than in the uninterrupted run, so their
            // vectors may differ in the last bits (GEMM blocking), not more.
            for (a, b) in zip(got, expected) { XCTAssertLessThan(maxAbsDifference(a, b), 1e-5, "\(format)") }
        }
    }

    func testResumeRefusesAnOutputThatDoesNotBelong() throws {
        let input = try inputFile(50)
        let path = temporaryPath("other.jsonl")
        try run(input, path, format: .jsonl)
        // Another model's vectors.
        XCTAssertThrowsError(try EmbeddingWriter.resuming(format: .jsonl, path: path, dimension: 384)) { error in
            XCTAssertTrue("\(error)".contains("holds 128-dimensional vectors but the model gives 384"), "\(error)")
        }
        // Another format.
        XCTAssertThrowsError(try EmbeddingWriter.resuming(format: .npy, path: path, dimension: 128)) { error in
            XCTAssertTrue("\(error)".contains("not a npy output"), "\(error)")
        }
        // A shorter input than the output holds.
        XCTAssertThrowsError(try run(try inputFile(20), path, format: .jsonl, resume: true)) { error in
            XCTAssertTrue("\(error)".contains("holds 50 records but"), "\(error)")
        }
        // No output yet: a fresh start.
        let fresh = temporaryPath("fresh.jsonl")
        XCTAssertEqual(try run(input, fresh, format: .jsonl, resume: true).records, 50)
    }

    func testInterruptionRequestKeepsTheFirstSignal() {
        let interruption = Interruption()
        XCTAssertNil(interruption.signal)
        interruption.request(signal: SIGTERM)
        interruption.request(signal: SIGINT)
        XCTAssertEqual(interruption.signal, SIGTERM)
        XCTAssertEqual(Interruption.exitStatus(for: SIGTERM), 143)
    }
}

/// The same end to end: `bert embed` over a few thousand lines, stopped by a real signal once
/// output appears, then resumed.
final class HostileInterruptCLITests: CLITestCase {
    func inputFile(_ count: Int) throws -> String {
        let words = "a considerably longer sentence about cats dogs rivers markets bread trains and the weather in spring".split(separator: " ")
        let lines = (0..<count).map { i in "\(i). " + (0..<(4 + i * 13 % 40)).map { words[($0 * 3 + i) % words.count] }.joined(separator: " ") }
        return try temporaryFile(lines.joined(separator: "\n") + "\n")
    }

    /// Starts bert, waits until `output` has at least `bytes` bytes, sends `signal`, waits for the end.
    func interrupt(_ arguments: [String], output: String, bytes: Int, signal: Int32) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bertPath)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning, Date() < deadline {
            let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
            if size >= bytes { break }
            usleep(20_000)
        }
        XCTAssertTrue(process.isRunning, "bert finished before it could be interrupted: use a larger input")
        kill(process.processIdentifier, signal)
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit, "bert exits by itself rather than being killed by the signal")
        return ProcessResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                             stderr: String(decoding: stderr, as: UTF8.self), stdoutData: stdout)
    }

    func testSIGINTLeavesAValidJSONLinesPrefixAndResumeCompletesIt() throws {
        // splade-tiny, as the SIGTERM test: what is tested is the stream's stop and resume, which
        // no model changes; with MiniLM the three runs took 90-170 s of the suite.
        _ = try convertedModel("splade-tiny")
        let input = try inputFile(3000)
        let common = ["embed", "--model", "splade-tiny", "--input", input, "--batch-size", "8", "--quiet"]
        let reference = temporaryPath("cli-reference.jsonl")
        XCTAssertEqual(try bert(common + ["--output", reference]).status, 0)
        let expected = try Data(contentsOf: URL(fileURLWithPath: reference))

        let path = temporaryPath("cli-interrupted.jsonl")
        let stopped = try interrupt(common + ["--output", path], output: path, bytes: 1, signal: SIGINT)
        assertFailure(stopped, status: 130, mentions: ["stopped by SIGINT", path, "--resume"])
        let prefix = try Data(contentsOf: URL(fileURLWithPath: path))
        let lines = try parseJSONLines(String(decoding: prefix, as: UTF8.self))  // whole lines, indices 0..<n
        XCTAssertTrue(prefix.last == 0x0A)
        XCTAssertGreaterThan(lines.count, 0)
        XCTAssertLessThan(lines.count, 3000)
        XCTAssertEqual(lines.count % 64, 0, "whole windows of 8 × batch size")
        XCTAssertTrue(stopped.stderr.contains("first \(lines.count) records"), stopped.stderr)
        XCTAssertEqual(prefix, expected.prefix(prefix.count), "a byte prefix of the uninterrupted output")

        let resumed = try bert(common + ["--output", path, "--resume"])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), expected, "resumed output equals the uninterrupted one")
    }

    func testSIGTERMLeavesAValidNPYAndResumeCompletesIt() throws {
        // splade-tiny (128 dimensions) to keep the test short; 3,000 lines still take seconds.
        _ = try convertedModel("splade-tiny")
        let input = try inputFile(3000)
        let common = ["embed", "--model", "splade-tiny", "--input", input, "--format", "npy", "--batch-size", "8", "--quiet"]
        let reference = temporaryPath("cli-reference.npy")
        XCTAssertEqual(try bert(common + ["--output", reference]).status, 0)

        let path = temporaryPath("cli-interrupted.npy")
        let stopped = try interrupt(common + ["--output", path], output: path, bytes: npyHeaderSize + 1, signal: SIGTERM)
        assertFailure(stopped, status: 143, mentions: ["stopped by SIGTERM", "--resume"])
        let npy = try NPYReader(path: path)
        XCTAssertEqual(npy.columns, 128)
        try assertWholeRowsOf(reference, in: path, rows: npy.rows, multipleOf: 64, "whole windows of 8 × batch size")

        let resumed = try bert(common + ["--output", path, "--resume"])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), try Data(contentsOf: URL(fileURLWithPath: reference)))
    }

    /// The npy at `path`, stopped part way through 3,000 records of 128 values, holds a header
    /// that counts exactly its `rows` (some, not all, in whole groups of `multiple`) and the first
    /// `rows` of `reference`.
    private func assertWholeRowsOf(_ reference: String, in path: String, rows: Int, multipleOf multiple: Int,
                                   _ message: String, line: UInt = #line) throws {
        XCTAssertGreaterThan(rows, 0, line: line)
        XCTAssertLessThan(rows, 3000, line: line)
        XCTAssertEqual(rows % multiple, 0, message, line: line)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        XCTAssertEqual(size, npyHeaderSize + rows * 128 * 4, "the header counts exactly the rows written", line: line)
        XCTAssertEqual(try NPYReader(path: path).readAll(), Array(try NPYReader(path: reference).readAll().prefix(rows)), line: line)
    }

    /// `--chunk` and `--sparse` stop as the plain stream does, between batches, with whole texts
    /// written: a valid npy whose header counts its rows, whole JSON lines. They do not --resume,
    /// so the message says where the rest of the input starts (before, a signal killed them mid-write).
    func testSIGTERMStopsChunkedAndSparseEmbeddingWithWholeRecords() throws {
        _ = try convertedModel("splade-tiny")
        let input = try inputFile(3000)
        let chunked = ["embed", "--model", "splade-tiny", "--input", input, "--batch-size", "8", "--quiet",
                       "--chunk", "12", "--chunk-pooling", "mean", "--format", "npy"]
        let reference = temporaryPath("cli-chunked-reference.npy")
        XCTAssertEqual(try bert(chunked + ["--output", reference]).status, 0)
        let path = temporaryPath("cli-chunked-interrupted.npy")
        let stopped = try interrupt(chunked + ["--output", path], output: path, bytes: npyHeaderSize + 1, signal: SIGTERM)
        let npy = try NPYReader(path: path)
        assertFailure(stopped, status: 143, mentions: ["stopped by SIGTERM", "first \(npy.rows) records", "do not --resume", "from record \(npy.rows + 1)"])
        try assertWholeRowsOf(reference, in: path, rows: npy.rows, multipleOf: 8, "whole batches")

        let sparse = ["embed", "--model", "splade-tiny", "--input", input, "--batch-size", "8", "--quiet", "--sparse"]
        let sparseReference = temporaryPath("cli-sparse-reference.jsonl")
        XCTAssertEqual(try bert(sparse + ["--output", sparseReference]).status, 0)
        let sparsePath = temporaryPath("cli-sparse-interrupted.jsonl")
        let sparseStopped = try interrupt(sparse + ["--output", sparsePath], output: sparsePath, bytes: 1, signal: SIGTERM)
        let prefix = try Data(contentsOf: URL(fileURLWithPath: sparsePath))
        let lines = try String(decoding: prefix, as: UTF8.self).split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        XCTAssertEqual(lines.map { $0["index"] as? Int }, Array(0..<lines.count))
        assertFailure(sparseStopped, status: 143, mentions: ["first \(lines.count) records", "from record \(lines.count + 1)"])
        XCTAssertTrue(prefix.last == 0x0A)
        XCTAssertGreaterThan(lines.count, 0)
        XCTAssertLessThan(lines.count, 3000)
        XCTAssertEqual(lines.count % 8, 0, "whole batches")
        XCTAssertEqual(prefix, try Data(contentsOf: URL(fileURLWithPath: sparseReference)).prefix(prefix.count))
    }

    func testResumeNeedsAnOutputFile() throws {
        assertFailure(try bert("embed", "--resume", "x"), status: 64, mentions: ["--resume needs --output"])
    }
}
