import Foundation

/// Any JSON value, for the loosely typed sections of tokenizer.json, config.json and the
/// safetensors header.
///
/// Read with JSONDecoder, not JSONSerialization: on Linux the latter drops a leading U+FEFF
/// from strings, which would silently change a vocabulary entry.
package enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(value): try container.encode(value)
        case let .number(value):
            if value == value.rounded(), abs(value) < 1e15 { try container.encode(Int(value)) } else { try container.encode(value) }
        case let .string(value): try container.encode(value)
        case let .array(value): try container.encode(value)
        case let .object(value): try container.encode(value)
        }
    }

    package subscript(key: String) -> JSONValue? {
        if case let .object(object) = self { return object[key] }
        return nil
    }

    package var string: String? { if case let .string(value) = self { return value }; return nil }
    package var bool: Bool? { if case let .bool(value) = self { return value }; return nil }
    package var array: [JSONValue]? { if case let .array(value) = self { return value }; return nil }
    package var isNull: Bool { self == .null }

    package var int: Int? {
        guard case let .number(value) = self, value == value.rounded(), abs(value) <= Double(Int32.max) else { return nil }
        return Int(value)
    }

    /// The "type" of a pipeline section; nil when the section is null.
    package var typeName: String? {
        guard case .object = self else { return nil }
        return self["type"]?.string ?? "untyped"
    }
}
