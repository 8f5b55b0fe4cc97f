import XCTest
@testable import SwiftBERT

/// The SentencePiece Unigram (XLM-R layout) and byte-level BPE (RoBERTa layout) tokenizers
/// trained on Debian's catalogues by tools/fixtures/make_multilingual_tokenizer_fixtures.py, against
/// HF `tokenizers` on held-out lines (Fixtures/multilingual/). No model weights are needed.
final class MultilingualTokenizerTests: XCTestCase {
    static func url(_ file: String) -> URL {
        Bundle.module.url(forResource: "Fixtures/multilingual", withExtension: nil)!.appendingPathComponent(file)
    }

    private static let tokenizers: [String: Tokenizer] = {
        var out: [String: Tokenizer] = [:]
        for (key, folder) in [("xlmr", "xlmr-unigram"), ("roberta", "roberta-bpe")] {
            out[key] = try? Tokenizer(tokenizerJSON: url("\(folder)/tokenizer.json"))
        }
        return out
    }()

    private func tokenizer(_ key: String) throws -> Tokenizer {
        try XCTUnwrap(Self.tokenizers[key], "\(key) tokenizer.json did not load")
    }

    private func jsonLines(_ file: String) throws -> [JSONValue] {
        let text = try String(contentsOf: Self.url(file), encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
    }

    /// Compares one encoding with HF's record; returns a description of the first difference.
    private func difference(_ got: Encoding, _ expected: JSONValue, decode: String? = nil, tokenizer: Tokenizer) -> String? {
        let ids = expected["ids"]?.array?.compactMap(\.int).map(Int32.init) ?? []
        if got.ids != ids { return "ids \(got.ids) != HF \(ids)\n  tokens \(got.tokens)" }
        let offsets = offsetRanges(expected["offsets"]?.array?.compactMap(\.int) ?? [])
        if got.offsets != offsets { return "offsets \(got.offsets) != HF \(offsets)\n  tokens \(got.tokens)" }
        if let typeIds = expected["type_ids"]?.array?.compactMap(\.int).map(Int32.init), got.typeIds != typeIds {
            return "type ids \(got.typeIds) != HF \(typeIds)"
        }
        if let tokens = expected["tokens"]?.array?.compactMap(\.string), got.tokens != tokens {
            return "tokens \(got.tokens) != HF \(tokens)"
        }
        if let decoded = expected["decoded"]?.string {
            let mine = tokenizer.decode(got.ids)
            if mine != decoded { return "decode \(describeLine(mine)) != HF \(describeLine(decoded))" }
        }
        return nil
    }

    func testHeldOutLinesMatchHuggingFace() throws {
        let records = try jsonLines("reference.jsonl")
        let header = try XCTUnwrap(records.first)
        XCTAssertEqual(header["header"]?.bool, true)
        let lines = records.dropFirst()
        XCTAssertGreaterThanOrEqual(lines.count, 1000)
        for key in ["xlmr", "roberta"] {
            let tokenizer = try tokenizer(key)
            var failures: [String] = []
            var tokens = 0
            for record in lines {
                let text = try XCTUnwrap(record["text"]?.string)
                let expected = try XCTUnwrap(record[key])
                let got = tokenizer.encode(text)
                tokens += got.count
                if let problem = difference(got, expected, tokenizer: tokenizer) {
                    failures.append("\(record["source"]?.string ?? "?") \(describeLine(text)): \(problem)")
                }
            }
            XCTAssertEqual(failures.count, 0, "\(key): \(failures.count) of \(lines.count) lines differ from HF; first:\n" + failures.prefix(8).joined(separator: "\n"))
            XCTAssertGreaterThan(tokens, 10 * lines.count, key)
        }
    }

    func testPairsAndTruncationMatchHuggingFace() throws {
        let records = try jsonLines("pairs.jsonl")
        XCTAssertGreaterThanOrEqual(records.count, 50)
        for key in ["xlmr", "roberta"] {
            let tokenizer = try tokenizer(key)
            var failures: [String] = []
            for record in records {
                let text = try XCTUnwrap(record["text"]?.string)
                let got = tokenizer.encode(text, pair: record["pair"]?.string, maxLength: record["max_length"]?.int,
                                           addSpecialTokens: record["add_special_tokens"]?.bool ?? true)
                if let problem = difference(got, try XCTUnwrap(record[key]), tokenizer: tokenizer) {
                    failures.append("\(describeLine(text)) + \(describeLine(record["pair"]?.string ?? "")) max \(record["max_length"]?.int ?? -1): \(problem)")
                }
            }
            XCTAssertEqual(failures.count, 0, "\(key): \(failures.count) pairs differ; first:\n" + failures.prefix(5).joined(separator: "\n"))
        }
    }

    func testVariantsMatchHuggingFace() throws {
        let variants = try jsonLines("variants.jsonl")
        XCTAssertGreaterThanOrEqual(variants.count, 7)
        for variant in variants {
            let name = try XCTUnwrap(variant["variant"]?.string)
            let base = Self.url("\(try XCTUnwrap(variant["base"]?.string))/tokenizer.json")
            let tokenizer = try patchedTokenizer(base, patch: try XCTUnwrap(variant["patch"]))
            var failures: [String] = []
            let records = try XCTUnwrap(variant["records"]?.array)
            for record in records {
                let text = try XCTUnwrap(record["text"]?.string)
                if let problem = difference(tokenizer.encode(text), record, tokenizer: tokenizer) {
                    failures.append("\(describeLine(text)): \(problem)")
                }
            }
            XCTAssertEqual(failures.count, 0, "\(name): \(failures.count) of \(records.count) texts differ; first:\n" + failures.prefix(5).joined(separator: "\n"))
        }
    }

    /// Base tokenizer.json with the patch's sections replaced ("model_fields" go inside "model").
    private func patchedTokenizer(_ base: URL, patch: JSONValue) throws -> Tokenizer {
        guard case var .object(json) = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: base)),
              case let .object(changes) = patch, case var .object(model)? = json["model"] else {
            throw SwiftBERTError.invalidInput(reason: "unreadable tokenizer.json or patch")
        }
        for (key, value) in changes {
            if key == "model_fields", case let .object(fields) = value {
                for (field, fieldValue) in fields { model[field] = fieldValue }
            } else {
                json[key] = value
            }
        }
        json["model"] = .object(model)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("variant-\(UUID().uuidString).json")
        try JSONEncoder().encode(JSONValue.object(json)).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try Tokenizer(tokenizerJSON: url)
    }

    func testSpecialTokens() throws {
        let xlmr = try tokenizer("xlmr"), roberta = try tokenizer("roberta")
        // HF keeps the stripped space in the token and (XLM-R) in its offsets; RoBERTa's
        // trim_offsets takes it out of the offsets.
        for (tokenizer, maskOffsets) in [(xlmr, 12..<19), (roberta, 13..<19)] {
            XCTAssertEqual(tokenizer.clsId, 0)
            XCTAssertEqual(tokenizer.sepId, 2)
            XCTAssertEqual(tokenizer.padId, 1)
            XCTAssertEqual(tokenizer.id(of: "<mask>"), tokenizer.maskId)
            // <mask> is one token wherever it is written, and takes the space before it (lstrip).
            let encoding = tokenizer.encode("Paris is the <mask> of France.")
            let at = try XCTUnwrap(encoding.ids.firstIndex(of: tokenizer.maskId))
            XCTAssertEqual(encoding.offsets[at], maskOffsets)
            XCTAssertEqual(encoding.tokens[at], " <mask>")
            XCTAssertEqual(encoding.ids.first, 0)
            XCTAssertEqual(encoding.ids.last, 2)
            XCTAssertEqual(tokenizer.encode("<s></s>", addSpecialTokens: false).ids, [0, 2])
        }
        XCTAssertEqual(xlmr.maskId, 6001)
        XCTAssertEqual(roberta.maskId, 4)
        XCTAssertEqual(xlmr.unkId, 3)
        // XLM-R's pair framing: <s> A </s></s> B </s>, one type id.
        let pair = xlmr.encode("a", pair: "b")
        XCTAssertEqual(pair.ids.filter { $0 == 2 }.count, 3)
        XCTAssertEqual(Set(pair.typeIds), [0])
    }

    func testUnsupportedStagesAreTypedErrors() throws {
        let base = Self.url("roberta-bpe/tokenizer.json")
        let cases: [(String, String, String)] = [
            ("pre_tokenizer", #"{"type":"UnicodeScripts"}"#, "pre-tokenizer"),
            ("normalizer", #"{"type":"ByteLevel"}"#, "ByteLevel"),
            ("normalizer", #"{"type":"Replace","pattern":{"Regex":"\\d+"},"content":" "}"#, "Replace"),
            ("normalizer", #"{"type":"Replace","pattern":{"Regex":"(ab)+|[a-z]"},"content":" "}"#, "Replace"),
            ("post_processor", #"{"type":"Sequence","processors":[{"type":"BertProcessing","sep":["</s>",2],"cls":["<s>",0]},{"type":"BertProcessing","sep":["</s>",2],"cls":["<s>",0]}]}"#, "post-processor"),
            ("decoder", #"{"type":"Replace","pattern":{"Regex":"a+"},"content":""}"#, "decoder"),
            ("model_fields", #"{"dropout":0.1}"#, "dropout"),
            ("model_fields", #"{"continuing_subword_prefix":"@@"}"#, "continuing_subword_prefix"),
            ("model_fields", #"{"type":"WordLevel"}"#, "WordLevel"),
        ]
        for (section, value, mention) in cases {
            let patch = JSONValue.object([section: try JSONDecoder().decode(JSONValue.self, from: Data(value.utf8))])
            XCTAssertThrowsError(try patchedTokenizer(base, patch: patch), "\(section) \(value)") { error in
                guard case let SwiftBERTError.invalidTokenizer(_, reason) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains(mention), reason)
            }
        }
        // A damaged or missing charsmap is refused, not read past its end.
        for charsmap: JSONValue in [.string("AAAA"), .string("not base64!"), .string("/////w=="), .null] {
            let damaged = JSONValue.object(["normalizer": .object(["type": .string("Precompiled"), "precompiled_charsmap": charsmap])])
            XCTAssertThrowsError(try patchedTokenizer(Self.url("xlmr-unigram/tokenizer.json"), patch: damaged)) { error in
                guard case let SwiftBERTError.invalidTokenizer(_, reason) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.contains("precompiled_charsmap"), reason)
            }
        }
    }

    /// Random text (marks, controls, astral scalars, specials, long runs) never traps and gives
    /// consistent encodings on both models.
    func testRandomTextDoesNotTrap() throws {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["<mask>", "<s>", "</s>", " ", "  ", "\u{2581}", "\u{0301}", "\u{200B}", "\u{FEFF}", "ﬁ", "Ａ", "日本", "é",
                      "\t", "\n", "'s", "'ll", "\u{0}", "\u{1F600}", "\u{E000}", "123", "abc", "Ж", "ไทย", "\u{3000}"]
        for tokenizer in [try tokenizer("xlmr"), try tokenizer("roberta")] {
            for _ in 0..<500 {
                var text = ""
                for _ in 0..<Int.random(in: 0...20, using: &generator) {
                    if Bool.random(using: &generator) {
                        text += pieces.randomElement(using: &generator)!
                    } else {
                        text.unicodeScalars.append(Unicode.Scalar(UInt32.random(in: 0...0x2FFFF, using: &generator)) ?? "x")
                    }
                }
                let encoding = tokenizer.encode(text, pair: Bool.random(using: &generator) ? text : nil, maxLength: Int.random(in: 4...40, using: &generator))
                XCTAssertEqual(encoding.ids.count, encoding.offsets.count)
                XCTAssertEqual(encoding.ids.count, encoding.tokens.count)
                XCTAssertLessThanOrEqual(encoding.count, 40)
                let count = text.unicodeScalars.count
                XCTAssertTrue(encoding.offsets.allSatisfy { $0.lowerBound >= 0 && $0.upperBound <= count }, describeLine(text))
                _ = tokenizer.decode(encoding.ids)
            }
        }
    }
}
