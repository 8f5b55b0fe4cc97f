import Foundation

/// A Hugging Face config.json's numeric fields, read with the messages every family gives: a
/// missing field asks for the checkpoint's own config.json, a wrong type names the field.
struct ConfigFields {
    let json: [String: JSONValue]
    let fail: (String) -> SwiftBERTError

    /// An integer field; `fallback` when it is absent or null (else the field is required).
    func int(_ key: String, fallback: Int? = nil) throws -> Int {
        switch json[key] {
        case let .number(v)? where v == v.rounded() && abs(v) <= 1e15: return Int(v)
        case nil, .null?: if let fallback { return fallback }; throw fail("missing field '\(key)'; give the checkpoint's own config.json")
        case let other?: throw fail("\(key) is \(printable("\(other)")), not an integer; fix config.json")
        }
    }

    /// A number field; `fallback` when it is absent or not a number (else the field is required).
    func number(_ key: String, fallback: Double? = nil) throws -> Double {
        if case let .number(v)? = json[key] { return v }
        if let fallback { return fallback }
        throw fail("missing field '\(key)'; give the checkpoint's own config.json")
    }
}
