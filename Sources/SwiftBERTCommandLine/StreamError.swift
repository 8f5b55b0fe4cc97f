#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftBERT

/// Failures of the streaming readers and writers that `SwiftBERTError` has no case for. Each says what
/// went wrong and what to do; `exitStatus` follows sysexits(3) like `SwiftBERTError.exitStatus`.
package enum StreamError: Error, Equatable, CustomStringConvertible {
    /// A line is not UTF-8. `offset`: where in the line its first bad byte is, from 0.
    case invalidUTF8(source: String, line: Int, offset: Int)
    /// A JSON Lines record is not a JSON string or an object with a string "text" field.
    case invalidJSONLine(source: String, line: Int, reason: String)
    /// One record is larger than the reader's limit (it would defeat bounded memory).
    case recordTooLong(source: String, line: Int, limit: Int)
    /// The input holds no records at all; `expected` says what the command wanted from it.
    case emptyInput(source: String, skipped: Int, expected: ExpectedInput = .texts)
    /// The input exists but cannot be read (a directory, an I/O error).
    case unreadable(path: String, reason: String)
    /// The output file cannot be created (missing folder, permissions).
    case cannotCreate(path: String, reason: String)
    /// The reader of our output went away (EPIPE): not a failure, the consumer has had enough.
    case outputClosed(path: String)
    /// Two inputs that must line up do not (a corpus and its precomputed embeddings).
    case mismatch(reason: String)
    /// A stop was requested (SIGINT, SIGTERM): the output was completed with the first `records`
    /// records of the input, whole, and can be continued (`EmbeddingWriter.resuming`).
    case interrupted(signal: Int32, records: Int, output: String)

    package var description: String {
        switch self {
        case let .invalidUTF8(source, line, offset):
            return "\(source): line \(line) is not valid UTF-8 (bad byte at offset \(offset)); convert the input to UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        case let .invalidJSONLine(source, line, reason):
            return "\(source): line \(line) is not a JSON string or an object with a \"text\" string: \(reason)"
        case let .recordTooLong(source, line, limit):
            return "\(source): line \(line) is longer than \(limit >> 20) MiB; split the text (the model reads at most a few hundred tokens anyway)"
        case let .emptyInput(source, skipped, expected):
            return skipped > 0
                ? "\(source): no \(expected.what): all \(skipped) lines were skipped as invalid"
                : "\(source): the input is empty: no \(expected.what); \(expected.advice)"
        case let .unreadable(path, reason):
            return "\(path): cannot read input: \(reason)"
        case let .cannotCreate(path, reason):
            return "\(path): cannot create output: \(reason); check that the folder exists and is writable"
        case let .outputClosed(path):
            return "\(path): the reader closed the output"
        case let .mismatch(reason):
            return reason
        case let .interrupted(signal, records, output):
            return "stopped by \(Interruption.name(of: signal)): \(output) holds the first \(records) record\(records == 1 ? "" : "s") of the input, each complete"
        }
    }

    /// What is wrong with one record, without the advice (for per-line reports).
    package var reason: String {
        switch self {
        case let .invalidUTF8(_, _, offset): return "not valid UTF-8 (bad byte at offset \(offset))"
        case let .invalidJSONLine(_, _, reason): return "not a JSON string or an object with a \"text\" string: \(reason)"
        case let .recordTooLong(_, _, limit): return "longer than \(limit >> 20) MiB"
        default: return description
        }
    }

    /// sysexits(3) status. `outputClosed` is 0: a consumer that stops reading (`| head`) is a clean stop.
    package var exitStatus: Int32 {
        switch self {
        case .invalidUTF8, .invalidJSONLine, .recordTooLong, .emptyInput, .mismatch: return 65  // EX_DATAERR
        case .unreadable: return 66                                                            // EX_NOINPUT
        case .cannotCreate: return 73                                                          // EX_CANTCREAT
        case .outputClosed: return 0
        case let .interrupted(signal, _, _): return Interruption.exitStatus(for: signal)  // 130 for SIGINT, 143 for SIGTERM
        }
    }
}

/// What a command wanted from an input that held nothing, for its message: "texts to classify",
/// and how to give them.
package struct ExpectedInput: Equatable, Sendable {
    package let what: String
    package let advice: String

    package init(_ what: String, advice: String) { (self.what, self.advice) = (what, advice) }

    /// Texts from the arguments, --input FILE or stdin: `bert embed`'s, `classify`'s, `ner`'s,
    /// `tokenize`'s. `verb` says what is done to them ("embed").
    package static func texts(to verb: String) -> ExpectedInput {
        ExpectedInput("texts to \(verb)", advice: "give at least one text: as an argument, with --input FILE, or as a line on stdin")
    }

    /// Where no command is named (a library caller's reader).
    package static let texts = ExpectedInput("texts", advice: "give at least one text: as an argument, with --input FILE, or as a line on stdin")
}

/// The text of an errno value.
func errnoDescription(_ code: Int32) -> String {
    String(cString: strerror(code))
}
