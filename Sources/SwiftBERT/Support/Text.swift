import Foundation

// Text helpers for error messages, shared by every folder.

/// A string taken from a file (a tensor name, a token) made safe for a one-line message:
/// control characters escaped, and at most `limit` characters kept.
package func printable(_ text: String, limit: Int = 80) -> String {
    var out = ""
    var kept = 0
    for scalar in text.unicodeScalars {
        if kept == limit { out += "…"; break }
        kept += 1
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse:
            out += scalar.escaped(asASCII: true)
        default:
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

/// Newlines and runs of white space folded, for messages that must stay on one line.
package func singleLine(_ text: String) -> String {
    printable(text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "), limit: 300)
}

/// A one-line reason for a JSON decoding failure.
package func describe(_ error: Error) -> String {
    func at(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "\($0)" } ?? $0.stringValue }.joined(separator: ".")
        return path.isEmpty ? "" : " at '\(printable(path))'"
    }
    switch error {
    case DecodingError.keyNotFound(let key, _): return "missing field '\(printable(key.stringValue))'"
    case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
        return "bad value\(at(context)): \(singleLine(context.debugDescription))"
    case DecodingError.dataCorrupted(let context):
        return context.codingPath.isEmpty ? "not valid JSON"
                                          : "bad value\(at(context)): \(singleLine(context.debugDescription))"
    default:
        let text = "\(error)"
        // Foundation's internal parser errors, as thrown inside a nested container.
        if text.hasPrefix("numberIsNotRepresentableInSwift") { return "a number that is not an integer in range" }
        return singleLine(text)
    }
}

/// The offset (from 0) of the first byte that breaks UTF-8 decoding; nil when all is valid. Every
/// message that names a bad byte gives this offset: the line reader's, the arguments', vocab.txt's
/// and the server's.
package func firstInvalidUTF8Offset(_ bytes: ArraySlice<UInt8>) -> Int? {
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    var offset = 0
    while true {
        switch parser.parseScalar(from: &iterator) {
        case .valid(let scalar): offset += scalar.count
        case .error: return offset
        case .emptyInput: return nil
        }
    }
}

/// Table cells padded to a width (reports).
extension String {
    package func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
    package func rightPadded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
