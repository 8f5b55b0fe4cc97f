import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftBERT

/// Where texts come from.
package enum TextSource: Sendable, Equatable {
    /// Texts given directly (command-line arguments): one record each, taken as they are.
    case texts([String])
    /// A file, or standard input for "-".
    case file(String)
    case standardInput
}

/// How a file or stream holds its texts.
package enum InputFormat: String, CaseIterable, Sendable {
    /// One text per line; `\n` or `\r\n` endings; an empty line is an empty text.
    case lines
    /// JSON Lines: each line a JSON string or an object with a "text" field, so texts may hold
    /// newlines. Blank lines are not records.
    case jsonl
}

/// One input text and where it came from.
package struct TextRecord: Sendable, Equatable {
    /// Position among the input's records, 0-based. Skipped records keep their index, so gaps show.
    package let index: Int
    /// 1-based line in the file (the argument position for texts).
    package let line: Int
    package let text: String
}

/// A record left out because of `skipInvalid`, with the error it would have raised.
package struct SkippedRecord: Sendable {
    package let line: Int
    package let error: StreamError
}

/// Reads texts one record at a time from arguments, a file or stdin, in bounded memory: only the
/// current line is held. Lines are checked as UTF-8; a bad line stops the read with a typed error
/// naming it, or with `skipInvalid` is reported to `onSkip` and left out.
package final class TextRecordReader {
    /// Longest record accepted; longer lines are an error rather than an unbounded buffer.
    package static let defaultRecordLimit = 16 << 20

    /// "stdin", the file's path, or "arguments".
    package let sourceName: String
    package let format: InputFormat
    package let skipInvalid: Bool
    /// Size of the input in bytes when known (a regular file), for progress and ETA.
    package let totalBytes: Int?
    /// Bytes consumed so far, including line ends.
    package var bytesRead: Int { lines?.bytesRead ?? 0 }
    /// Records returned so far and records skipped so far.
    package private(set) var recordCount = 0
    package private(set) var skippedCount = 0
    /// When set, a read blocked on a pipe that a signal interrupts (EINTR) gives up if this
    /// stop was requested, instead of waiting on; `EmbeddingStream` sets it.
    package var interruption: Interruption? {
        get { lines?.interruption }
        set { lines?.interruption = newValue }
    }

    private var texts: [String]?
    private var lines: LineReader?
    private var nextIndex = 0
    private var lineNumber = 0
    private var pending: TextRecord??
    /// `bytesRead` when the last `next(upTo:)` began, for progress within a window.
    private(set) var windowStartBytes: Int?
    private let onSkip: ((SkippedRecord) -> Void)?

    package init(_ source: TextSource, format: InputFormat = .lines, skipInvalid: Bool = false,
                recordLimit: Int = TextRecordReader.defaultRecordLimit,
                onSkip: ((SkippedRecord) -> Void)? = nil) throws {
        self.format = format
        self.skipInvalid = skipInvalid
        self.onSkip = onSkip
        switch source {
        case .texts(let texts):
            self.texts = texts
            sourceName = "arguments"
            totalBytes = nil
        case .standardInput, .file("-"):
            sourceName = "stdin"
            lines = LineReader(fd: STDIN_FILENO, name: sourceName, ownsDescriptor: false, limit: recordLimit)
            totalBytes = regularFileSize(STDIN_FILENO)
        case .file(let path):
            sourceName = path
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let code = errno
                if code == ENOENT {
                    throw SwiftBERTError.fileNotFound(path: path, hint: "Check the path, or use - for stdin.")
                }
                throw StreamError.unreadable(path: path, reason: errnoDescription(code))
            }
            var info = stat()
            if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                close(fd)
                throw StreamError.unreadable(path: path, reason: "it is a directory; give a text file")
            }
            lines = LineReader(fd: fd, name: path, ownsDescriptor: true, limit: recordLimit)
            totalBytes = regularFileSize(fd)
        }
    }

    /// The record `next()` will return, without consuming it (to fail fast on empty input).
    package func peek() throws -> TextRecord? {
        if pending == nil { pending = .some(try read()) }
        return pending!
    }

    /// The next record, or nil at the end of the input.
    package func next() throws -> TextRecord? {
        if let record = pending {
            pending = nil
            return record
        }
        return try read()
    }

    private func read() throws -> TextRecord? {
        if let texts {
            guard nextIndex < texts.count else { return nil }
            defer { nextIndex += 1; recordCount += 1 }
            return TextRecord(index: nextIndex, line: nextIndex + 1, text: texts[nextIndex])
        }
        guard let lines else { return nil }
        while let bytes = try lines.next() {
            lineNumber += 1
            if format == .jsonl, bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let index = nextIndex
            nextIndex += 1
            do {
                let record = TextRecord(index: index, line: lineNumber, text: try decode(bytes))
                recordCount += 1
                return record
            } catch let error as StreamError where skipInvalid {
                skippedCount += 1
                onSkip?(SkippedRecord(line: lineNumber, error: error))
            }
        }
        return nil
    }

    /// Up to `count` records; empty at the end of the input. The batching unit of the streams.
    package func next(upTo count: Int) throws -> [TextRecord] {
        windowStartBytes = bytesRead
        var records: [TextRecord] = []
        records.reserveCapacity(count)
        while records.count < count, let record = try next() { records.append(record) }
        return records
    }

    /// Every remaining record: for small inputs only (this is where memory stops being bounded).
    package func readAll() throws -> [TextRecord] {
        var records: [TextRecord] = []
        while let record = try next() { records.append(record) }
        return records
    }

    private func decode(_ bytes: ArraySlice<UInt8>) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw StreamError.invalidUTF8(source: sourceName, line: lineNumber, offset: firstInvalidUTF8Offset(bytes) ?? bytes.count)
        }
        switch format {
        case .lines:
            return text
        case .jsonl:
            // JSONDecoder, not JSONSerialization: on Linux the latter drops a U+FEFF that starts a
            // string or follows an escape in it ("\"\u{FEFF}é" read as "\"é"), so the text
            // tokenised was not the text sent (found by tools/fuzz/tokenizer_differential.py).
            let value: JSONValue
            do { value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes)) }
            catch { throw StreamError.invalidJSONLine(source: sourceName, line: lineNumber, reason: "not valid JSON") }
            switch value {
            case let .string(text): return text
            case let .object(object):
                guard case let .string(text)? = object["text"] else {
                    throw StreamError.invalidJSONLine(source: sourceName, line: lineNumber, reason: object["text"].map {
                        "\"text\" is \(jsonKind($0)), not a string" } ?? "the object has no \"text\" field")
                }
                return text
            default:
                throw StreamError.invalidJSONLine(source: sourceName, line: lineNumber, reason: "found \(jsonKind(value))")
            }
        }
    }
}

