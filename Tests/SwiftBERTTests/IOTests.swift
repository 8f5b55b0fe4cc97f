import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

/// The streaming readers and writers behind `bert embed`, tested without a model.
final class IOReaderTests: XCTestCase {
    func testLinesHandleCRLFEmptyLinesAndAMissingFinalNewline() throws {
        let file = try temporaryFile("\u{FEFF}one\r\n\r\nthree\nfour")
        let records = try TextRecordReader(.file(file)).readAll()
        XCTAssertEqual(records.map(\.text), ["one", "", "three", "four"])
        XCTAssertEqual(records.map(\.index), [0, 1, 2, 3])
        XCTAssertEqual(records.map(\.line), [1, 2, 3, 4])
    }

    func testArgumentsAreRecordsAsGiven() throws {
        let reader = try TextRecordReader(.texts(["a\nb", ""]))
        XCTAssertEqual(try reader.peek()?.text, "a\nb")
        XCTAssertEqual(try reader.readAll().map(\.text), ["a\nb", ""])
        XCTAssertNil(try reader.next())
    }

    func testInvalidUTF8NamesTheLineAndByte() throws {
        let file = try temporaryFile(bytes: Array("ok\nab".utf8) + [0xFF] + Array("c\n".utf8))
        let reader = try TextRecordReader(.file(file))
        XCTAssertEqual(try reader.next()?.text, "ok")
        XCTAssertThrowsError(try reader.next()) { error in
            XCTAssertEqual(error as? StreamError, .invalidUTF8(source: file, line: 2, offset: 2))
            XCTAssertEqual((error as? StreamError)?.exitStatus, 65)
        }
    }

    func testSkipInvalidReportsEveryLineAndKeepsIndices() throws {
        let file = try temporaryFile(bytes: Array("a\n".utf8) + [0xC3, 0x28, 0x0A] + Array("c\n".utf8) + [0xFF, 0x0A])
        var skipped: [Int] = []
        let reader = try TextRecordReader(.file(file), skipInvalid: true) { skipped.append($0.line) }
        let records = try reader.readAll()
        XCTAssertEqual(records.map(\.text), ["a", "c"])
        XCTAssertEqual(records.map(\.index), [0, 2], "skipped records keep their index so the gap shows")
        XCTAssertEqual(skipped, [2, 4])
        XCTAssertEqual(reader.skippedCount, 2)
    }

    func testJSONLinesTakeStringsAndTextObjectsAndSkipBlankLines() throws {
        let file = try temporaryFile("\"plain\"\n{\"text\": \"two\\nlines\", \"id\": 3}\n\n  \n{\"text\":\"é\"}\n")
        let records = try TextRecordReader(.file(file), format: .jsonl).readAll()
        XCTAssertEqual(records.map(\.text), ["plain", "two\nlines", "é"])
        XCTAssertEqual(records.map(\.line), [1, 2, 5])
    }

    func testJSONLinesErrorsSayWhatIsWrong() throws {
        for (line, reason) in [("{\"body\": \"x\"}", "no \"text\" field"), ("[1]", "an array"), ("{\"text\": 3}", "not a string"), ("nope", "not valid JSON")] {
            let file = try temporaryFile(line + "\n")
            XCTAssertThrowsError(try TextRecordReader(.file(file), format: .jsonl).readAll()) { error in
                guard case let .invalidJSONLine(_, number, message)? = error as? StreamError else { return XCTFail("\(error)") }
                XCTAssertEqual(number, 1)
                XCTAssertTrue(message.contains(reason), "\(message) should mention \(reason)")
            }
        }
    }

    func testMissingFileAndDirectoryAreTypedErrors() {
        XCTAssertThrowsError(try TextRecordReader(.file("/nonexistent/input.txt"))) { error in
            XCTAssertEqual((error as? SwiftBERTError)?.exitStatus, 66)
        }
        XCTAssertThrowsError(try TextRecordReader(.file("/tmp"))) { error in
            guard case .unreadable? = error as? StreamError else { return XCTFail("\(error)") }
        }
    }

