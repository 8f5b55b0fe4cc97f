import Foundation
import XCTest
@testable import SwiftBERT

/// Vocabularies holding canonically equivalent but distinct pieces ("\u{0622}" and
/// "\u{0627}\u{0653}", "\u{09DF}" and "\u{09AF}\u{09BC}", "K" and the Kelvin sign): HF compares
/// pieces byte by byte, so each keeps its own id, where Swift's String == would make them one.
/// HF's output: Fixtures/canonical/, tools/fixtures/make_canonical_tokenizer_fixtures.py.
final class TokenizerCanonicalTests: XCTestCase {
    static func url(_ file: String) -> URL {
        Bundle.module.url(forResource: "Fixtures/canonical", withExtension: nil)!.appendingPathComponent(file)
    }

    /// Strings are compared as scalars: XCTAssertEqual on Strings would pass an equivalent one.
    static func scalars(_ text: String) -> [UInt32] { text.unicodeScalars.map(\.value) }

    private func check(_ tokenizer: Tokenizer, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let fixture = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: Self.url("expected.json")))
        let texts = try XCTUnwrap(fixture["texts"]?.array).compactMap(\.string)
        let expected = try XCTUnwrap(fixture["tokenizers"]?[name])
        let vocabulary = try XCTUnwrap(expected["vocab"]?.array)
        XCTAssertEqual(tokenizer.vocabularySize, vocabulary.count, name, file: file, line: line)
        for entry in vocabulary {
            let piece = try XCTUnwrap(entry.array?.first?.string), id = Int32(try XCTUnwrap(entry.array?.last?.int))
            XCTAssertEqual(tokenizer.id(of: piece), id, "\(name): id of \(describeLine(piece))", file: file, line: line)
            XCTAssertEqual(tokenizer.token(of: id).map(Self.scalars), Self.scalars(piece), "\(name): token \(id)", file: file, line: line)
        }
        let encodings = try XCTUnwrap(expected["encodings"]?.array)
        XCTAssertEqual(encodings.count, texts.count)
        for (text, record) in zip(texts, encodings) {
            let got = tokenizer.encode(text)
            let what = "\(name): \(describeLine(text))"
            XCTAssertEqual(got.ids, (record["ids"]?.array ?? []).compactMap(\.int).map(Int32.init), what, file: file, line: line)
            XCTAssertEqual(got.tokens.map(Self.scalars), (record["tokens"]?.array ?? []).compactMap(\.string).map(Self.scalars), what, file: file, line: line)
            XCTAssertEqual(got.offsets.flatMap { [$0.lowerBound, $0.upperBound] }, (record["offsets"]?.array ?? []).compactMap(\.int), what, file: file, line: line)
            XCTAssertEqual(Self.scalars(tokenizer.decode(got.ids)), Self.scalars(record["decoded"]?.string ?? ""), what, file: file, line: line)
        }
    }

    /// EmbeddingGemma's pipeline: BPE with byte fallback, merges building both forms, added tokens
    /// in both forms, and an added "\u{00F1}" where the vocabulary has "n\u{0303}".
    func testBPE() throws {
        try check(Tokenizer(tokenizerJSON: Self.url("bpe/tokenizer.json")), "bpe")
    }

    func testWordPiece() throws {
        try check(Tokenizer(tokenizerJSON: Self.url("wordpiece/tokenizer.json")), "wordpiece")
    }

    func testWordPieceVocabTXT() throws {
        try check(Tokenizer(vocabTXT: Self.url("wordpiece/vocab.txt"), lowercase: false), "wordpiece")
    }

    /// Equivalent pieces with different scores; <mask> takes the id after the last piece.
    func testUnigram() throws {
        try check(Tokenizer(tokenizerJSON: Self.url("unigram/tokenizer.json")), "unigram")
    }

    /// The key type itself: equivalent strings are different keys, equal ones the same.
    func testExactStringKeys() {
        let keys: [String] = ["\u{0622}", "\u{0627}\u{0653}", "\u{212A}", "K", "\u{00C5}", "\u{212B}", "A\u{030A}", ""]
        XCTAssertEqual("\u{0622}", "\u{0627}\u{0653}")  // what Swift's String == says
        let exact = keys.map { ExactString($0) }
        XCTAssertEqual(Set(exact).count, keys.count)
        XCTAssertEqual(Set(exact + keys.map { ExactString(String($0.unicodeScalars)) }).count, keys.count)
        var vocabulary: [ExactString: Int] = [:]
        for (id, key) in keys.enumerated() { vocabulary[ExactString(key)] = id }
        for (id, key) in keys.enumerated() { XCTAssertEqual(vocabulary[ExactString(key)], id) }
    }
}
