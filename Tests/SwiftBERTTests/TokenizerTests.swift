import XCTest
@testable import SwiftBERT

/// Every id and every offset equal to Hugging Face `tokenizers` over the whole fixture corpus
/// (Fixtures/tokenizer/corpus.jsonl, pairs.jsonl; see tools/fixtures/make_tokenizer_fixtures.py).
final class TokenizerTests: XCTestCase {
    private func corpus() throws -> [CorpusRecord] {
        let records = try TokenizerFixtures.records("corpus.jsonl", as: CorpusRecord.self) { $0.hasPrefix("{\"header\"") }
        XCTAssertGreaterThan(records.count, 2000)
        return records
    }

    /// Compares one tokenizer with HF on every line; reports the first mismatches in full.
    private func checkCorpus(_ name: String, expected: (CorpusRecord) -> CorpusRecord.Expected) throws {
        let tokenizer = try TokenizerFixtures.tokenizer(name)
        var mismatches = 0
        let records = try corpus()
        for (index, record) in records.enumerated() {
            let want = expected(record)
            let got = tokenizer.encode(record.text)
            guard got.ids != want.ids || got.offsets != offsetRanges(want.offsets) else { continue }
            mismatches += 1
            if mismatches <= 10 {
                XCTFail("""
                    \(name), corpus line \(index) (\(record.source)): \(describeLine(record.text))
                      expected: \(zip(want.ids.map { tokenizer.token(of: $0) ?? "?" }, offsetRanges(want.offsets)).map { "\($0)\($1)" })
                      actual:   \(zip(got.tokens, got.offsets).map { "\($0)\($1)" })
                    """)
            }
        }
        XCTAssertEqual(mismatches, 0, "\(name): \(mismatches) of \(records.count) lines differ from HF")
    }

    func testMiniLMTokenizerJSONMatchesHuggingFace() throws {
        try checkCorpus("all-MiniLM-L6-v2") { .init(ids: $0.ids, offsets: $0.offsets) }
    }

    func testSpladeTokenizerJSONMatchesHuggingFace() throws {
        try checkCorpus("splade-tiny") { $0.splade ?? .init(ids: $0.ids, offsets: $0.offsets) }
    }

    /// MiniLM's vocab.txt with Tokenizer defaults gives what its tokenizer.json gives.
    func testMiniLMVocabTXTMatchesHuggingFace() throws {
        try checkCorpus("all-MiniLM-L6-v2/vocab.txt") { .init(ids: $0.ids, offsets: $0.offsets) }
    }

    func testDecodeMatchesHuggingFace() throws {
        let tokenizer = try TokenizerFixtures.tokenizer("all-MiniLM-L6-v2")
        var checked = 0
        for record in try corpus() {
            guard let decoded = record.decoded, let withSpecials = record.decoded_with_specials else { continue }
            XCTAssertEqual(tokenizer.decode(record.ids), decoded, describeLine(record.text))
            XCTAssertEqual(tokenizer.decode(record.ids, skipSpecialTokens: false), withSpecials, describeLine(record.text))
            checked += 1
        }
        XCTAssertGreaterThan(checked, 400)
    }

    // MARK: - Pairs, truncation, batches

    private struct PairRecord: Decodable {
        let text: String?
        let pair: String?
        let max_length: Int?
        let add_special_tokens: Bool?
        let batch: [String]?
        let ids: AnyIds
        let type_ids: AnyIds
        let offsets: [Int]?
        let attention_mask: [[Int32]]?
        let truncated: Bool?
    }

    /// ids of one encoding, or of each encoding of a batch.
    private enum AnyIds: Decodable {
        case one([Int32]), many([[Int32]])
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let many = try? container.decode([[Int32]].self) { self = .many(many) } else { self = .one(try container.decode([Int32].self)) }
        }
        var one: [Int32] { if case let .one(ids) = self { return ids }; return [] }
        var many: [[Int32]] { if case let .many(ids) = self { return ids }; return [] }
    }

    func testPairsTruncationAndBatchesMatchHuggingFace() throws {
        let tokenizer = try TokenizerFixtures.tokenizer("all-MiniLM-L6-v2")
        var pairs = 0, batches = 0
        for record in try TokenizerFixtures.records("pairs.jsonl", as: PairRecord.self) {
            if let batch = record.batch {
                let encodings = tokenizer.encodeBatch(batch)
                XCTAssertEqual(encodings.map(\.ids), record.ids.many, "batch \(batch.map { describeLine($0, limit: 30) })")
                XCTAssertEqual(encodings.map(\.typeIds), record.type_ids.many)
                XCTAssertEqual(encodings.map(\.attentionMask), record.attention_mask)
                batches += 1
                continue
            }
            let text = try XCTUnwrap(record.text)
            let got = tokenizer.encode(text, pair: record.pair, maxLength: record.max_length,
                                       addSpecialTokens: record.add_special_tokens ?? true)
            let what = "\(describeLine(text, limit: 40)) | \(record.pair.map { describeLine($0, limit: 40) } ?? "-") max_length \(record.max_length.map(String.init) ?? "-") specials \(record.add_special_tokens ?? true)"
            XCTAssertEqual(got.ids, record.ids.one, what)
            XCTAssertEqual(got.typeIds, record.type_ids.one, what)
            XCTAssertEqual(got.offsets, offsetRanges(record.offsets ?? []), what)
            XCTAssertEqual(got.wasTruncated, record.truncated, what)
            XCTAssertEqual(got.attentionMask, Array(repeating: 1, count: got.count), what)
            pairs += 1
        }
        XCTAssertGreaterThan(pairs, 50)
        XCTAssertGreaterThan(batches, 5)
    }
}
