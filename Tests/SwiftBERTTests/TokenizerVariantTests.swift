import XCTest
@testable import SwiftBERT

/// MiniLM's tokenizer.json with sections replaced (normalizer flags, no pre-tokenizer,
/// added tokens with lstrip/rstrip/single_word/normalized, BertProcessing, left truncation...)
/// against HF on the same variants (Fixtures/tokenizer/variants.jsonl). Read with JSONDecoder:
/// JSONSerialization drops a leading U+FEFF from strings on Linux.
final class TokenizerVariantTests: XCTestCase {
    func testVariantsMatchHuggingFace() throws {
        let base = try TokenizerFixtures.modelFolder("all-MiniLM-L6-v2").appendingPathComponent("tokenizer.json")
        let lines = try String(contentsOf: TokenizerFixtures.url("variants.jsonl"), encoding: .utf8).split(separator: "\n")
        XCTAssertGreaterThanOrEqual(lines.count, 12)
        for line in lines {
            let variant = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
            let name = try XCTUnwrap(variant["variant"]?.string)
            let tokenizer = try patchedTokenizer(base, patch: try XCTUnwrap(variant["patch"]))
            for record in try XCTUnwrap(variant["records"]?.array) {
                try check(tokenizer, record, variant: name)
            }
        }
    }

    private func check(_ tokenizer: Tokenizer, _ record: JSONValue, variant: String) throws {
        let text = try XCTUnwrap(record["text"]?.string)
        let got = tokenizer.encode(text, pair: record["pair"]?.string, maxLength: record["max_length"]?.int)
        let what = "\(variant): \(describeLine(text))"
        XCTAssertEqual(got.ids, record["ids"]?.array?.compactMap(\.int).map(Int32.init), what)
        XCTAssertEqual(got.offsets, offsetRanges(record["offsets"]?.array?.compactMap(\.int) ?? []), what)
        if let tokens = record["tokens"]?.array {
            XCTAssertEqual(got.tokens, tokens.compactMap(\.string), what)
        }
        if let decoded = record["decoded"]?.string {
            XCTAssertEqual(tokenizer.decode(got.ids), decoded, what)
        }
    }

    /// Writes base tokenizer.json with the patch's top-level sections replaced to a temporary file.
    private func patchedTokenizer(_ base: URL, patch: JSONValue) throws -> Tokenizer {
        guard case var .object(json) = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: base)),
              case let .object(changes) = patch, case var .object(model)? = json["model"] else {
            XCTFail("unreadable tokenizer.json or patch")
            throw SwiftBERTError.invalidInput(reason: "unreadable tokenizer.json or patch")
        }
        for (key, value) in changes {
            if key == "max_input_chars_per_word" { model[key] = value } else { json[key] = value }
        }
        json["model"] = .object(model)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("variant-\(UUID().uuidString).json")
        try JSONEncoder().encode(JSONValue.object(json)).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try Tokenizer(tokenizerJSON: url)
    }
}
