import XCTest
@testable import SwiftBERT

/// INT8 against the FP32 engine on 300 real sentences (Fixtures/sentences.txt, from Debian's
/// license texts). Thresholds are issue 5's.
final class Int8AccuracyTests: XCTestCase {
    static let sentences: [String] = {
        let url = Bundle.module.url(forResource: "Fixtures/sentences", withExtension: "txt")!
        return (try! String(contentsOf: url, encoding: .utf8)).split(separator: "\n").map(String.init)
    }()

    func testInt8FilesAreAtMost30PercentOfFP32() throws {
        for name in ["all-MiniLM-L6-v2", "splade-tiny"] {
            let folder = try convertedModel(name)
            let size = { (file: String) -> Double in
                Double((try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(file).path)[.size] as? Int) ?? 0)
            }
            XCTAssertLessThanOrEqual(try size(Quantizer.fileName) / size("model.safetensors"), 0.30, name)
        }
    }

    func testMiniLMInt8EmbeddingsStayCloseToFP32() throws {
        let folder = try convertedModel("all-MiniLM-L6-v2")
        let fp32 = try SentenceEmbedder(folder: folder)
        let int8 = SentenceEmbedder(model: try BertModel(folder: folder, precision: .int8), tokenizer: fp32.tokenizer)
        let sentences = Self.sentences
        XCTAssertGreaterThanOrEqual(sentences.count, 200)
        let a = try fp32.embed(sentences).vectors, b = try int8.embed(sentences).vectors
        let cosines = zip(a, b).map { cosineSimilarity($0, $1) }
        let mean = cosines.reduce(0, +) / Float(cosines.count)
        print("MiniLM INT8 vs FP32 over \(cosines.count) sentences: mean cosine \(mean), min \(cosines.min()!)")
        XCTAssertGreaterThanOrEqual(mean, 0.995)
        XCTAssertGreaterThanOrEqual(cosines.min()!, 0.98)
    }

    func testSpladeInt8FillMaskAgreesWithFP32() throws {
        let folder = try convertedModel("splade-tiny")
        let fp32 = try FillMask(folder: folder)
        let int8 = try FillMask(model: BertModel(folder: folder, precision: .int8), tokenizer: fp32.tokenizer)
        var agreeing = 0, overlap = 0.0, total = 0
        for sentence in Self.sentences {
            // Mask the middle word that is one vocabulary entry.
            let words = sentence.split(separator: " ").filter { w in
                w.allSatisfy(\.isLetter) && w.count >= 3 && fp32.tokenizer.tokenize(String(w)).count == 1
            }
            guard let word = words.dropFirst(words.count / 2).first,
                  let range = sentence.range(of: " \(word) ") else { continue }
            let masked = sentence.replacingCharacters(in: range, with: " [MASK] ")
            let a = try fp32.predict(masked, topK: 5)[0].candidates.map(\.id)
            let b = try int8.predict(masked, topK: 5)[0].candidates.map(\.id)
            agreeing += a[0] == b[0] ? 1 : 0
            overlap += Double(Set(a).intersection(b).count) / 5
            total += 1
        }
        XCTAssertGreaterThanOrEqual(total, 200)
        let top1 = Double(agreeing) / Double(total), top5 = overlap / Double(total)
        print("splade-tiny INT8 vs FP32 over \(total) masked sentences: top-1 agreement \(top1), mean top-5 overlap \(top5)")
        XCTAssertGreaterThanOrEqual(top1, 0.95)
        XCTAssertGreaterThanOrEqual(top5, 0.9)
    }
}