    func testRecordLimitBoundsMemory() throws {
        let file = try temporaryFile("short\n" + String(repeating: "x", count: 200_000) + "\n")
        let reader = try TextRecordReader(.file(file), recordLimit: 100_000)
        XCTAssertEqual(try reader.next()?.text, "short")
        XCTAssertThrowsError(try reader.next()) { error in
            XCTAssertEqual(error as? StreamError, .recordTooLong(source: file, line: 2, limit: 100_000))
        }
    }

    func testLongFilesCrossReadBuffers() throws {
        let lines = (0..<20_000).map { "line \($0) " + String(repeating: "é", count: $0 % 13) }
        let file = try temporaryFile(lines.joined(separator: "\n") + "\n")
        let reader = try TextRecordReader(.file(file))
        XCTAssertEqual(try reader.readAll().map(\.text), lines)
        XCTAssertEqual(reader.bytesRead, reader.totalBytes)
    }
}

final class IOWriterTests: XCTestCase {
    let vectors: [[Float]] = [[0.1, -2.5e-7, 3], [Float.leastNormalMagnitude, -0.0, 1e20]]

    func testJSONLinesAndJSONReadBackExactly() throws {
        for format in [EmbeddingFormat.jsonl, .json] {
            let path = temporaryPath()
            try write(vectors, format: format, to: path)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let objects: [[String: Any]]
            if format == .json {
                objects = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
            } else {
                objects = try text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            }
            XCTAssertEqual(objects.map { $0["index"] as? Int }, [0, 1])
            // Shortest round-trip digits: parsing the text as Float gives back the same values.
            let arrays = text.components(separatedBy: #""embedding":["#).dropFirst().map { $0.prefix { $0 != "]" } }
            XCTAssertEqual(arrays.map { $0.split(separator: ",").map { Float(String($0))! } }, vectors, "\(format)")
        }
    }

    func testJSONOfNothingIsAnEmptyArray() throws {
        let path = temporaryPath()
        try write([], format: .json, to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "[]\n")
    }

    func testTSVIsOneVectorPerLine() throws {
        let path = temporaryPath()
        try write(vectors, format: .tsv, to: path)
        let rows = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t").map { Float(String($0))! } }
        XCTAssertEqual(rows, vectors)
    }

    func testNPYToAFileRewritesTheHeaderWithTheRowCount() throws {
        let path = temporaryPath()
        try write(vectors, format: .npy, to: path)
        let reader = try NPYReader(path: path)
        XCTAssertEqual([reader.rows, reader.columns], [2, 3])
        XCTAssertEqual(try reader.readAll(), vectors)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)).count, npyHeaderSize + 2 * 3 * 4)
    }

    func testNPYToAPipeSpillsAndCopies() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let sink = OutputSink(fd: fds[1], name: "pipe", owns: true)
        XCTAssertFalse(sink.isRewindable)
        let writer = try EmbeddingWriter(format: .npy, sink: sink)
        for (i, v) in vectors.enumerated() { try writer.write(index: i, vector: v) }
        try writer.finish()
        try sink.close()
        let data = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true).readDataToEndOfFile()
        let path = temporaryPath()
        try data.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try NPYReader(path: path).readAll(), vectors)
    }

    func testNumpyReadsOurNPY() throws {
                let path = temporaryPath()
        try write(vectors, format: .npy, to: path)
        let result = try runProcess("/usr/bin/env", ["python3", "-c", "import numpy, sys; a = numpy.load(sys.argv[1]); print(a.dtype, a.shape, repr(a[0, 0].item()))", path])
        if result.status != 0 { throw XCTSkip("python3 with numpy is not available: \(result.stderr)") }
        XCTAssertEqual(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "float32 (2, 3) \(Double(Float(0.1)))")
    }

    func testDimensionMismatchIsAnError() throws {
        let writer = try EmbeddingWriter(format: .jsonl, sink: OutputSink.open(temporaryPath()), dimension: 3)
        XCTAssertThrowsError(try writer.write(index: 0, vector: [1, 2]))
    }

    func testClosedPipeIsOutputClosedAndFullDiskIsOutputFailed() throws {
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        close(fds[0])
        let sink = OutputSink(fd: fds[1], name: "pipe", owns: true)
        try sink.write("hello")
        XCTAssertThrowsError(try sink.flush()) { XCTAssertEqual($0 as? StreamError, .outputClosed(path: "pipe")) }

        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let full = try OutputSink.open("/dev/full")
        try full.write("hello")
        XCTAssertThrowsError(try full.close()) { error in
            guard case .outputFailed? = error as? SwiftBERTError else { return XCTFail("\(error)") }
            XCTAssertEqual((error as? SwiftBERTError)?.exitStatus, 74)
        }
    }

    func testCannotCreateOutput() {
        XCTAssertThrowsError(try OutputSink.open("/nonexistent/folder/out.jsonl")) { error in
            XCTAssertEqual((error as? StreamError)?.exitStatus, 73)
        }
    }

    func testOrderedJSONEscapesAndKeepsKeyOrder() {
        let value = OrderedJSON.object([("b", .string("q\"\\\n\t\u{01}é")), ("a", .array([.int(1), .float(.nan), .bool(true), .null]))])
        XCTAssertEqual(value.text, #"{"b":"q\"\\\n\t\u0001é","a":[1,null,true,null]}"#)
    }

    func testProgressLine() {
        let p = StreamProgress(records: 4800, bytesRead: 480, totalBytes: 1000, seconds: 8)
        XCTAssertEqual(ProgressBar.render(p, unit: "lines", width: 100),
                       "[##############----------------]  48%  4800 lines  600 lines/s  ETA 0:09")
        XCTAssertEqual(ProgressBar.render(StreamProgress(records: 10, bytesRead: 5, totalBytes: nil, seconds: 2), unit: "lines"),
                       "10 lines  5 lines/s")
    }

    private func write(_ vectors: [[Float]], format: EmbeddingFormat, to path: String) throws {
        let sink = try OutputSink.open(path)
        let writer = try EmbeddingWriter(format: format, sink: sink)
        for (i, v) in vectors.enumerated() { try writer.write(index: i, vector: v) }
        try writer.finish()
        try sink.close()
    }
}

