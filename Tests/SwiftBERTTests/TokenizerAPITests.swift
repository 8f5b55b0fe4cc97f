import XCTest
@testable import SwiftBERT

/// Loading and its errors, framing, truncation, padding, decoding, and robustness.
final class TokenizerAPITests: XCTestCase {
    private func miniLM() throws -> Tokenizer { try TokenizerFixtures.tokenizer("all-MiniLM-L6-v2") }

    private func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tokenizer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }

    // MARK: - Loading

    func testSpecialIdsAndVocabulary() throws {
        let tokenizer = try miniLM()
        XCTAssertEqual([tokenizer.clsId, tokenizer.sepId, tokenizer.padId, tokenizer.unkId, tokenizer.maskId], [101, 102, 0, 100, 103])
        XCTAssertEqual(tokenizer.vocabularySize, 30522)
        XCTAssertEqual(tokenizer.id(of: "hello"), 7592)
        XCTAssertEqual(tokenizer.id(of: "##ing"), 2075)
        XCTAssertNil(tokenizer.id(of: "not-a-token"))
        XCTAssertEqual(tokenizer.token(of: 7592), "hello")
        XCTAssertEqual(tokenizer.token(of: 103), "[MASK]")
        XCTAssertNil(tokenizer.token(of: -1))
        XCTAssertNil(tokenizer.token(of: 1_000_000))
        XCTAssertEqual(tokenizer.configuredMaxLength, 128)
    }

    func testLoadFolderPrefersTokenizerJSONAndFallsBackToVocabTXT() throws {
        let miniLMFolder = try TokenizerFixtures.modelFolder("all-MiniLM-L6-v2")
        let fromFolder = try Tokenizer.load(folder: miniLMFolder)
        let text = "Tokenizers from HF: Ünïcödé, 日本語 and [MASK]!"
        XCTAssertEqual(fromFolder.encode(text), try miniLM().encode(text))

        let vocabOnly = try temporaryFolder()
        try FileManager.default.copyItem(at: miniLMFolder.appendingPathComponent("vocab.txt"),
                                         to: vocabOnly.appendingPathComponent("vocab.txt"))
        XCTAssertEqual(try Tokenizer.load(folder: vocabOnly).encode(text), try miniLM().encode(text))
    }

    func testCasedVocabTXTKeepsCaseAndAccents() throws {
        let url = try TokenizerFixtures.modelFolder("all-MiniLM-L6-v2").appendingPathComponent("vocab.txt")
        let cased = try Tokenizer(vocabTXT: url, lowercase: false)
        XCTAssertEqual(cased.tokenize("hello"), ["hello"])
        XCTAssertEqual(cased.tokenize("Hello"), ["[UNK]"])  // the uncased vocabulary has no "Hello"
        XCTAssertNotEqual(cased.tokenize("café"), ["cafe"])  // accents stay when case does
        XCTAssertEqual(try miniLM().tokenize("café"), ["cafe"])
    }

    func testMissingFilesAreFileNotFound() throws {
        let folder = try temporaryFolder()
        for load in [
            { _ = try Tokenizer.load(folder: folder) },
            { _ = try Tokenizer(tokenizerJSON: folder.appendingPathComponent("tokenizer.json")) },
            { _ = try Tokenizer(vocabTXT: folder.appendingPathComponent("vocab.txt")) },
        ] {
            XCTAssertThrowsError(try load()) { error in
                guard case let .fileNotFound(path, hint)? = error as? SwiftBERTError else { return XCTFail("\(error)") }
                XCTAssertTrue(path.hasPrefix(folder.path))
                XCTAssertTrue(hint.contains("make setup"), hint)
            }
        }
    }

    /// A tokenizer stage SwiftBERT does not implement (or a model it cannot use) is refused with
    /// its kind named, never tokenized wrongly. (BPE, Unigram, ByteLevel, RobertaProcessing and
    /// the ByteLevel decoder are supported: MultilingualTokenizerTests.)
    func testUnsupportedTokenizerKindsAreRefusedByName() throws {
        let cases: [(patch: [String: JSONValue], named: String)] = [
            (["model": .object(["type": .string("BPE"), "vocab": .object([:]), "merges": .array([])])], "BPE"),
            (["model": .object(["type": .string("Unigram"), "vocab": .array([])])], "Unigram"),
            (["model": .object(["type": .string("WordLevel"), "vocab": .object([:]), "unk_token": .string("[UNK]")])], "WordLevel"),
            (["model": .object(["vocab": .object([:]), "merges": .array([])])], "BPE"),
            (["normalizer": .object(["type": .string("Sequence"), "normalizers": .array([
                .object(["type": .string("NFKD")]), .object(["type": .string("ByteLevel")])])])], "Sequence[NFKD, ByteLevel]"),
            (["normalizer": .object(["type": .string("ByteLevel")])], "ByteLevel"),
            (["pre_tokenizer": .object(["type": .string("UnicodeScripts")])], "UnicodeScripts"),
            (["post_processor": .object(["type": .string("RobertaProcessing")])], "RobertaProcessing"),
            (["decoder": .object(["type": .string("Replace"), "pattern": .object(["Regex": .string("a+")]), "content": .string("")])], "Replace"),
        ]
        let base = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf:
            TokenizerFixtures.modelFolder("all-MiniLM-L6-v2").appendingPathComponent("tokenizer.json")))
        guard case let .object(baseObject) = base else { return XCTFail("tokenizer.json is not an object") }
        let folder = try temporaryFolder()
        for (patch, named) in cases {
            let url = folder.appendingPathComponent("tokenizer.json")
            try JSONEncoder().encode(JSONValue.object(baseObject.merging(patch) { $1 })).write(to: url)
            XCTAssertThrowsError(try Tokenizer(tokenizerJSON: url), named) { error in
                guard case let .invalidTokenizer(path, reason)? = error as? SwiftBERTError else { return XCTFail("\(error)") }
                XCTAssertEqual(path, url.path)
                XCTAssertTrue(reason.contains(named), "\(reason) should name \(named)")
            }
        }
    }

    func testBrokenFilesAreInvalidTokenizer() throws {
        let folder = try temporaryFolder()
        let json = folder.appendingPathComponent("tokenizer.json")
        try Data("{not json".utf8).write(to: json)
        XCTAssertThrowsError(try Tokenizer(tokenizerJSON: json)) { error in
            guard case .invalidTokenizer? = error as? SwiftBERTError else { return XCTFail("\(error)") }
        }
        let vocab = folder.appendingPathComponent("vocab.txt")
        try Data("hello\nworld\n".utf8).write(to: vocab)  // no [UNK]
        XCTAssertThrowsError(try Tokenizer(vocabTXT: vocab)) { error in
            guard case .invalidTokenizer? = error as? SwiftBERTError else { return XCTFail("\(error)") }
        }
        try Data([0x5B, 0x55, 0x4E, 0x4B, 0x5D, 0x0A, 0xFF, 0xFE]).write(to: vocab)  // not UTF-8
        XCTAssertThrowsError(try Tokenizer(vocabTXT: vocab))
    }

    // MARK: - Encoding

    func testFramingTypeIdsAndOffsets() throws {
        let tokenizer = try miniLM()
        let single = tokenizer.encode("Hello, world!")
        XCTAssertEqual(single.tokens, ["[CLS]", "hello", ",", "world", "!", "[SEP]"])
        XCTAssertEqual(single.offsets, [0..<0, 0..<5, 5..<6, 7..<12, 12..<13, 0..<0])
        XCTAssertEqual(single.attentionMask, [1, 1, 1, 1, 1, 1])
        XCTAssertFalse(single.wasTruncated)

        let pair = tokenizer.encode("Hello", pair: "a world")
        XCTAssertEqual(pair.tokens, ["[CLS]", "hello", "[SEP]", "a", "world", "[SEP]"])
        XCTAssertEqual(pair.typeIds, [0, 0, 0, 1, 1, 1])
        XCTAssertEqual(pair.offsets, [0..<0, 0..<5, 0..<0, 0..<1, 2..<7, 0..<0])

        XCTAssertEqual(tokenizer.encode("Hello", addSpecialTokens: false).tokens, ["hello"])
        XCTAssertEqual(tokenizer.encode("").tokens, ["[CLS]", "[SEP]"])
        XCTAssertEqual(tokenizer.tokenize("Unaffable [MASK]"), ["una", "##ffa", "##ble", "[MASK]"])
        // Offsets count code points of the original text, even where NFD or emoji change lengths.
        let accents = tokenizer.encode("🙂 Café", addSpecialTokens: false)
        XCTAssertEqual(accents.tokens, ["[UNK]", "cafe"])
        XCTAssertEqual(accents.offsets, [0..<1, 2..<6])
    }

    func testTruncation() throws {
        let tokenizer = try miniLM()
        let text = "one two three four five six seven eight"
        let cut = tokenizer.encode(text, maxLength: 5)
        XCTAssertEqual(cut.tokens, ["[CLS]", "one", "two", "three", "[SEP]"])
        XCTAssertTrue(cut.wasTruncated)
        XCTAssertFalse(tokenizer.encode(text, maxLength: 10).wasTruncated)
        XCTAssertEqual(tokenizer.encode(text, maxLength: 3, addSpecialTokens: false).tokens, ["one", "two", "three"])

        // longest_first: the longer text loses tokens first, then both are cut evenly.
        let pair = tokenizer.encode("one two", pair: "three four five six seven", maxLength: 7)
        XCTAssertEqual(pair.tokens, ["[CLS]", "one", "two", "[SEP]", "three", "four", "[SEP]"])
        let even = tokenizer.encode("a b c d e", pair: "f g h i j", maxLength: 8)
        XCTAssertEqual(even.tokens, ["[CLS]", "a", "b", "[SEP]", "f", "g", "h", "[SEP]"])
        XCTAssertTrue(even.wasTruncated)
    }

    /// A cut from the left with a kept start (a prompt before the text) drops the text's first
    /// tokens, not the prompt's; a token across the kept start's end counts as the text's.
    func testTruncationFromTheLeftKeepsThePrompt() throws {
        let tokenizer = try miniLM()
        let prompt = "query: ", text = "one two three four five six seven eight"
        let kept = (prompt + text).unicodeScalars.count - text.unicodeScalars.count
        let cut = tokenizer.encode(prompt + text, maxLength: 7, truncatesLeft: true, keepingStart: kept)
        XCTAssertEqual(cut.tokens, ["[CLS]", "query", ":", "six", "seven", "eight", "[SEP]"])
        XCTAssertTrue(cut.wasTruncated)
        XCTAssertEqual(tokenizer.encode(prompt + text, maxLength: 7, truncatesLeft: true).tokens,
                       ["[CLS]", "four", "five", "six", "seven", "eight", "[SEP]"], "without a kept start the prompt goes first")
        XCTAssertEqual(tokenizer.encode(prompt + text, maxLength: 7, keepingStart: kept).tokens,
                       ["[CLS]", "query", ":", "one", "two", "three", "[SEP]"], "a cut from the right is unchanged")
        // A prompt longer than the limit keeps what fits of it, and nothing of the text.
        XCTAssertEqual(tokenizer.encode(prompt + text, maxLength: 3, truncatesLeft: true, keepingStart: kept).tokens, ["[CLS]", "query", "[SEP]"])
        // "un" + "affable": the prompt's last piece and the text's first word are one token.
        let joined = tokenizer.encode("un" + "affable one two three", maxLength: 4, truncatesLeft: true, keepingStart: 2)
        XCTAssertEqual(tokenizer.tokenize("unaffable").first, "una")
        XCTAssertEqual(joined.tokens, ["[CLS]", "two", "three", "[SEP]"])
    }

    func testBatchPaddingAndAttentionMasks() throws {
        let tokenizer = try miniLM()
        let batch = tokenizer.encodeBatch(["short", "a somewhat longer text", ""])
        XCTAssertEqual(Set(batch.map(\.count)), [6])
        XCTAssertEqual(batch[0].ids, [101, 2460, 102, 0, 0, 0])
        XCTAssertEqual(batch[0].attentionMask, [1, 1, 1, 0, 0, 0])
        XCTAssertEqual(batch[0].tokens.suffix(3), ["[PAD]", "[PAD]", "[PAD]"])
        XCTAssertEqual(batch[0].offsets.suffix(3), [0..<0, 0..<0, 0..<0])
        XCTAssertEqual(batch[0].typeIds, [0, 0, 0, 0, 0, 0])
        XCTAssertEqual(batch[1].attentionMask, [1, 1, 1, 1, 1, 1])
        XCTAssertEqual(batch[2].attentionMask, [1, 1, 0, 0, 0, 0])
        XCTAssertEqual(tokenizer.encodeBatch(["one two three four", "x"], maxLength: 4).map(\.count), [4, 4])
        XCTAssertEqual(tokenizer.encodeBatch([]), [])
    }

    func testDecode() throws {
        let tokenizer = try miniLM()
        let ids = tokenizer.encode("Hello, world! Unaffable don't [MASK]").ids
        // As HF: cleanup works token by token, so "don ' t" keeps its spaces.
        XCTAssertEqual(tokenizer.decode(ids), "hello, world! unaffable don ' t")
        XCTAssertEqual(tokenizer.decode(ids, skipSpecialTokens: false), "[CLS] hello, world! unaffable don ' t [MASK] [SEP]")
        XCTAssertEqual(tokenizer.decode([]), "")
        XCTAssertEqual(tokenizer.decode([-5, 99_999_999, 7592]), "hello")
    }

    // MARK: - Robustness

    /// Random text of every kind (marks, controls, specials, astral, surrogates' neighbours…)
    /// never traps, and every encoding is consistent with its text.
    func testArbitraryTextNeverTraps() throws {
        let tokenizer = try miniLM()
        var random = TokenizerTestRandom(seed: 42)
        let pieces: [String] = ["[MASK]", "[", "]", "##", " ", "\t", "\n", "\u{0}", "\u{FFFD}", "\u{0301}", "\u{0316}",
                                "\u{200D}", "\u{FEFF}", "日", "\u{20000}", "🙂", "İ", "ß", "a", "Z", "é", "\u{1D165}",
                                "\u{0F73}", "각", "\u{E0001}", "\u{10FFFF}", "\u{D7FF}", "\u{E000}", "🇫🇷"]
        for _ in 0..<2000 {
            var text = ""
            for _ in 0..<Int(random.next() % 40) {
                if random.next() % 3 == 0, let scalar = Unicode.Scalar(UInt32(random.next() % 0x110000)) {
                    text.unicodeScalars.append(scalar)
                } else {
                    text += pieces[Int(random.next() % UInt64(pieces.count))]
                }
            }
            let pair = random.next() % 4 == 0 ? String(text.reversed()) : nil
            let maxLength = random.next() % 3 == 0 ? Int(random.next() % 12) : nil
            let encoding = tokenizer.encode(text, pair: pair, maxLength: maxLength)
            let count = encoding.ids.count
            XCTAssertEqual([encoding.typeIds.count, encoding.attentionMask.count, encoding.tokens.count, encoding.offsets.count],
                           [count, count, count, count])
            let length = max(text.unicodeScalars.count, pair?.unicodeScalars.count ?? 0)
            XCTAssertTrue(encoding.offsets.allSatisfy { $0.upperBound <= length }, describeLine(text))
            XCTAssertTrue(encoding.ids.allSatisfy { $0 >= 0 && Int($0) < tokenizer.vocabularySize })
            _ = tokenizer.decode(encoding.ids)
        }
    }

    func testHugeLine() throws {
        let tokenizer = try miniLM()
        let unit = "Lorem ipsum dolor sit amet, 日本語 café! "
        let line = String(repeating: unit, count: 20_000)  // ~0.8 MB
        let encoding = tokenizer.encode(line)
        XCTAssertEqual(encoding.count, 20_000 * tokenizer.tokenize(unit).count + 2)
        XCTAssertEqual(encoding.offsets[encoding.count - 2].upperBound, line.unicodeScalars.count - 1)
        let unbroken = String(repeating: "a", count: 1_000_000)
        XCTAssertEqual(tokenizer.encode(unbroken).tokens, ["[CLS]", "[UNK]", "[SEP]"])
    }

    func testSharedAcrossThreads() throws {
        let tokenizer = try miniLM()
        let texts = (0..<64).map { "Thread \($0): Ünïcödé text, 日本語 and more [MASK] words \($0 * 7919)" }
        let expected = texts.map { tokenizer.encode($0) }
        nonisolated(unsafe) let results = UnsafeMutableBufferPointer<Encoding?>.allocate(capacity: texts.count)  // one slot per thread
        results.initialize(repeating: nil)
        defer { results.deallocate() }
        DispatchQueue.concurrentPerform(iterations: texts.count) { i in
            results[i] = tokenizer.encode(texts[i])
        }
        XCTAssertEqual(Array(results), expected)
    }
}

/// A small deterministic random generator for the robustness test.
struct TokenizerTestRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<n (0 when n ≤ 0).
    mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }
}
