/// tokenizer.json's pre_tokenizer: how a normalized piece is cut into words for the model.
enum PreTokenizer: Sendable {
    /// No pre-tokenizer: the piece is one word.
    case none
    case bert
    case metaspace(Metaspace)
    case byteLevel(ByteLevel)

    /// Calls `body` with each word of `text[range]`: the words may live in `scratch` (a
    /// rewritten copy: ▁ for spaces, byte-level characters), with their original spans.
    func forEachWord(_ text: NormalizedText, _ range: Range<Int>, scratch: inout PreTokenizerScratch,
                     _ body: (NormalizedText, Range<Int>) -> Void) {
        guard !range.isEmpty else { return }
        switch self {
        case .none:
            body(text, range)
        case .bert:
            text.scalars.withUnsafeBufferPointer { scalars in
                BertPreTokenizer.forEachWord(scalars, range) { word in body(text, word) }
            }
        case let .metaspace(metaspace):
            metaspace.forEachWord(text, range, scratch: &scratch, body)
        case let .byteLevel(byteLevel):
            byteLevel.forEachWord(text, range, scratch: &scratch, body)
        }
    }
}

/// Reused buffers of the pre-tokenizers.
struct PreTokenizerScratch {
    var rewritten = NormalizedText()
    var word = NormalizedText()
    var words: [Range<Int>] = []
}

/// HF's Metaspace: spaces become the replacement (▁), which is prepended to the piece as the
/// prepend scheme says, and the piece is split before each ▁ (MergedWithNext).
struct Metaspace: Sendable {
    enum PrependScheme: String, Sendable { case always, never, first }
    var replacement: UInt32 = 0x2581
    var prependScheme = PrependScheme.always
    var split = true

    func forEachWord(_ text: NormalizedText, _ range: Range<Int>, scratch: inout PreTokenizerScratch,
                     _ body: (NormalizedText, Range<Int>) -> Void) {
        var out = scratch.rewritten
        out.removeAll()
        // Replacing ' ' keeps its alignment; a prepended ▁ takes the first scalar's.
        let prepend: Bool
        switch prependScheme {
        case .always: prepend = true
        case .never: prepend = false
        case .first: prepend = text.spans[range.lowerBound].start == 0  // HF: the piece starts the input
        }
        if prepend && text.scalars[range.lowerBound] != 0x20 && text.scalars[range.lowerBound] != replacement {
            out.append(replacement, text.spans[range.lowerBound])
        }
        for i in range {
            out.append(text.scalars[i] == 0x20 ? replacement : text.scalars[i], text.spans[i])
        }
        if out.scalars.isEmpty {
        } else if split {
            var start = 0
            for i in 1..<out.scalars.count where out.scalars[i] == replacement {
                body(out, start..<i)
                start = i
            }
            body(out, start..<out.scalars.count)
        } else {
            body(out, 0..<out.scalars.count)
        }
        scratch.rewritten = out
    }
}

/// HF's ByteLevel pre-tokenizer (GPT-2, RoBERTa): an optional leading space, GPT-2's regex,
/// then every UTF-8 byte written as one of 256 printable characters.
struct ByteLevel: Sendable {
    var addPrefixSpace = false
    var useRegex = true

    func forEachWord(_ text: NormalizedText, _ range: Range<Int>, scratch: inout PreTokenizerScratch,
                     _ body: (NormalizedText, Range<Int>) -> Void) {
        var source = scratch.rewritten
        source.removeAll()
        if addPrefixSpace && text.scalars[range.lowerBound] != 0x20 {
            source.append(0x20, text.spans[range.lowerBound])
        }
        for i in range { source.append(text.scalars[i], text.spans[i]) }
        var words = scratch.words
        words.removeAll(keepingCapacity: true)
        if useRegex {
            Self.splitGPT2(source.scalars, into: &words)
        } else {
            words.append(0..<source.scalars.count)
        }
        var word = scratch.word
        var bytes: [UInt8] = []
        for range in words {
            word.removeAll()
            for i in range {
                bytes.removeAll(keepingCapacity: true)
                PrecompiledCharsmap.appendUTF8(source.scalars[i], to: &bytes)
                for byte in bytes { word.append(Self.byteToUnicode[Int(byte)], source.spans[i]) }
            }
            body(word, 0..<word.scalars.count)
        }
        scratch.rewritten = source
        scratch.word = word
        scratch.words = words
    }