/// Splits a file descriptor into lines without holding more than one line and one read buffer.
/// Strips `\n`, a `\r` before it, and a UTF-8 byte-order mark at the start.
final class LineReader {
    let fd: Int32
    let name: String
    let ownsDescriptor: Bool
    let limit: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0, end = 0
    private var line: [UInt8] = []
    private var atEOF = false
    private var atStart = true
    private var lineNumber = 0
    private(set) var bytesRead = 0
    var interruption: Interruption?

    init(fd: Int32, name: String, ownsDescriptor: Bool, limit: Int) {
        (self.fd, self.name, self.ownsDescriptor, self.limit) = (fd, name, ownsDescriptor, limit)
    }

    deinit { if ownsDescriptor { close(fd) } }

    /// The next line's bytes (valid until the next call), or nil at the end.
    func next() throws -> ArraySlice<UInt8>? {
        line.removeAll(keepingCapacity: true)
        while true {
            if start == end {
                if atEOF { break }
                try fill()
                continue
            }
            let newline: Int? = buffer.withUnsafeBytes { raw in
                memchr(raw.baseAddress! + start, 0x0A, end - start).map { raw.baseAddress!.distance(to: UnsafeRawPointer($0)) }
            }
            let stop = newline ?? end
            guard line.count + (stop - start) <= limit else {
                throw StreamError.recordTooLong(source: name, line: lineNumber + 1, limit: limit)
            }
            line.append(contentsOf: buffer[start..<stop])
            if let newline {
                start = newline + 1
                return finish(terminated: true)
            }
            start = end
        }
        return line.isEmpty ? nil : finish(terminated: false)
    }

    private func finish(terminated: Bool) -> ArraySlice<UInt8> {
        lineNumber += 1
        bytesRead += line.count + (terminated ? 1 : 0)
        var slice = line[...]
        if atStart {
            atStart = false
            if slice.starts(with: [0xEF, 0xBB, 0xBF]) { slice = slice.dropFirst(3) }
        }
        if slice.last == 0x0D { slice = slice.dropLast() }
        return slice
    }

    private func fill() throws {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if count < 0 {
            let code = errno
            if code == EINTR {
                if let signal = interruption?.signal { throw ReadInterrupted(signal: signal) }
                return
            }
            throw StreamError.unreadable(path: name, reason: errnoDescription(code))
        }
        (start, end) = (0, count)
        if count == 0 { atEOF = true }
    }
}

/// A read given up because a stop was requested while it waited (see `TextRecordReader.interruption`).
struct ReadInterrupted: Error {
    let signal: Int32
}

extension TextRecordReader {
    /// Hands `body` the input a batch at a time until it ends, or until `interruption` asks for a
    /// stop (checked between batches, and while a read waits on a pipe). Then `finish` completes
    /// the output with the batches done, whole records only, and it throws
    /// `StreamError.interrupted` naming `output`. Returns how many records it handed over.
    package func forEachBatch(upTo size: Int, interruption: Interruption, output: String, finish: () throws -> Void,
                              _ body: ([TextRecord]) throws -> Void) throws -> Int {
        var done = 0
        self.interruption = interruption
        defer { self.interruption = nil }
        func stop(_ signal: Int32) throws -> Never {
            try finish()
            throw StreamError.interrupted(signal: signal, records: done, output: output)
        }
        do {
            while true {
                if let signal = interruption.signal { try stop(signal) }
                let records = try next(upTo: size)
                if records.isEmpty { return done }
                try body(records)
                done += records.count
            }
        } catch let error as ReadInterrupted {
            try stop(error.signal)
        }
    }
}


private func jsonKind(_ value: JSONValue) -> String {
    switch value {
    case .null: return "null"
    case .array: return "an array"
    case .number, .bool: return "a number or boolean"
    case .string: return "a string"
    case .object: return "an object"
    }
}

/// Size of a regular file behind a descriptor; nil for pipes and terminals.
func regularFileSize(_ fd: Int32) -> Int? {
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    return Int(info.st_size)
}

/// Whether a descriptor is a terminal (for progress bars and prompts).
package func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }
