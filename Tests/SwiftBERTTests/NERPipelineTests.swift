import Foundation
import XCTest
@testable import SwiftBERT

/// `TokenClassifier` against transformers' token-classification pipeline for every tokenizer kind
/// and aggregation strategy (Fixtures/ner-pipeline.json, tools/fixtures/make_ner_pipeline_fixtures.py):
/// WordPiece BERT and DistilBERT, DeBERTa-v3's Unigram, ModernBERT's byte-level BPE, on texts with
/// words of several tokens, special tokens written in the text, several scripts and odd spaces.
///
/// Two differences were found by fuzzing against the pipeline (tools/fuzz/ner_differential.py):
/// - Unigram and byte-level BPE tokenizers mark word starts, not continuations, so the pipeline
///   tells sub-words by the spaces around them; SwiftBERT used WordPiece's length rule for every
///   kind, and DeBERTa's "first", "average" and "max" cut words into tokens ("R", "ich", "ar", "d").
/// - The pipeline skips only the tokens the template added; SwiftBERT also skipped a [MASK] or
///   [PAD] written in the text.
final class NERPipelineTests: XCTestCase {
    /// Read with JSONDecoder: JSONSerialization on Linux drops the U+FEFF of a word in it.
    nonisolated(unsafe) static let reference: [String: Any] = {
        let url = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/ner-pipeline.json")
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url)) else { return [:] }
        return plain(value) as? [String: Any] ?? [:]
    }()

    /// A JSONValue as JSONSerialization would give it: numbers as NSNumber.
    static func plain(_ value: JSONValue) -> Any {
        switch value {
        case .null: return NSNull()
        case let .bool(b): return b
        case let .number(n): return NSNumber(value: n)
        case let .string(s): return s
        case let .array(a): return a.map(plain)
        case let .object(o): return o.mapValues(plain)
        }
    }

    func check(_ name: String, _ folder: URL) throws {
        let texts = try XCTUnwrap(Self.reference["texts"] as? [String])
        let models = try XCTUnwrap(Self.reference["models"] as? [String: [String: [[[String: Any]]]]])
        try assertEntitiesMatchPipeline(TokenClassifier(folder: folder, threads: 2), texts: texts,
                                        aggregations: try XCTUnwrap(models[name]), name)
    }

    func testWordPieceBERT() throws { try check("heads/bert-ner", HeadFixtureTests.converted("bert-ner")) }
    func testWordPieceDistilBERT() throws { try check("heads/distilbert-ner", HeadFixtureTests.converted("distilbert-ner")) }
    func testDebertaUnigram() throws { try check("deberta/ner", DebertaTests.converted("ner")) }
    func testModernBertByteLevelBPE() throws { try check("rotary/modernbert-ner", RotaryEncoderTests.conversions.folder("modernbert-ner")) }

    /// The template's tokens are marked, a special token written in the text is not, padding is.
    func testSpecialTokensMaskMarksOnlyTheTemplatesTokens() throws {
        let tokenizer = try Tokenizer.load(folder: HeadFixtureTests.converted("bert-ner"))
        let encodings = tokenizer.encodeBatch(["a [MASK] b", "a b c d e f"])
        XCTAssertEqual(encodings[0].tokens, ["[CLS]", "a", "[MASK]", "b", "[SEP]", "[PAD]", "[PAD]", "[PAD]"])
        XCTAssertEqual(encodings[0].specialTokensMask, [1, 0, 0, 0, 1, 1, 1, 1])
        XCTAssertEqual(encodings[1].specialTokensMask, [1, 0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(tokenizer.encode("a", pair: "b").specialTokensMask, [1, 0, 1, 0, 1])
        XCTAssertEqual(tokenizer.encode("a", addSpecialTokens: false).specialTokensMask, [0])
    }
}
