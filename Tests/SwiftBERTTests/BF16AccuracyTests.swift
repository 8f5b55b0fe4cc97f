import XCTest
@testable import SwiftBERT
@testable import SwiftBERTKernels

/// BF16 against sentence-transformers (PyTorch FP32) on the fixture's real sentences, and against
/// the FP32 engine on 300 real sentences (Fixtures/sentences.txt). Thresholds are issue 16's.
final class BF16AccuracyTests: XCTestCase {
    func testMiniLMBF16EmbeddingsMatchSentenceTransformers() throws {
        let reference = try Reference("all-MiniLM-L6-v2")
        let folder = try convertedModel("all-MiniLM-L6-v2")
        let fp32 = try SentenceEmbedder(folder: folder)
        let bf16 = try SentenceEmbedder(model: try BertModel(folder: folder, precision: .bf16), tokenizer: fp32.tokenizer)
        let vectors = try bf16.embed(reference.meta.sentences).vectors
        let cosines = try vectors.enumerated().map { i, v in cosine(v, try reference.tensor("sentence_embedding.\(i)")) }
        let mean = cosines.reduce(0, +) / Float(cosines.count)
        print("all-MiniLM-L6-v2 bf16 vs sentence-transformers over \(cosines.count) sentences: mean cosine \(mean), min \(cosines.min()!)")
        XCTAssertGreaterThanOrEqual(cosines.count, 20)
        XCTAssertGreaterThanOrEqual(mean, 0.9998)
        XCTAssertGreaterThanOrEqual(cosines.min()!, 0.999)
    }

    func testMiniLMBF16EmbeddingsStayCloseToFP32() throws {
        let (mean, smallest) = try Int8AccuracyTests.embeddingAgreement(.bf16)
        XCTAssertGreaterThanOrEqual(mean, 0.9998)
        XCTAssertGreaterThanOrEqual(smallest, 0.999)
    }

    /// The masked-LM thresholds INT8 weight-only meets, for BF16.
    func testSpladeBF16FillMaskAgreesWithFP32() throws {
        let (top1, top5) = try Int8AccuracyTests.fillMaskAgreement(.bf16)
        XCTAssertGreaterThanOrEqual(top1, 0.95)
        XCTAssertGreaterThanOrEqual(top5, 0.9)
    }

    /// BF16 needs no second file: it loads from model.safetensors alone.
    func testBF16LoadsFromTheFP32File() throws {
        let model = try BertModel(folder: convertedModel("all-MiniLM-L6-v2"), threads: 1, precision: .bf16)
        XCTAssertEqual(model.precision.fileName, "model.safetensors")
        XCTAssertTrue(model.layers.allSatisfy { $0.intermediate.dense.weight is PackedBF16Matrix && $0.attention.selfAttention.qkv.weight is PackedBF16Matrix })
    }
}
