import XCTest
@testable import SwiftBERT

/// MPNet on the real all-mpnet-base-v2 against sentence-transformers, HF `tokenizers` and
/// transformers (fixtures from tools/fixtures/make_mpnet_fixtures.py): its relative position
/// buckets, its tokenizer on 1,388 real lines in 18 languages, its sentence embeddings on 396
/// real sentences (multilingual messages and license text, documents cut at 384 tokens), and
/// the INT8 and BF16 precisions beside FP32.
final class MPNetTests: XCTestCase {
    struct Fixture: Decodable {
        struct Buckets: Decodable { let distances: [Int]; let buckets: [Int] }
        let max_seq_length: Int
        let sentences: [String]
        let lines: [String]
        let ids: [[Int32]]
        let relative_buckets: Buckets
    }

    static let fixtureFolder = Bundle.module.url(forResource: "Fixtures/mpnet", withExtension: nil)!
    static let fixture = Result {
        try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: fixtureFolder.appendingPathComponent("all-mpnet-base-v2.json")))
    }

    func expectedEmbeddings() throws -> [[Float]] {
        let file = try SafeTensorsFile(path: Self.fixtureFolder.appendingPathComponent("all-mpnet-base-v2.safetensors").path)
        let all = Array(try file.floats("embeddings"))
        let d = all.count / (try Self.fixture.get().sentences.count)
        return stride(from: 0, to: all.count, by: d).map { Array(all[$0..<$0 + d]) }
    }

    func testRelativePositionBucketsMatchTransformers() throws {
        let buckets = try Self.fixture.get().relative_buckets
        XCTAssertEqual(buckets.distances.count, 1201)
        for (distance, expected) in zip(buckets.distances, buckets.buckets) {
            XCTAssertEqual(RelativePositionBias.bucket(distance: distance, buckets: 32), expected, "distance \(distance)")
        }
    }

    func testTokenIdsMatchTokenizersOnRealLines() throws {
        let fixture = try Self.fixture.get()
        XCTAssertGreaterThanOrEqual(fixture.lines.count, 1000)
        let tokenizer = try Tokenizer.load(folder: try convertedModel("all-mpnet-base-v2"))
        var mismatches = 0
        for (line, ids) in zip(fixture.lines, fixture.ids) where tokenizer.encode(line).ids != ids {
            mismatches += 1
            XCTAssertEqual(tokenizer.encode(line).ids, ids, "line: \(line)")
            if mismatches > 5 { break }
        }
        XCTAssertEqual(mismatches, 0)
    }

    /// sentence-transformers' vectors against `precision`'s: (min, mean) cosine over the sentences
    /// at `indices` (default: every one).
    func cosines(_ precision: Precision, at indices: [Int]? = nil) throws -> (min: Float, mean: Float) {
        let fixture = try Self.fixture.get()
        let folder = try convertedModel("all-mpnet-base-v2")
        if precision.fileName == WeightFiles.int8 { _ = try quantizedOnce(folder) }
        let embedder = try SentenceEmbedder(folder: folder, threads: 2, precision: precision)
        XCTAssertEqual(embedder.model.config.encoder.maxSequenceLength, fixture.max_seq_length)
        let indices = indices ?? Array(fixture.sentences.indices)
        let got = try embedder.embed(indices.map { fixture.sentences[$0] }).vectors
        let expected = try expectedEmbeddings()
        let similarities = zip(got, indices).map { cosine($0, expected[$1]) }
        return (similarities.min()!, similarities.reduce(0, +) / Float(similarities.count))
    }

    /// The sentences the precisions are checked on: every third (132 of 396: English, every
    /// language, and two of the documents cut at 384 tokens), which runs every path of each
    /// precision's pass, at a third of the cost (the four passes over all 396 took 188 s of the
    /// suite's 600). docs/models.md's figures are over all 396: SWIFTBERT_ALL_SENTENCES=1.
    static func precisionSample(_ sentences: [String]) -> [Int]? {
        if ProcessInfo.processInfo.environment["SWIFTBERT_ALL_SENTENCES"] != nil { return nil }
        return sentences.indices.filter { $0 % 3 == 0 }
    }

    func testSentenceEmbeddingsMatchSentenceTransformers() throws {
        let (worst, mean) = try cosines(.fp32)
        print("all-mpnet-base-v2 FP32 against sentence-transformers: min cosine \(worst), mean \(mean)")
        XCTAssertGreaterThanOrEqual(worst, 0.9999)
    }

    func testInt8AndBF16StayCloseToFP32() throws {
        let sentences = try Self.fixture.get().sentences
        let sample = Self.precisionSample(sentences)
        let int8 = try cosines(.int8, at: sample), weights = try cosines(.int8Weights, at: sample), bf16 = try cosines(.bf16, at: sample)
        let integerAttention = try cosines(.int8Attention, at: sample)
        print("all-mpnet-base-v2 against sentence-transformers FP32 over \(sample?.count ?? sentences.count) sentences: int8 min \(int8.min) mean \(int8.mean); int8-weights min \(weights.min) mean \(weights.mean); bf16 min \(bf16.min) mean \(bf16.mean); int8-attention min \(integerAttention.min) mean \(integerAttention.mean)")
        // The bars MiniLM's precisions keep (INT8's of the INT8-accuracy issue, mean ≥ 0.995 and
        // min ≥ 0.98; BF16's of BF16AccuracyTests, mean ≥ 0.9998 and min ≥ 0.999) hold for
        // int8-weights and bf16. Full INT8 (activations per token too) misses the mean bar on
        // this 12-layer model: measured 0.99490, min 0.98353 (docs/models.md). Its guard is
        // that measurement, rounded down, so a regression shows; it is not a goal.
        XCTAssertGreaterThanOrEqual(weights.mean, 0.995)
        XCTAssertGreaterThanOrEqual(weights.min, 0.98)
        XCTAssertGreaterThanOrEqual(bf16.mean, 0.9998)
        XCTAssertGreaterThanOrEqual(bf16.min, 0.999)
        XCTAssertGreaterThanOrEqual(int8.mean, 0.9945)
        XCTAssertGreaterThanOrEqual(int8.min, 0.98)
        // int8-attention (attention's products in integers too): measured mean 0.99478, min
        // 0.97821; guarded the same way, as a regression check.
        XCTAssertGreaterThanOrEqual(integerAttention.mean, 0.9945)
        XCTAssertGreaterThanOrEqual(integerAttention.min, 0.978)
    }
}
