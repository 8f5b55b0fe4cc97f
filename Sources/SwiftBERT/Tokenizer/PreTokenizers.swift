import Foundation

/// tokenizer.json's pre_tokenizer: how a normalized piece is cut into words for the model.
indirect enum PreTokenizer: Sendable {
    /// No pre-tokenizer: the piece is one word.
    case none
    case bert
    case metaspace(Metaspace)
    case byteLevel(ByteLevel)
    /// WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit, Split: cut where a pattern matches.
    case split(PatternSplit)
    /// HF's Whitespace: the runs of `\w+|[^\w\s]+`, whitespace dropped.
    case whitespace
    /// Each pre-tokenizer cuts the words of the one before.
    case sequence([PreTokenizer])

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
        case let .split(split):
            var pieces = scratch.words
            pieces.removeAll(keepingCapacity: true)
            split.split(text.scalars, range, into: &pieces)
            scratch.words = []  // the body may run a later stage that wants its own buffers
            for piece in pieces { body(text, piece) }
            scratch.words = pieces
        case .whitespace:
            var start = -1, startKind = WordClass.space
            for i in range {
                let kind = WordClass(text.scalars[i])
                if start >= 0 && kind != startKind { body(text, start..<i); start = -1 }
                if start < 0 && kind != .space { start = i; startKind = kind }
            }
            if start >= 0 { body(text, start..<range.upperBound) }
        case let .sequence(stages):
            if scratch.stages.count < stages.count {
                scratch.stages += repeatElement(PreTokenizerScratch(), count: stages.count - scratch.stages.count)
            }
            Self.run(stages[...], text, range, scratches: &scratch.stages, level: 0, body)
        }
    }

    /// Stage `level` of a Sequence on one word of the stage before, each with its own buffers.
    private static func run(_ stages: ArraySlice<PreTokenizer>, _ text: NormalizedText, _ range: Range<Int>,
                            scratches: inout [PreTokenizerScratch], level: Int,
                            _ body: (NormalizedText, Range<Int>) -> Void) {
        guard let stage = stages.first else { body(text, range); return }
        var mine = PreTokenizerScratch()
        swap(&mine, &scratches[level])
        stage.forEachWord(text, range, scratch: &mine) { word, wordRange in
            run(stages.dropFirst(), word, wordRange, scratches: &scratches, level: level + 1, body)
        }
        swap(&mine, &scratches[level])
    }

    /// Whether cutting the input just before a space that has ASCII letters or digits on both
    /// sides gives the same words as the whole text: then a long text can be tokenised a chunk
    /// at a time. True when a stage splits at that space and no stage before it rewrites the text.
    var splitsAtPlainSpace: Bool {
        switch self {
        case .bert, .whitespace: return true
        case let .metaspace(metaspace): return metaspace.split
        case let .byteLevel(byteLevel): return byteLevel.useRegex
        case let .split(split): return split.splitsAtPlainSpace
        case .none: return false
        case let .sequence(stages):
            for stage in stages {
                if stage.splitsAtPlainSpace { return true }
                guard case let .split(split) = stage, split.isLocal else { return false }
            }
            return false
        }
    }

    /// Onig's classes for HF's Whitespace regex `\w+|[^\w\s]+`.
    enum WordClass {
        case word, space, other
        init(_ value: UInt32) {
            if value < 0x80 {
                switch value {
                case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F: self = .word
                case 0x09...0x0D, 0x20: self = .space
                default: self = .other
                }
                return
            }
            if UnicodeData.traits(value).contains(.whitespace) { self = .space; return }
            // Onig's tables (tokenizers 0.23.3) are Unicode 16.0: later characters are unassigned to it.
            guard let scalar = Unicode.Scalar(value), let age = scalar.properties.age, age.major <= 16 else {
                self = .other
                return
            }
            // Onig's \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control.
            if scalar.properties.isAlphabetic || scalar.properties.isJoinControl { self = .word; return }
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: self = .word
            default: self = .other
            }
        }
    }
}

/// HF's NormalizedString::split with a pattern and a SplitDelimiterBehavior: what most
/// pre-tokenizers are (WhitespaceSplit, Punctuation, Digits, CharDelimiterSplit, Split).
struct PatternSplit: @unchecked Sendable {  // Regex is immutable once built
    enum Pattern {
        /// Every scalar the test accepts is a match of its own (HF's `Fn(char) -> bool` pattern).
        case scalar(ScalarTest)
        case literal([UInt32])
        case regex(Regex<AnyRegexOutput>, source: String)
    }
    enum ScalarTest: Equatable {
        case whitespace, punctuation, numeric
        case character(UInt32)

        func matches(_ value: UInt32) -> Bool {
            switch self {
            case .whitespace: return UnicodeData.traits(value).contains(.whitespace)
            case .punctuation: return UnicodeData.traits(value).contains(.punctuation)
            case .numeric:
                // Rust's char::is_numeric: Nd, Nl, No.
                if value < 0x80 { return (0x30...0x39).contains(value) }
                guard let scalar = Unicode.Scalar(value) else { return false }
                switch scalar.properties.generalCategory {
                case .decimalNumber, .letterNumber, .otherNumber: return true
                default: return false
                }
            case let .character(c): return value == c
            }
        }
    }
    enum Behavior: String {
        case removed, isolated, contiguous
        case mergedWithPrevious = "merged_with_previous"
        case mergedWithNext = "merged_with_next"

