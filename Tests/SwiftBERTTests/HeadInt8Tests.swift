import Foundation
import XCTest
@testable import SwiftBERT

/// INT8 (`bert quantize`, the encoder's Linear layers and word embeddings in INT8; heads stay
/// float32) against FP32 for every head, on the RANDOM-weight fixtures of HeadFixtureTests.
/// Prints the agreement figures quoted in docs/models.md. The bounds sit a little outside what
/// was measured (labels near a tie may flip under INT8 rounding): they catch a broken INT8 path,
/// not the last bit of accuracy.
final class HeadInt8Tests: XCTestCase {
    func int8Folder(_ name: String) throws -> URL { try quantizedOnce(HeadFixtureTests.converted(name)) }

    func report(_ line: String) { print("INT8 vs FP32 (random-weight fixtures): \(line)") }

    func testClassifierInt8() throws {
        for name in ["bert-classifier", "distilbert-classifier"] {
            let folder = try int8Folder(name)
            let texts = (HeadFixtureTests.reference["classify"] as! [String: Any])["texts"] as! [String]
            let fp32 = try TextClassifier(folder: folder, threads: 2).classify(texts)
            let int8 = try TextClassifier(folder: folder, threads: 2, precision: .int8).classify(texts)
            let agree = zip(fp32, int8).filter { $0[0].label == $1[0].label }.count
            let worst = zip(fp32, int8).flatMap { a, b in a.map { l in abs(l.score - b.first { $0.label == l.label }!.score) } }.max()!
            report("\(name): top label agrees on \(agree)/\(texts.count) texts, largest probability difference \(worst)")
            XCTAssertGreaterThanOrEqual(agree, texts.count - 1, name)
            XCTAssertLessThan(worst, 0.02, name)
        }
    }

    func testRerankerInt8() throws {
        let folder = try int8Folder("bert-cross-encoder")
        let reference = HeadFixtureTests.reference["rerank"] as! [String: Any]
        for case_ in reference["cases"] as! [[String: Any]] {
            let query = case_["query"] as! String, documents = case_["documents"] as! [String]
            let fp32 = try Reranker(folder: folder, threads: 2).rerank(query: query, documents: documents)
            let int8 = try Reranker(folder: folder, threads: 2, precision: .int8).rerank(query: query, documents: documents)
            let worst = zip(fp32.sorted { $0.index < $1.index }, int8.sorted { $0.index < $1.index }).map { abs($0.score - $1.score) }.max()!
            report("rerank '\(query)': best document \(fp32[0].index == int8[0].index ? "same" : "differs"), order \(fp32.map(\.index)) vs \(int8.map(\.index)), largest score difference \(worst)")
            XCTAssertLessThan(worst, 0.005)
            XCTAssertEqual(fp32[0].index, int8[0].index)
        }
    }

    func testNERInt8() throws {
        for name in ["bert-ner", "distilbert-ner"] {
            let folder = try int8Folder(name)
            let texts = (HeadFixtureTests.reference["ner"] as! [String: Any])["texts"] as! [String]
            let fp32 = try TokenClassifier(folder: folder, threads: 2).entities(texts, aggregation: .none)
            let int8 = try TokenClassifier(folder: folder, threads: 2, precision: .int8).entities(texts, aggregation: .none)
            // Token labels compared position by position (strategy none keeps every non-O token).
            var same = 0, total = 0
            for (a, b) in zip(fp32, int8) {
                let labelsA = Dictionary(uniqueKeysWithValues: a.map { ($0.index!, $0.label) })
                let labelsB = Dictionary(uniqueKeysWithValues: b.map { ($0.index!, $0.label) })
                for index in Set(labelsA.keys).union(labelsB.keys) { total += 1; if labelsA[index] == labelsB[index] { same += 1 } }
            }
            report("\(name): entity token labels agree on \(same)/\(total)")
            XCTAssertGreaterThanOrEqual(Double(same), 0.9 * Double(total), name)
        }
    }

    func testPoolingInt8() throws {
        let folder = try int8Folder("st-cls")
        let texts = (HeadFixtureTests.reference["sentence_transformers"] as! [[String: Any]])[0]["texts"] as! [String]
        let fp32 = try SentenceEmbedder(folder: folder, threads: 2).embed(texts).vectors
        let int8 = try SentenceEmbedder(folder: folder, threads: 2, precision: .int8).embed(texts).vectors
        let cosines = zip(fp32, int8).map { cosineSimilarity($0, $1) }
        report("st-cls (CLS pooling, Dense, Normalize, default prompt): cosine to FP32 min \(cosines.min()!), mean \(cosines.reduce(0, +) / Float(cosines.count))")
        XCTAssertGreaterThan(cosines.min()!, 0.999)
    }

    func testDistilBERTFillMaskInt8() throws {
        let folder = try int8Folder("distilbert-mlm")
        let cases = ((HeadFixtureTests.reference["distilbert"] as! [String: Any])["fill_mask"] as! [String: Any])["cases"] as! [[String: Any]]
        var same = 0, total = 0
        for case_ in cases {
            let text = case_["text"] as! String
            let a = try FillMask(folder: folder, threads: 2).predict(text, topK: 1)
            let b = try FillMask(folder: folder, threads: 2, precision: .int8).predict(text, topK: 1)
            for (x, y) in zip(a, b) { total += 1; if x.candidates[0].id == y.candidates[0].id { same += 1 } }
        }
        report("distilbert-mlm fill-mask: top-1 agrees on \(same)/\(total) masks")
        XCTAssertGreaterThanOrEqual(Double(same), 0.8 * Double(total))
    }
}