// MARK: - Helpers shared by the IO and CLI tests

/// A fresh path in a per-process temporary folder.
func temporaryPath(_ name: String = UUID().uuidString) -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-tests-\(getpid())")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent(name).path
}

func temporaryFile(_ text: String) throws -> String { try temporaryFile(bytes: Array(text.utf8)) }

func temporaryFile(bytes: [UInt8]) throws -> String {
    let path = temporaryPath()
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

struct ProcessResult {
    let status: Int32
    let stdout: String
    let stderr: String
    let stdoutData: Data
}

/// Runs a program to completion, feeding `stdin` and collecting both outputs (read concurrently,
/// so a chatty child never blocks on a full pipe).
func runProcess(_ executable: String, _ arguments: [String], stdin: Data? = nil, currentDirectory: String? = nil,
                environment: [String: String]? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = stdin == nil ? FileHandle.nullDevice : input
    try process.run()
    let outData = Collected(), errData = Collected()
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) { outData.data = out.fileHandleForReading.readDataToEndOfFile() }
    DispatchQueue.global().async(group: group) { errData.data = err.fileHandleForReading.readDataToEndOfFile() }
    if let stdin {
        signal(SIGPIPE, SIG_IGN)
        try? input.fileHandleForWriting.write(contentsOf: stdin)
        try? input.fileHandleForWriting.close()
    }
    group.wait()
    process.waitUntilExit()
    return ProcessResult(status: process.terminationStatus, stdout: String(decoding: outData.data, as: UTF8.self),
                         stderr: String(decoding: errData.data, as: UTF8.self), stdoutData: outData.data)
}

/// Bytes read on another thread; the DispatchGroup wait orders the accesses.
final class Collected: @unchecked Sendable {
    var data = Data()
}
