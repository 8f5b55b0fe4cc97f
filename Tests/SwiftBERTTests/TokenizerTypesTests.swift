import Foundation
import XCTest
@testable import SwiftBERT

/// Every normalizer, pre-tokenizer, post-processor and decoder type SwiftBERT reads (and the
/// Sequence of each), against HF `tokenizers` on Fixtures/tokenizer-types/variants.jsonl
/// (tools/fixtures/make_tokenizer_types_fixtures.py), and early-stopping truncation against
/// tokenising whole then truncating.
final class TokenizerTypesTests: XCTestCase {
    /// Variants whose type SwiftBERT refuses: loading must fail naming it.
    static let refused: [String: String] = [
        "wp_unicode_scripts": "UnicodeScripts",
    ]

    struct Variant {
        let name: String
        let json: Data
        let digests: [String]
        let records: [Int: [Any]]
        let pairs: [[Any]]
    }

    static func fixtures(_ path: String) -> URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent(path)
    }

    nonisolated(unsafe) static let loaded: (texts: [String], pairs: [(Int, Int)], variants: [Variant])? = {
        guard let text = try? String(contentsOf: fixtures("tokenizer-types/variants.jsonl"), encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        // JSONDecoder for the texts: JSONSerialization drops a leading U+FEFF from a string.
        struct Header: Decodable { let texts: [String]; let pairs: [[Int]] }
        guard let first = text.split(separator: "\n").first,
              let header = try? JSONDecoder().decode(Header.self, from: Data(first.utf8)) else { return nil }
        let texts = header.texts, pairs = header.pairs
        var bases: [String: [String: Any]] = [:]
        for (name, path) in [("wordpiece", "tokenizer-types/wordpiece/tokenizer.json"),
                             ("xlmr-unigram", "multilingual/xlmr-unigram/tokenizer.json"),
                             ("roberta-bpe", "multilingual/roberta-bpe/tokenizer.json")] {
            guard let data = try? Data(contentsOf: fixtures(path)),
                  let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            bases[name] = json
        }
        let charsmap = ((bases["xlmr-unigram"]?["normalizer"] as? [String: Any])?["normalizers"] as? [[String: Any]])?
            .first?["precompiled_charsmap"]
        var variants: [Variant] = []
        for line in lines.dropFirst() {
            guard let name = line["variant"] as? String, let baseName = line["base"] as? String, var json = bases[baseName],
                  let patch = line["patch"] as? [String: Any], let digests = line["digests"] as? String else { return nil }
            for (key, value) in patch {
                // The fixture names xlmr-unigram's charsmap instead of repeating it.
                if var section = value as? [String: Any], section["precompiled_charsmap"] as? String == "$base" {
                    section["precompiled_charsmap"] = charsmap
                    json[key] = section
                } else {
                    json[key] = value
                }
            }
            guard let data = try? JSONSerialization.data(withJSONObject: json) else { return nil }
            var records: [Int: [Any]] = [:]
            for (key, value) in line["records"] as? [String: [Any]] ?? [:] { records[Int(key)!] = value }
            let hex = Array(digests)
            variants.append(Variant(name: name, json: data, digests: stride(from: 0, to: hex.count, by: 8).map { String(hex[$0..<$0 + 8]) },
                                    records: records, pairs: line["pairs"] as? [[Any]] ?? []))
        }
        return (texts, pairs.map { ($0[0], $0[1]) }, variants)
    }()

    private func fixture() throws -> (texts: [String], pairs: [(Int, Int)], variants: [Variant]) {
        try XCTUnwrap(Self.loaded, "Fixtures/tokenizer-types/variants.jsonl did not load")
    }

    private func tokenizer(_ variant: Variant) throws -> Tokenizer {
        let path = "variant \(variant.name)"
        return try Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: variant.json, path: path), path: path)
    }

    /// FNV-1a (32 bits) of "ids;offsets;decoded", as the fixture script writes it.
    static func digest(_ encoding: Encoding, decoded: String) -> String {
        let flat = encoding.offsets.flatMap { [$0.lowerBound, $0.upperBound] }
        let text = encoding.ids.map(String.init).joined(separator: ",") + ";" + flat.map(String.init).joined(separator: ",") + ";" + decoded
        var hash: UInt32 = 0x811C9DC5
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x01000193 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    func testEveryVariantMatchesHuggingFace() throws {
        let (texts, pairs, variants) = try fixture()
        XCTAssertGreaterThanOrEqual(variants.count, 40)
        var checked = 0
        for variant in variants {
            if let refusedType = Self.refused[variant.name] {
                XCTAssertThrowsError(try tokenizer(variant), variant.name) { error in
                    XCTAssertTrue("\(error)".contains(refusedType), "\(variant.name): \(error)")
                }
                continue
            }
            let tokenizer: Tokenizer
            do { tokenizer = try self.tokenizer(variant) } catch {
                XCTFail("\(variant.name) does not load: \(error)")
                continue
            }
            XCTAssertEqual(variant.digests.count, texts.count, variant.name)
            var failures: [String] = []
            for (i, text) in texts.enumerated() {
                let encoding = tokenizer.encode(text)
                let decoded = tokenizer.decode(encoding.ids)
                guard Self.digest(encoding, decoded: decoded) != variant.digests[i] else { continue }
                var problem = "\(describeLine(text)): ids \(encoding.ids) offsets \(encoding.offsets.map { [$0.lowerBound, $0.upperBound] }) decoded \(describeLine(decoded))\n    tokens \(encoding.tokens)"
                if let expected = variant.records[i] {
                    problem += "\n    HF ids \(expected[0]) offsets \(expected[1]) decoded \(describeLine(expected[2] as? String ?? ""))"
                }
                failures.append(problem)
            }
            for (k, expected) in variant.pairs.enumerated() {
                let (a, b) = pairs[k]
                let encoding = tokenizer.encode(texts[a], pair: texts[b])
                let ids = (expected[0] as? [Int] ?? []).map(Int32.init)
                let offsets = offsetRanges(expected[1] as? [Int] ?? [])
                let typeIds = (expected[2] as? [Int] ?? []).map(Int32.init)
                if encoding.ids != ids || encoding.offsets != offsets || encoding.typeIds != typeIds {
                    failures.append("pair \(k): ids \(encoding.ids) type ids \(encoding.typeIds) offsets \(encoding.offsets)\n    HF \(ids) \(typeIds) \(offsets)")
                }
            }
            XCTAssertEqual(failures.count, 0, "\(variant.name): \(failures.count) of \(texts.count + variant.pairs.count) differ from HF; first:\n" + failures.prefix(4).joined(separator: "\n"))
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 35)
    }

    /// Stopping at the truncation point gives what tokenising the whole text then truncating gives,
    /// on every fixture tokenizer, for single lines and for long texts cut into many small chunks.
    func testEarlyStoppingTruncationIsExact() throws {
        let (texts, _, variants) = try fixture()
        var tokenizers: [(String, Tokenizer)] = []
        for variant in variants where Self.refused[variant.name] == nil { tokenizers.append((variant.name, try tokenizer(variant))) }
        tokenizers.append(("all-MiniLM-L6-v2", try TokenizerFixtures.tokenizer("all-MiniLM-L6-v2")))
        // Long texts: the lines joined, with runs of spaces, added tokens and CJK between them.
        let joined = texts.joined(separator: " ")
        let long = [joined, texts.reversed().joined(separator: "  x "), String(joined.prefix(3000)) + " [MASK] <mask> 日本語 " + joined]
        var compared = 0
        var differences: [String] = []
        for (name, tokenizer) in tokenizers {
            for (k, text) in texts.enumerated() where k % 3 == 0 {
                for maxLength in [0, 2, 3, 5, 9, 17] {
                    let early = tokenizer.encode(text, maxLength: maxLength, stopsEarly: true, chunkLength: 4)
                    let whole = tokenizer.encode(text, maxLength: maxLength, stopsEarly: false)
                    compared += 1
                    if early != whole { differences.append("\(name) max \(maxLength) \(describeLine(text)):\n  early \(early.ids) \(early.offsets)\n  whole \(whole.ids) \(whole.offsets)") }
                }
            }
            for text in long {
                for (maxLength, chunk) in [(3, 1), (16, 7), (100, 64), (513, 200), (2000, 1 << 13), (100_000, 512)] {
                    let early = tokenizer.encode(text, maxLength: maxLength, stopsEarly: true, chunkLength: chunk)
                    let whole = tokenizer.encode(text, maxLength: maxLength, stopsEarly: false)
                    compared += 1
                    if early != whole {
                        let first = zip(early.ids, whole.ids).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(early.count, whole.count)
                        differences.append("\(name) max \(maxLength) chunk \(chunk) long text: first difference at token \(first) of \(early.count)/\(whole.count) truncated \(early.wasTruncated)/\(whole.wasTruncated)")
                    }
                }
            }
        }
        XCTAssertEqual(differences.count, 0, "\(differences.count) of \(compared) differ; first:\n" + differences.prefix(6).joined(separator: "\n"))
        XCTAssertGreaterThan(compared, 5000)
    }

    /// The XLM-R layout transformers 5.x writes loads and tokenises as the older one on plain text.
    func testTransformers5XLMRLoads() throws {
        let (_, _, variants) = try fixture()
        let v5 = try XCTUnwrap(variants.first { $0.name == "xlmr_v5" })
        let tokenizer = try tokenizer(v5)
        XCTAssertEqual(tokenizer.tokenize("Hello  world").first?.hasPrefix("▁"), true)
    }

    /// HF's Whitespace (Oniguruma's \\w and \\s), Punctuation and Digits on every code point.
    func testScalarClassesOnEveryCodePoint() throws {
        struct Classes: Decodable {
            let whitespace_word, whitespace_space, punctuation, numeric: [[UInt32]]
        }
        let classes = try JSONDecoder().decode(Classes.self, from: Data(contentsOf: Self.fixtures("tokenizer-types/unicode-classes.json")))
        func set(_ ranges: [[UInt32]]) -> Set<UInt32> { Set(ranges.flatMap { $0[0]...$0[1] }) }
        let word = set(classes.whitespace_word), space = set(classes.whitespace_space)
        let punctuation = set(classes.punctuation), numeric = set(classes.numeric)
        var differences: [String: [String]] = [:]
        func hex(_ value: UInt32) -> String { "U+" + String(value, radix: 16, uppercase: true) }
        for value in UInt32(0)...0x10FFFF where !(0xD800...0xDFFF).contains(value) {
            let expected: PreTokenizer.WordClass = word.contains(value) ? .word : space.contains(value) ? .space : .other
            if PreTokenizer.WordClass(value) != expected { differences["Whitespace", default: []].append(hex(value)) }
            if PatternSplit.ScalarTest.punctuation.matches(value) != punctuation.contains(value) {
                differences["Punctuation", default: []].append(hex(value))
            }
            if PatternSplit.ScalarTest.numeric.matches(value) != numeric.contains(value) {
                differences["Digits", default: []].append(hex(value))
            }
        }
        XCTAssertEqual(differences.count, 0, differences.map { "\($0.key): \($0.value.count) code points differ from HF, first \($0.value.prefix(12))" }.joined(separator: "\n"))
    }

    func testUnsupportedTypesAreNamed() throws {
        func load(_ sections: String) -> String {
            let json = #"{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "a": 3}}, "#
                + sections + #", "post_processor": {"type": "BertProcessing", "cls": ["[CLS]", 1], "sep": ["[SEP]", 2]}}"#
            do {
                _ = try Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: Data(json.utf8), path: "t"), path: "t")
                return "loaded"
            } catch { return "\(error)" }
        }
        XCTAssertTrue(load(#""pre_tokenizer": {"type": "UnicodeScripts"}"#).contains("UnicodeScripts"))
        XCTAssertTrue(load(#""pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Nope"}]}"#).contains("Nope"))
        XCTAssertTrue(load(#""pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(?<=a)b"}, "behavior": "Isolated", "invert": false}"#).contains("(?<=a)b"))
        XCTAssertTrue(load(#""pre_tokenizer": {"type": "Split", "pattern": {"String": "-"}, "behavior": "Sideways", "invert": false}"#).contains("Sideways"))
        XCTAssertTrue(load(#""normalizer": {"type": "ByteLevel"}"#).contains("ByteLevel"))
        for form in ["NFC", "NFKC", "NFKD"] { XCTAssertEqual(load(#""normalizer": {"type": "\#(form)"}"#), "loaded", form) }
        XCTAssertTrue(load(#""decoder": {"type": "Nope"}"#).contains("Nope"))
        XCTAssertEqual(load(#""pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}]}"#), "loaded")
    }

    /// A decoder's tokenizer has no [CLS]/<s>: its post-processor appends an EOS, or nothing. It
    /// loads (it was refused as "no [CLS]/<s> or [SEP]/</s> token"), framed by the post-processor
    /// alone, with -1 for the framing tokens it lacks.
    func testTokenizersWithoutClsFramingLoad() throws {
        let model = #"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3}, "merges": ["a b"]}, "#
            + #""pre_tokenizer": {"type": "WhitespaceSplit"}, "#
        let eosOnly = model + #""post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}], "#
            + #""pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}], "#
            + #""special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [3], "tokens": ["<|endoftext|>"]}}}}"#
        let withEOS = try Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: Data(eosOnly.utf8), path: "t"), path: "t")
        XCTAssertEqual(withEOS.encode("ab a").ids, [2, 0, 3])
        XCTAssertEqual(withEOS.encode("ab a", maxLength: 2).ids, [2, 3], "truncation keeps room for the EOS")
        XCTAssertEqual([withEOS.clsId, withEOS.sepId], [-1, 3])
        let bare = try Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: Data((model + #""post_processor": null}"#).utf8), path: "t"), path: "t")
        XCTAssertEqual(bare.encode("ab b").ids, [2, 1])
        XCTAssertEqual([bare.clsId, bare.sepId], [-1, -1])
    }
}
