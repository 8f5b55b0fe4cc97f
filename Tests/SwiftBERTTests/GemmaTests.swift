import Foundation
import XCTest
@testable import SwiftBERT

/// EmbeddingGemma-300M with its real weights against HF `tokenizers` and sentence-transformers'
/// own `encode` (Fixtures/gemma/, tools/fixtures/make_gemma_fixtures.py). The 1.2 GB checkpoint
/// is not in the repository: each test skips unless `weights/embeddinggemma-300m` holds the
/// converted model (`bert pull embeddinggemma-300m`).
final class GemmaTests: XCTestCase {
    static let folder = repositoryRoot.appendingPathComponent("weights/embeddinggemma-300m")

    static func fixture(_ file: String) throws -> JSONValue {
        let url = Bundle.module.url(forResource: "Fixtures/gemma", withExtension: nil)!.appendingPathComponent(file)
        return try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
    }

    private func convertedFolder(_ file: String = "model.safetensors") throws -> URL {
        guard FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent(file).path) else {
            throw XCTSkip("weights/embeddinggemma-300m is absent: `bert pull embeddinggemma-300m` (1.2 GB) to run this test")
        }
        return Self.folder.resolvingSymlinksInPath()
    }

    /// A float16 vector written by the fixture script (base64, little-endian).
    static func halfVector(_ base64: String?) -> [Float] {
        guard let base64, let data = Data(base64Encoded: base64) else { return [] }
        return stride(from: 0, to: data.count - 1, by: 2).map { i in
            let bits = UInt16(data[data.startIndex + i]) | UInt16(data[data.startIndex + i + 1]) << 8
            let sign: Float = bits & 0x8000 != 0 ? -1 : 1
            let exponent = Int((bits >> 10) & 0x1F), mantissa = Float(bits & 0x3FF)
            if exponent == 0 { return sign * mantissa * pow(2, -24) }
            return sign * (1 + mantissa / 1024) * pow(2, Float(exponent - 15))
        }
    }

    func testTokenizerMatchesHuggingFaceOnCatalogueLines() throws {
        let folder = try convertedFolder("tokenizer.json")
        let tokenizer = try Tokenizer.load(folder: folder)
        // 262,144 pieces, and an added token beyond them (<image_soft_token>, 262,144).
        XCTAssertEqual(tokenizer.vocabularySize, 262_145)
        let lines = try XCTUnwrap(Self.fixture("tokenizer.json")["lines"]?.array)
        XCTAssertGreaterThanOrEqual(lines.count, 1000)
        var failures: [String] = []
        for line in lines {
            let text = try XCTUnwrap(line["text"]?.string)
            let expected = (line["ids"]?.array ?? []).compactMap(\.int).map(Int32.init)
            let got = tokenizer.encode(text, maxLength: 1 << 20).ids
            if got != expected { failures.append("\(line["locale"]?.string ?? "") \(describeLine(text)): \(got) != HF \(expected)") }
        }
        XCTAssertTrue(failures.isEmpty, "\(failures.count) of \(lines.count) lines differ:\n" + failures.prefix(5).joined(separator: "\n"))
    }

    /// The vocabulary's 434 groups of canonically equivalent pieces ("\u{0622}" and "\u{0627}\u{0653}",
    /// Bengali "\u{09DF}" and "\u{09AF}\u{09BC}"): each piece keeps its own id, and each as text
    /// tokenizes as HF's does (Fixtures/gemma/canonical.json). Merged by String ==, they made 2
    /// of the 352 texts of embeddings.json tokenize differently (cosine 0.806 on one).
    func testTokenizerKeepsCanonicallyEquivalentPiecesApart() throws {
        let tokenizer = try Tokenizer.load(folder: try convertedFolder("tokenizer.json"))
        let fixture = try Self.fixture("canonical.json")
        let groups = try XCTUnwrap(fixture["groups"]?.array)
        XCTAssertEqual(groups.count, 434)
        let scalars = { (text: String) in text.unicodeScalars.map(\.value) }
        var failures: [String] = []
        for entry in groups.flatMap({ $0.array ?? [] }) {
            let piece = try XCTUnwrap(entry.array?.first?.string), id = Int32(try XCTUnwrap(entry.array?.last?.int))
            if tokenizer.id(of: piece) != id || tokenizer.token(of: id).map(scalars) != scalars(piece) {
                failures.append("piece \(describeLine(piece)) \(id): id(of:) \(tokenizer.id(of: piece).map(String.init) ?? "nil")")
            }
        }
        let lines = try XCTUnwrap(fixture["lines"]?.array)
        for line in lines {
            let text = try XCTUnwrap(line["text"]?.string)
            let expected = (line["ids"]?.array ?? []).compactMap(\.int).map(Int32.init)
            let got = tokenizer.encode(text).ids
            if got != expected { failures.append("\(describeLine(text)): \(got) != HF \(expected)") }
        }
        XCTAssertTrue(failures.isEmpty, "\(failures.count) differences over the pieces of \(groups.count) groups and \(lines.count) lines:\n" + failures.prefix(5).joined(separator: "\n"))
    }

    /// The ids sentence-transformers fed its model for every text of embeddings.json (prompt,
    /// framing, truncation), from the tokenizer and config.json alone: quick, without the model.
    func testTokenizerMatchesSentenceTransformersOnEveryEmbeddingText() throws {
        let folder = try convertedFolder("tokenizer.json")
        let tokenizer = try Tokenizer.load(folder: folder)
        let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
        let records = try Self.records()
        var failures: [String] = []
        for record in records {
            let prompt = record.prompt.flatMap { config.heads.sentence.prompts?[$0] } ?? ""
            let ids = tokenizer.encode(prompt + record.text, maxLength: config.encoder.maxSequenceLength).ids
            if ids != record.ids { failures.append(describeLine(record.text)) }
        }
        XCTAssertTrue(failures.isEmpty, "\(failures.count) of \(records.count) texts differ:\n" + failures.prefix(5).joined(separator: "\n"))
    }

    struct Record {
        let text: String
        let prompt: String?
        let ids: [Int32]
        let vector: [Float]
        let vector256: [Float]
    }

    static func records() throws -> [Record] {
        try XCTUnwrap(fixture("embeddings.json")["records"]?.array).map { record in
            Record(text: record["text"]?.string ?? "", prompt: record["prompt"]?.string,
                   ids: (record["ids"]?.array ?? []).compactMap(\.int).map(Int32.init),
                   vector: halfVector(record["vector"]?.string), vector256: halfVector(record["vector256"]?.string))
        }
    }

    /// Vectors of the fixture's texts, each with its prompt, in the fixture's order.
    static func embed(_ embedder: SentenceEmbedder, _ records: [Record]) throws -> [[Float]] {
        var vectors = [[Float]](repeating: [], count: records.count)
        for prompt in Set(records.map { $0.prompt ?? "" }) {
            let indices = records.indices.filter { (records[$0].prompt ?? "") == prompt }
            let options = SentenceEmbedder.Options(batchSize: 8, promptName: prompt.isEmpty ? nil : prompt, prompt: prompt.isEmpty ? "" : nil)
            let got = try embedder.embed(indices.map { records[$0].text }, options: options).vectors
            for (index, vector) in zip(indices, got) { vectors[index] = vector }
        }
        return vectors
    }

    func testFP32MatchesSentenceTransformers() throws {
        let embedder = try SentenceEmbedder(folder: try convertedFolder(), threads: 2)
        let records = try Self.records()
        XCTAssertGreaterThanOrEqual(records.count, 300)
        XCTAssertTrue(records.contains { $0.ids.count > 512 })
        // The ids sentence-transformers fed its model: prompt, framing and truncation as its own.
        for record in records {
            let prompt = record.prompt.flatMap { embedder.model.config.heads.sentence.prompts?[$0] } ?? ""
            let ids = embedder.tokenizer.encode(prompt + record.text, maxLength: embedder.model.config.encoder.maxSequenceLength).ids
            XCTAssertEqual(ids, record.ids, describeLine(record.text))
        }
        let vectors = try Self.embed(embedder, records)
        let cosines = zip(vectors, records).map { cosine($0, $1.vector) }
        let worst = cosines.indices.min { cosines[$0] < cosines[$1] }!
        print("EmbeddingGemma FP32 vs sentence-transformers: \(records.count) texts, min cosine \(cosines[worst]) (\(records[worst].ids.count) tokens), mean \(cosines.reduce(0, +) / Float(cosines.count))")
        XCTAssertGreaterThanOrEqual(cosines[worst], 0.9999, "text \(worst): \(describeLine(records[worst].text))")
        // Matryoshka: the first 256 dimensions, normalised again, as truncate_dim=256.
        for (vector, record) in zip(vectors, records) where !record.vector256.isEmpty {
            let small = Array(vector.prefix(256))
            let norm = small.reduce(0) { $0 + $1 * $1 }.squareRoot()
            XCTAssertGreaterThanOrEqual(cosine(small.map { $0 / norm }, record.vector256), 0.9999)
            XCTAssertLessThan(maxAbsDifference(small.map { $0 / norm }, record.vector256), 2e-3)
        }
    }

    /// BF16 and INT8 against FP32 on the fixture's texts: reported, and held above floors far
    /// below what they measure, so that a broken path fails.
    func testReducedPrecisionsAgainstFP32() throws {
        let folder = try convertedFolder()
        let records = Array(try Self.records().prefix(120))
        let reference = try Self.embed(try SentenceEmbedder(folder: folder, threads: 2), records)
        var precisions: [Precision] = [.bf16]
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent(WeightFiles.int8).path) { precisions.append(.int8) }
        for precision in precisions {
            let vectors = try Self.embed(try SentenceEmbedder(folder: folder, threads: 2, precision: precision), records)
            let cosines = zip(vectors, reference).map { cosine($0, $1) }
            let mean = cosines.reduce(0, +) / Float(cosines.count)
            print("EmbeddingGemma \(precision.rawValue) vs FP32: \(records.count) texts, mean cosine \(mean), min \(cosines.min()!)")
            XCTAssertGreaterThan(mean, 0.95, precision.rawValue)
        }
    }
}
