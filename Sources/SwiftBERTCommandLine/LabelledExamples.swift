import Foundation
import SwiftBERT

/// Labelled texts for `bert train-classifier`: JSON Lines of {"text": string, "label": string
/// or integer}; blank lines are skipped, anything else malformed stops with its line number.
package enum LabelledExamples {
    package static func read(_ path: String) throws -> [(text: String, label: String)] {
        let url = URL(fileURLWithPath: path)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw SwiftBERTError.fileNotFound(path: path, hint: "Give a JSON Lines file of {\"text\", \"label\"} records.")
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw SwiftBERTError.invalidInput(reason: "\(path): cannot be read (\(singleLine(error.localizedDescription)))")
        }
        var records: [(text: String, label: String)] = []
        for (n, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            guard case let .object(object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(line)),
                  case let .string(text)? = object["text"] else {
                throw SwiftBERTError.invalidInput(reason: "\(printable(path)) line \(n + 1): not a JSON object with a \"text\" string")
            }
            let label: String
            switch object["label"] {
            case let .string(value)?: label = value
            case let .number(value)? where value == value.rounded() && abs(value) < 1e15: label = String(Int(value))
            default: throw SwiftBERTError.invalidInput(reason: "\(printable(path)) line \(n + 1): \"label\" must be a string or an integer")
            }
            records.append((text, label))
        }
        guard !records.isEmpty else {
            throw StreamError.emptyInput(source: printable(path), skipped: 0,
                                         expected: ExpectedInput("labelled examples", advice: "give JSON Lines of {\"text\": ..., \"label\": ...}, one example a line"))
        }
        return records
    }
}
