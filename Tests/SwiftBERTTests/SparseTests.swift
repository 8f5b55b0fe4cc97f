import Foundation
import XCTest
@testable import SwiftBERT

/// SPLADE pooling (`SpladeHead`, `SparseEmbedder`) on the real splade-tiny against transformers:
/// tools/fixtures/make_sparse_fixtures.py computes max over tokens of log(1 + relu(masked-LM
/// logits)) with AutoModelForMaskedLM, for 25 texts (Fixtures/sparse/splade-tiny.json).
final class SparseTests: XCTestCase {
    struct Reference: Decodable {
        struct Entry: Decodable { let index: Int32; let value: Float }
        struct Text: Decodable { let text: String; let ids: [Int32]; let sparse: [Entry] }
        let texts: [Text]
    }

    static let tolerance: Float = 1e-4

    static func reference() throws -> Reference {
        let url = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/sparse/splade-tiny.json")
        return try JSONDecoder().decode(Reference.self, from: Data(contentsOf: url))
    }

    /// Same non-zero ids as transformers, every weight within 1e-4.
    static func assertMatches(_ found: SparseVector, _ expected: Reference.Text, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(found.indices, expected.sparse.map(\.index), "non-zero ids of \"\(expected.text)\"", file: file, line: line)
        let worst = zip(found.values, expected.sparse.map(\.value)).map { abs($0 - $1) }.max() ?? 0
        XCTAssertLessThanOrEqual(worst, tolerance, "\"\(expected.text)\": largest difference \(worst)", file: file, line: line)
    }

    func testSpladeOfSpladeTinyMatchesTransformers() throws {
        let reference = try Self.reference()
        XCTAssertEqual(reference.texts.count, 25)
        let embedder = try SparseEmbedder(folder: convertedModel("splade-tiny"), threads: 2)
        let texts = reference.texts.map(\.text)
        for (text, expected) in zip(texts, reference.texts) {
            XCTAssertEqual(embedder.tokenizer.encode(text).ids, expected.ids, "token ids of \"\(text)\"")
        }
        // One batch of all texts, and one text at a time: the same vectors.
        let batched = try embedder.embed(texts).vectors
        let single = try texts.map { try embedder.embed([$0], batchSize: 1).vectors[0] }
        for (vector, expected) in zip(batched, reference.texts) { Self.assertMatches(vector, expected) }
        XCTAssertEqual(batched, single)
    }

    /// Every head says which checkpoint to use when its weights are missing.
    func testHeadsWithoutWeightsSayWhatToUse() throws {
        let encoder = try loadEncoder(folder: convertedModel("all-MiniLM-L6-v2"), threads: 1)
        XCTAssertEqual(encoder.heads, [.sentenceEmbedding, .tokenEmbeddings])
        XCTAssertThrowsError(try SpladeHead(encoder)) { XCTAssertTrue("\($0)".contains("splade-tiny"), "\($0)") }
        XCTAssertThrowsError(try SequenceClassificationHead(encoder)) { XCTAssertTrue("\($0)".contains("*ForSequenceClassification"), "\($0)") }
        XCTAssertThrowsError(try TokenClassificationHead(encoder)) { XCTAssertTrue("\($0)".contains("*ForTokenClassification"), "\($0)") }
        XCTAssertThrowsError(try MaskedLMHead(encoder, maskId: 103)) { XCTAssertTrue("\($0)".contains("masked-LM"), "\($0)") }
        let splade = try loadEncoder(folder: convertedModel("splade-tiny"), threads: 1)
        XCTAssertEqual(splade.heads, [.sentenceEmbedding, .maskedLM, .sparseEmbedding, .tokenEmbeddings])
    }
}

/// `bert embed --sparse` on splade-tiny: transformers' SPLADE weights, one JSON line per text.
final class SparseCLITests: CLITestCase {
    func testEmbedSparseWritesTheSPLADEWeightsOfTransformers() throws {
        let reference = try SparseTests.reference()
        let result = try bert(["embed", "--model", "splade-tiny", "--sparse", "--batch-size", "7"] + reference.texts.map(\.text))
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, reference.texts.count)
        for (i, (line, expected)) in zip(lines, reference.texts).enumerated() {
            let record = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            XCTAssertEqual(record["index"] as? Int, i)
            let entries = try XCTUnwrap(record["sparse"] as? [[String: Any]])
            SparseTests.assertMatches(SparseVector(indices: entries.map { Int32($0["index"] as? Int ?? -1) },
                                                   values: entries.map { ($0["value"] as? NSNumber)?.floatValue ?? .nan }), expected)
        }
        // A model without a masked-LM head, and a format other than jsonl: refused with what to do.
        let dense = try bert(["embed", "--sparse", "a text"])
        XCTAssertEqual(dense.status, 65, dense.stderr)
        XCTAssertTrue(dense.stderr.contains("splade-tiny"), dense.stderr)
        XCTAssertEqual(try bert(["embed", "--model", "splade-tiny", "--sparse", "--format", "npy", "x"]).status, 64)
    }
}
