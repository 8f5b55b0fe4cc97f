import Foundation

/// tokenizer.json's decoder: tokens back to text, as HF's decode_chain then join("").
indirect enum TokenDecoder: Sendable {
    case wordPiece(WordPieceDecoder)
    /// ▁ → space; the first token loses its ▁ unless nothing was prepended.
    case metaspace(replacement: Unicode.Scalar, stripsFirst: Bool)
    /// Byte-level characters back to bytes, decoded as UTF-8 with U+FFFD for bad sequences.
    case byteLevel
    /// Runs of <0xNN> tokens back to their UTF-8 text (U+FFFD per byte when invalid).
    case byteFallback
    case sequence([TokenDecoder])

    init?(json: JSONValue, _ fail: (String) -> BertError) throws {
        switch json.typeName {
        case nil:
            return nil
        case "WordPiece":
            self = .wordPiece(WordPieceDecoder(prefix: json["prefix"]?.string ?? "##", cleanup: json["cleanup"]?.bool ?? true))
        case "Metaspace":
            let replacement = json["replacement"]?.string ?? "▁"
            guard replacement.unicodeScalars.count == 1, let character = replacement.unicodeScalars.first else { throw fail("Metaspace decoder replacement \(printable(replacement)) is not one character") }
            let scheme = json["prepend_scheme"]?.string ?? ((json["add_prefix_space"]?.bool ?? true) ? "always" : "never")
            self = .metaspace(replacement: character, stripsFirst: scheme != "never")
        case "ByteLevel":
            self = .byteLevel
        case "ByteFallback":
            self = .byteFallback
        case "Sequence":
            self = .sequence(try (json["decoders"]?.array ?? []).compactMap { try TokenDecoder(json: $0, fail) })
        case let other?:
            throw fail("decoder \(printable(other)) is not supported (WordPiece, Metaspace, ByteLevel, ByteFallback and Sequence are); use a BERT, XLM-RoBERTa or RoBERTa tokenizer.json")
        }
    }

    func decode(_ tokens: [String]) -> String {
        chain(tokens).joined()
    }

    private func chain(_ tokens: [String]) -> [String] {
        switch self {
        case let .wordPiece(decoder):
            return [decoder.decode(tokens)]
        case let .metaspace(replacement, stripsFirst):
            return tokens.enumerated().map { i, token in
                var out = String.UnicodeScalarView()
                for scalar in token.unicodeScalars {
                    if scalar == replacement {
                        if !(i == 0 && stripsFirst) { out.append(" ") }
                    } else {
                        out.append(scalar)
                    }
                }
                return String(out)
            }
        case .byteLevel:
            var bytes: [UInt8] = []
            for token in tokens {
                let mapped = token.unicodeScalars.map { ByteLevel.unicodeToByte[$0.value] }
                if mapped.allSatisfy({ $0 != nil }) {
                    bytes += mapped.map { $0! }
                } else {
                    bytes += Array(token.utf8)
                }
            }
            return [String(decoding: bytes, as: UTF8.self)]
        case .byteFallback:
            var out: [String] = []
            var pending: [UInt8] = []
            func flush() {
                guard !pending.isEmpty else { return }
                if let text = String(validatingUTF8Bytes: pending) {
                    out.append(text)
                } else {
                    out.append(contentsOf: repeatElement("\u{FFFD}", count: pending.count))
                }
                pending.removeAll()
            }
            for token in tokens {
                let scalars = Array(token.unicodeScalars)
                if scalars.count == 6, token.hasPrefix("<0x"), token.hasSuffix(">"),
                   let byte = UInt8(String(String.UnicodeScalarView(scalars[3..<5])), radix: 16) {
                    pending.append(byte)
                } else {
                    flush()
                    out.append(token)
                }
            }
            flush()
            return out
        case let .sequence(decoders):
            return decoders.reduce(tokens) { $1.chain($0) }
        }
    }
}
