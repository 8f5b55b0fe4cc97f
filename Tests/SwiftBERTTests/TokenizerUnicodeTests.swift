import XCTest
@testable import SwiftBERT

/// Each normalizer step and the pre-tokenizer against HF on every Unicode code point
/// (Fixtures/tokenizer/unicode.json), so a Unicode-version difference between Swift and
/// HF's Rust crates shows up here, not as a rare wrong id.
final class TokenizerUnicodeTests: XCTestCase {
    private struct Expected: Decodable {
        let clean_text_removes: [[UInt32]]
        let clean_text_to_space: [[UInt32]]
        let chinese: [[UInt32]]
        let pretokenizer_whitespace: [[UInt32]]
        let pretokenizer_punctuation: [[UInt32]]
        let strip_accents: [String: String]
        let lowercase: [String: String]
        let canonical_ordering: Probes
    }

    /// canonical_ordering's probes, every one: decoded as a [String: String], canonically
    /// equivalent inputs were one key, and 909 of the 2,734 never ran. The decoder's key strategy
    /// renames each input to the hex of its UTF-8 (the library's `HexKey`) before the keys are gathered.
    private struct Probes: Decodable {
        var pairs: [(input: [UInt32], want: String)] = []
        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: HexKey.self)
            for key in container.allKeys {
                pairs.append((key.token!.unicodeScalars.map(\.value), try container.decode(String.self, forKey: key)))
            }
        }
    }

    private static let expected: Expected = {
        let data = try! Data(contentsOf: TokenizerFixtures.url("unicode.json"))
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            path.count == 2 && path[0].stringValue == "canonical_ordering" ? HexKey.hex(path[1].stringValue) : path[path.count - 1]
        }
        return try! decoder.decode(Expected.self, from: data)
    }()

    /// Every scalar value (surrogates excluded).
    private static let allScalars: [UInt32] = (0...0x10FFFF).filter { !(0xD800...0xDFFF).contains($0) }

    private func set(_ ranges: [[UInt32]]) -> Set<UInt32> {
        Set(ranges.flatMap { $0[0]...$0[1] })
    }

    private func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    /// {"C0": "A", ...} as scalar → scalars.
    private func scalarMap(_ map: [String: String]) -> [UInt32: [UInt32]] {
        Dictionary(uniqueKeysWithValues: map.map { (UInt32($0.key, radix: 16)!, scalars($0.value)) })
    }

    private func hex(_ value: UInt32) -> String { "U+" + String(value, radix: 16, uppercase: true) }

    /// Normalizes "x c x c x …" (one "x" before each scalar keeps marks from reordering
    /// across them) and compares, per scalar, the output that came from it (found by its
    /// span) with `expected`, which returns nil when HF leaves the scalar as it is.
    private func compare(_ step: String, _ normalizer: BertNormalizer, expected: (UInt32) -> [UInt32]?) {
        var input: [UInt32] = []
        input.reserveCapacity(2 * Self.allScalars.count)
        for value in Self.allScalars { input += [0x78, value] }
        var out = NormalizedText()
        var scratch = NormalizerScratch()
        input.withUnsafeBufferPointer { normalizer.normalize($0, 0..<$0.count, into: &out, scratch: &scratch) }
        var differences: [String] = []
        var cursor = 0
        for (k, value) in Self.allScalars.enumerated() {
            let index = Int32(2 * k + 1)
            while cursor < out.spans.count && out.spans[cursor].start < index { cursor += 1 }
            let begin = cursor
            while cursor < out.spans.count && out.spans[cursor].start == index { cursor += 1 }
            let got = out.scalars[begin..<cursor]
            let want = expected(value)
            if want.map({ !got.elementsEqual($0) }) ?? (got.count != 1 || got.first != value) {
                differences.append("\(hex(value)): HF \((want ?? [value]).map(hex)) Swift \(got.map(hex))")
            }
        }
        XCTAssertEqual(differences.count, 0, "\(step) differs from HF on \(differences.count) code points: \(differences.prefix(20))")
    }

    func testCleanTextOnEveryCodePoint() {
        let removed = set(Self.expected.clean_text_removes), toSpace = set(Self.expected.clean_text_to_space)
        compare("clean_text", BertNormalizer(cleanText: true, handleChineseChars: false, stripAccents: false, lowercase: false)) {
            removed.contains($0) ? [] : toSpace.contains($0) ? [0x20] : nil
        }
    }

    func testStripAccentsOnEveryCodePoint() {
        let map = scalarMap(Self.expected.strip_accents)
        compare("strip_accents", BertNormalizer(cleanText: false, handleChineseChars: false, stripAccents: true, lowercase: false)) {
            map[$0]
        }
    }

    func testLowercaseOnEveryCodePoint() {
        let map = scalarMap(Self.expected.lowercase)
        compare("lowercase", BertNormalizer(cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: true)) {
            map[$0]
        }
    }

    func testChineseCharactersOnEveryCodePoint() {
        let chinese = set(Self.expected.chinese)
        let swift = Set(Self.allScalars.filter { UnicodeData.traits($0).contains(.chinese) })
        XCTAssertEqual(swift.symmetricDifference(chinese).sorted().prefix(20).map(hex), [])
        // And the normalizer puts the spaces where HF does.
        let normalizer = BertNormalizer(cleanText: false, handleChineseChars: true, stripAccents: false, lowercase: false)
        var out = NormalizedText(), scratch = NormalizerScratch()
        let input = scalars("a日本b\u{20000}c\u{2B820}")
        input.withUnsafeBufferPointer { normalizer.normalize($0, 0..<$0.count, into: &out, scratch: &scratch) }
        XCTAssertEqual(out.scalars, scalars("a 日  本 b \u{20000} c\u{2B820}"))
    }

    func testPreTokenizerOnEveryCodePoint() {
        let whitespace = set(Self.expected.pretokenizer_whitespace), punctuation = set(Self.expected.pretokenizer_punctuation)
        var differences: [String] = []
        for value in Self.allScalars {
            var words = 0
            [0x78, value, 0x78].withUnsafeBufferPointer { BertPreTokenizer.forEachWord($0, 0..<3) { _ in words += 1 } }
            let want = whitespace.contains(value) ? 2 : punctuation.contains(value) ? 3 : 1
            if words != want { differences.append("\(hex(value)): HF \(want) words, Swift \(words)") }
        }
        XCTAssertEqual(differences.count, 0, "pre-tokenizer differs on: \(differences.prefix(20))")
    }

    /// Combining marks next to musical-symbol stems: NFD's canonical ordering, with HF's
    /// Unicode 9.0 combining classes.
    func testCanonicalOrderingMatchesHuggingFace() {
        let normalizer = BertNormalizer(cleanText: false, handleChineseChars: false, stripAccents: true, lowercase: false)
        XCTAssertEqual(Self.expected.canonical_ordering.pairs.count, 2734)
        for (scalars, want) in Self.expected.canonical_ordering.pairs {
            var out = NormalizedText(), scratch = NormalizerScratch()
            scalars.withUnsafeBufferPointer { normalizer.normalize($0, 0..<$0.count, into: &out, scratch: &scratch) }
            XCTAssertEqual(out.scalars.map(hex), self.scalars(want).map(hex), "input \(scalars.map(hex))")
        }
    }
}