    /// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others are moved to U+0100….
    static let byteToUnicode: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            if (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte) {
                table[byte] = UInt32(byte)
            } else {
                table[byte] = next
                next += 1
            }
        }
        return table
    }()

    /// The byte each byte-level character stands for.
    static let unicodeToByte: [UInt32: UInt8] = {
        var map: [UInt32: UInt8] = [:]
        for (byte, scalar) in byteToUnicode.enumerated() { map[scalar] = UInt8(byte) }
        return map
    }()

    /// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, leftmost-first,
    /// as Oniguruma runs it. Every scalar falls in exactly one match.
    static func splitGPT2(_ s: [UInt32], into words: inout [Range<Int>]) {
        let n = s.count
        var i = 0
        func kind(_ k: Int) -> ScalarKind { ScalarKind(s[k]) }
        while i < n {
            let start = i
            // Contractions.
            if s[i] == 0x27, i + 1 < n {
                let c1 = s[i + 1], c2: UInt32 = i + 2 < n ? s[i + 2] : 0
                var length = 0
                switch c1 {
                case 0x73, 0x74, 0x6D, 0x64: length = 2           // 's 't 'm 'd
                case 0x72 where c2 == 0x65, 0x76 where c2 == 0x65: length = 3  // 're 've
                case 0x6C where c2 == 0x6C: length = 3           // 'll
                default: break
                }
                if length > 0 { words.append(i..<(i + length)); i += length; continue }
            }
            // " ?" then a run of letters, digits or others.
            let head = s[i] == 0x20 && i + 1 < n ? i + 1 : i
            let headKind = kind(head)
            if headKind != .whitespace || head != i {
                if headKind != .whitespace {
                    var end = head + 1
                    while end < n && kind(end) == headKind { end += 1 }
                    words.append(start..<end)
                    i = end
                    continue
                }
            }
            // Whitespace: \s+(?!\S), else \s+.
            var end = i
            while end < n && kind(end) == .whitespace { end += 1 }
            if end < n && end - i > 1 { end -= 1 }  // leave the last space to the word after it
            words.append(start..<end)
            i = end
        }
    }

    enum ScalarKind { case letter, number, whitespace, other
        init(_ value: UInt32) {
            if UnicodeData.traits(value).contains(.whitespace) { self = .whitespace; return }
            guard let scalar = Unicode.Scalar(value) else { self = .other; return }
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: self = .letter
            case .decimalNumber, .letterNumber, .otherNumber: self = .number
            default: self = .other
            }
        }
    }
}

/// RobertaProcessing's (or a ByteLevel post-processor's) trim_offsets, with its add_prefix_space.
struct ByteLevelOffsetTrim: Sendable {
    var addPrefixSpace: Bool
}

/// HF's offset trimming of byte-level tokens (ByteLevel/RobertaProcessing with trim_offsets):
/// leading and trailing Ġ (spaces) leave the offsets, except the one space a prefix space put
/// before the first token.
func trimByteLevelOffsets(_ sink: inout TokenSink, addPrefixSpace: Bool) {
    let space = ByteLevel.byteToUnicode[0x20]
    for i in sink.offsets.indices {
        let token = sink.tokens[i].unicodeScalars
        var leading = 0
        for scalar in token { if scalar.value == space || scalar.properties.isWhitespace { leading += 1 } else { break } }
        guard leading > 0 || token.last.map({ $0.value == space || $0.properties.isWhitespace }) == true else { continue }
        var trailing = 0
        for scalar in token.reversed() { if scalar.value == space || scalar.properties.isWhitespace { trailing += 1 } else { break } }
        var start = sink.offsets[i].lowerBound, end = sink.offsets[i].upperBound
        if leading > 0 {
            if (i == 0 || start == 0) && addPrefixSpace && leading == 1 { leading = 0 }
            start = min(start + leading, end)
        }
        if trailing > 0 && end >= trailing { end = max(end - trailing, start) }
        sink.offsets[i] = start..<end
    }
}