        /// tokenizer.json writes "Removed", "MergedWithPrevious", …; Python writes "merged_with_previous".
        init?(json: String) {
            let snake = json.unicodeScalars.enumerated().map { i, c in
                c.properties.isUppercase ? (i == 0 ? "" : "_") + c.properties.lowercaseMapping : String(c)
            }.joined()
            self.init(rawValue: snake)
        }
    }
    var pattern: Pattern
    var behavior: Behavior
    var invert = false

    /// Swift's Regex for an Oniguruma pattern, matching scalar by scalar as Onig does; nil when
    /// Swift cannot read it or it uses what the two engines define differently (\h, \R, \X, \G,
    /// POSIX classes, Onig's (?m) which is dotall).
    static func regex(_ source: String) -> Regex<AnyRegexOutput>? {
        for unsupported in ["\\h", "\\H", "\\R", "\\X", "\\G", "\\K", "[:", "(?m", "(?<=", "(?<!", "\\A", "\\z", "\\Z"]
        where source.contains(unsupported) { return nil }
        guard let regex = try? Regex(source) else { return nil }
        return regex.matchingSemantics(.unicodeScalar)
    }

    /// A match never spans a space between ASCII letters or digits, and the cut does not depend
    /// on text beyond the neighbours: a Sequence may cut around it before a later stage splits.
    var isLocal: Bool {
        switch pattern {
        case .scalar: return true
        case let .literal(literal): return !literal.contains(0x20)
        case .regex: return false
        }
    }

    /// Splits at a plain space (see PreTokenizer.splitsAtPlainSpace) whatever comes next to it.
    var splitsAtPlainSpace: Bool {
        guard !invert else { return false }
        switch pattern {
        case let .scalar(test): return (test == .whitespace || test == .character(0x20)) && behavior != .mergedWithPrevious
        case let .literal(literal): return literal == [0x20] && behavior != .mergedWithPrevious
        case .regex: return false
        }
    }

    /// The pieces of `scalars[range]`, in order, empty ones dropped (as HF's PreTokenizedString).
    func split(_ scalars: [UInt32], _ range: Range<Int>, into out: inout [Range<Int>]) {
        // HF's find_matches: (range, is match) covering the whole piece.
        var events: [(Range<Int>, Bool)] = []
        var last = range.lowerBound
        func match(_ r: Range<Int>) {
            if last < r.lowerBound { events.append((last..<r.lowerBound, false)) }
            events.append((r, true))
            last = r.upperBound
        }
        switch pattern {
        case let .scalar(test):
            for i in range where test.matches(scalars[i]) { match(i..<i + 1) }
        case let .literal(literal):
            guard !literal.isEmpty else { break }
            var i = range.lowerBound
            while i + literal.count <= range.upperBound {
                if scalars[i] == literal[0] && scalars[i..<i + literal.count].elementsEqual(literal) {
                    match(i..<i + literal.count)
                    i += literal.count
                } else {
                    i += 1
                }
            }
        case let .regex(regex, _):
            var view = String.UnicodeScalarView()
            for i in range { view.append(Unicode.Scalar(scalars[i]) ?? "\u{FFFD}") }
            let string = String(view)
            // Scalar indices of the match bounds: the string holds exactly the piece's scalars.
            var position = string.unicodeScalars.startIndex, count = 0
            func scalarOffset(_ index: String.Index) -> Int {
                count += string.unicodeScalars[position..<index].count
                position = index
                return range.lowerBound + count
            }
            for found in string.matches(of: regex) {
                let lower = scalarOffset(found.range.lowerBound)
                match(lower..<scalarOffset(found.range.upperBound))
            }
        }
        if last < range.upperBound || events.isEmpty { events.append((last..<range.upperBound, false)) }
        if invert { for k in events.indices { events[k].1.toggle() } }

        // HF's SplitDelimiterBehavior: (range, removed) pieces.
        var pieces: [(Range<Int>, Bool)] = []
        switch behavior {
        case .removed: pieces = events
        case .isolated: pieces = events.map { ($0.0, false) }
        case .contiguous:
            var previous = false
            for (r, isMatch) in events {
                if isMatch == previous, let end = pieces.indices.last {
                    pieces[end].0 = pieces[end].0.lowerBound..<r.upperBound
                } else {
                    pieces.append((r, false))
                }
                previous = isMatch
            }
        case .mergedWithPrevious:
            var previous = false
            for (r, isMatch) in events {
                if isMatch && !previous, let end = pieces.indices.last {
                    pieces[end].0 = pieces[end].0.lowerBound..<r.upperBound
                } else {
                    pieces.append((r, false))
                }
                previous = isMatch
            }
        case .mergedWithNext:
            var previous = false
            for (r, isMatch) in events.reversed() {
                if isMatch && !previous, let end = pieces.indices.last {
                    pieces[end].0 = r.lowerBound..<pieces[end].0.upperBound
                } else {
                    pieces.append((r, false))
                }
                previous = isMatch
            }
            pieces.reverse()
        }
        for (r, removed) in pieces where !removed && !r.isEmpty { out.append(r) }
    }
}

/// Reused buffers of the pre-tokenizers.
struct PreTokenizerScratch {
    var rewritten = NormalizedText()
    var word = NormalizedText()
    var words: [Range<Int>] = []
    /// One per stage of a Sequence.
    var stages: [PreTokenizerScratch] = []
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
