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
    /// Each token's occurrences of a string replaced (HF's Replace decoder, a literal pattern).
    case replace(pattern: String, content: String)
    /// Up to `start` leading and `stop` trailing `content` characters off each token.
    case strip(content: Unicode.Scalar, start: Int, stop: Int)
    /// All tokens into one.
    case fuse
    /// The end-of-word suffix becomes a space (nothing after the last token).
    case bpe(suffix: String)
    /// CTC: repeats collapsed, the pad token dropped, with cleanup the word delimiter → space.
    case ctc(padToken: String, wordDelimiter: String, cleanup: Bool)
    case sequence([TokenDecoder])

    init?(json: JSONValue, _ fail: (String) -> SwiftBERTError) throws {
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
        case "Replace":
            guard let pattern = json["pattern"]?["String"]?.string else {
                throw fail("Replace decoder with pattern \(printable(String(describing: json["pattern"] ?? .null))) is not supported (a literal string is); use a tokenizer.json without it")
            }
            self = .replace(pattern: pattern, content: json["content"]?.string ?? "")
        case "Strip":
            guard let content = json["content"]?.string, content.unicodeScalars.count == 1, let scalar = content.unicodeScalars.first else {
                throw fail("Strip decoder content \(printable(json["content"]?.string ?? "null")) is not one character; the file is damaged")
            }
            self = .strip(content: scalar, start: max(0, json["start"]?.int ?? 0), stop: max(0, json["stop"]?.int ?? 0))
        case "Fuse":
            self = .fuse
        case "BPEDecoder":
            self = .bpe(suffix: json["suffix"]?.string ?? "</w>")
        case "CTC":
            self = .ctc(padToken: json["pad_token"]?.string ?? "<pad>", wordDelimiter: json["word_delimiter_token"]?.string ?? "|",
                        cleanup: json["cleanup"]?.bool ?? true)
        case let other?:
            throw fail("decoder \(printable(other)) is not supported (WordPiece, Metaspace, ByteLevel, ByteFallback, Replace, Strip, Fuse, BPEDecoder, CTC and Sequence are); use a tokenizer.json without it")
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
        case let .replace(pattern, content):
            return pattern.isEmpty ? tokens : tokens.map { $0.replacingAll(pattern, with: content) }
        case let .strip(content, start, stop):
            return tokens.map { token in
                let scalars = Array(token.unicodeScalars)
                var head = 0
                while head < min(start, scalars.count) && scalars[head] == content { head += 1 }
                var tail = scalars.count
                while scalars.count - tail < stop && tail > head && scalars[tail - 1] == content { tail -= 1 }
                return String(String.UnicodeScalarView(scalars[head..<tail]))
            }
        case .fuse:
            return [tokens.joined()]
        case let .bpe(suffix):
            return tokens.enumerated().map { i, token in
                suffix.isEmpty ? token : token.replacingAll(suffix, with: i == tokens.count - 1 ? "" : " ")
            }
        case let .ctc(padToken, wordDelimiter, cleanup):
            var out: [String] = []
            var previous: ExactString?  // Rust's dedup compares bytes
            for token in tokens where ExactString(token) != previous {
                previous = ExactString(token)
                var text = padToken.isEmpty ? token : token.replacingAll(padToken, with: "")
                if cleanup {
                    text = WordPieceDecoder.cleanUp(text)
                    if !wordDelimiter.isEmpty { text = text.replacingAll(wordDelimiter, with: " ") }
                }
                if !text.isEmpty { out.append(text) }
            }
            return out
        case let .sequence(decoders):
            return decoders.reduce(tokens) { $1.chain($0) }
        }
    }
}
