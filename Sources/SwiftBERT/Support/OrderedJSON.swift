/// A JSON value with ordered keys, written compactly on one line: the machine-readable outputs
/// (JSON Lines records, --json reports) keep their fields in the documented order.
package indirect enum OrderedJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    /// Written in the shortest form that reads back as the same Float; non-finite values as null.
    case float(Float)
    case double(Double)
    case string(String)
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])

    package static func == (a: OrderedJSON, b: OrderedJSON) -> Bool { a.text == b.text }

    /// Compact JSON text.
    package var text: String {
        var bytes: [UInt8] = []
        write(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    package func write(into out: inout [UInt8]) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .int(let i): out += String(i).utf8
        case .float(let f): appendJSONNumber(f, to: &out)
        case .double(let d): out += (d.isFinite ? d.description : "null").utf8
        case .string(let s): appendJSONString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in fields.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendJSONString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

/// A Float as a JSON number: Swift's shortest round-trip form ("0.1", "1e-05"), null if not finite.
@inline(__always)
package func appendJSONNumber(_ value: Float, to out: inout [UInt8]) {
    out += (value.isFinite ? value.description : "null").utf8
}

/// A quoted JSON string; control characters escaped, everything else kept as UTF-8.
package func appendJSONString(_ string: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for byte in string.utf8 {
        switch byte {
        case UInt8(ascii: "\""): out += #"\""#.utf8
        case UInt8(ascii: "\\"): out += #"\\"#.utf8
        case 0x0A: out += #"\n"#.utf8
        case 0x0D: out += #"\r"#.utf8
        case 0x09: out += #"\t"#.utf8
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out += #"\u00"#.utf8
            out.append(hex[Int(byte >> 4)]); out.append(hex[Int(byte & 15)])
        default: out.append(byte)
        }
    }
    out.append(UInt8(ascii: "\""))
}
