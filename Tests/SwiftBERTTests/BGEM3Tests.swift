import Foundation
import XCTest
@testable import SwiftBERT

/// BGE-M3's three outputs against tools/fixtures/make_bgem3_fixtures.py: a RANDOM-weight XLM-R
/// in BGE-M3's layout (CLS pooling, Normalize) with random `sparse_linear.pt` and
/// `colbert_linear.pt` saved by torch.save, and what transformers and FlagEmbedding's formulas
/// give for 16 texts (real sentences in several languages, one cut at 128 tokens). Random
/// weights show exactness only. Ids identical; dense, lexical weights and ColBERT vectors within
/// 1e-4; the lexical weights' ids identical.
final class BGEM3Tests: XCTestCase {
    static let tolerance: Float = 1e-4
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures")
    private static let conversions = ConvertedFixtures(fixtures, label: "bgem3")
    static func converted() throws -> URL { try conversions.folder("bgem3") }

    struct Reference: Decodable {
        struct Text: Decodable {
            let text: String
            let ids: [Int32]
            let dense: [Float]
            /// [id, weight] pairs, ids ascending.
            let sparse: [[Float]]
            let colbert: [[Float]]
        }
        let texts: [Text]
        let max_length: Int
    }

    static let reference: Reference = {
        let url = fixtures.appendingPathComponent("bgem3/reference.json")
        return try! JSONDecoder().decode(Reference.self, from: Data(contentsOf: url))
    }()

    static func assertMatches(_ found: RetrievalEmbedding, _ expected: Reference.Text, _ outputs: RetrievalOutputs,
                              file: StaticString = #filePath, line: UInt = #line) {
        let what = "\"\(expected.text.prefix(40))\""
        if outputs.contains(.dense) {
            let dense = found.dense ?? []
            XCTAssertEqual(dense.count, expected.dense.count, "\(what): dense width", file: file, line: line)
            XCTAssertLessThanOrEqual(maxAbsDifference(dense, expected.dense), tolerance, "\(what): dense", file: file, line: line)
        } else {
            XCTAssertNil(found.dense, file: file, line: line)
        }
        if outputs.contains(.sparse) {
            let sparse = found.sparse ?? SparseVector(indices: [], values: [])
            XCTAssertEqual(sparse.indices, expected.sparse.map { Int32($0[0]) }, "\(what): lexical weights' ids", file: file, line: line)
            XCTAssertLessThanOrEqual(maxAbsDifference(sparse.values, expected.sparse.map { $0[1] }), tolerance, "\(what): lexical weights", file: file, line: line)
        } else {
            XCTAssertNil(found.sparse, file: file, line: line)
        }
        if outputs.contains(.multiVector) {
            let vectors = found.multiVector ?? []
            XCTAssertEqual(vectors.count, expected.colbert.count, "\(what): one ColBERT vector per token after <s>", file: file, line: line)
            let worst = zip(vectors, expected.colbert).map { maxAbsDifference($0, $1) }.max() ?? .infinity
            XCTAssertLessThanOrEqual(worst, tolerance, "\(what): ColBERT vectors", file: file, line: line)
        } else {
            XCTAssertNil(found.multiVector, file: file, line: line)
        }
    }

    /// The converter reads both torch.save files (no Python) and the model says it has both heads.
    func testConvertsTheHeadsFromTorchFiles() throws {
        let config = try ModelConfig.load(from: Self.converted().appendingPathComponent("config.json"))
        XCTAssertEqual(config.heads.hasLexicalWeights, true)
        XCTAssertEqual(config.heads.colbertDimension, 128)
        let encoder = try loadEncoder(folder: Self.converted(), threads: 1)
        XCTAssertEqual(encoder.heads, [.sentenceEmbedding, .sparseEmbedding, .multiVector, .tokenEmbeddings])
    }

    /// All three outputs from one forward pass, in batches of 5 (mixed lengths), match the
    /// reference; each output asked for alone gives the same numbers, bit for bit.
    func testDenseSparseAndColBERTMatchFlagEmbedding() throws {
        let embedder = try SentenceEmbedder(folder: Self.converted(), threads: 2)
        let reference = Self.reference
        XCTAssertEqual(reference.texts.count, 16)
        for expected in reference.texts {
            XCTAssertEqual(embedder.tokenizer.encode(expected.text, maxLength: reference.max_length).ids, expected.ids, "ids of \"\(expected.text)\"")
        }
        let texts = reference.texts.map(\.text)
        let options = SentenceEmbedder.Options(batchSize: 5)
        let all = try embedder.embed(texts, outputs: .all, options: options)
        XCTAssertTrue(all.truncated.contains(15), "\(all.truncated)")
        for (found, expected) in zip(all.embeddings, reference.texts) { Self.assertMatches(found, expected, .all) }
        let pairs = zip(all.embeddings, reference.texts)
        let dense = pairs.map { maxAbsDifference($0.dense!, $1.dense) }.max()!
        let lexical = pairs.map { maxAbsDifference($0.sparse!.values, $1.sparse.map { $0[1] }) }.max()!
        let colbert = pairs.flatMap { zip($0.multiVector!, $1.colbert).map { maxAbsDifference($0, $1) } }.max()!
        print("BGE-M3 fixture, max |diff| to FlagEmbedding's formulas: dense \(dense), lexical weights \(lexical), ColBERT \(colbert)")
        for outputs: RetrievalOutputs in [.dense, .sparse, .multiVector, [.sparse, .multiVector]] {
            let alone = try embedder.embed(texts, outputs: outputs, options: options).embeddings
            for (found, both) in zip(alone, all.embeddings) {
                XCTAssertEqual(found.dense, outputs.contains(.dense) ? both.dense : nil)
                XCTAssertEqual(found.sparse, outputs.contains(.sparse) ? both.sparse : nil)
                XCTAssertEqual(found.multiVector, outputs.contains(.multiVector) ? both.multiVector : nil)
            }
        }
        // The dense output is plain `embed`'s vector.
        XCTAssertEqual(try embedder.embed(texts, options: options).vectors, all.embeddings.map { $0.dense! })
        // SparseEmbedder picks BGE-M3's head over a checkpoint that has it.
        let sparse = try SparseEmbedder(folder: Self.converted(), threads: 2).embed(texts, batchSize: 3).vectors
        XCTAssertEqual(sparse, all.embeddings.map { $0.sparse! })
    }

    /// INT8 and BF16 run the heads too (they stay float32): every output close to FP32's.
    func testQuantisedEncodersKeepTheOutputsClose() throws {
        let folder = try quantizedOnce(Self.converted())
        let texts = Self.reference.texts.map(\.text)
        let fp32 = try SentenceEmbedder(folder: folder, threads: 2).embed(texts, outputs: .all).embeddings
        for precision in [Precision.int8, .bf16] {
            let found = try SentenceEmbedder(folder: folder, threads: 2, precision: precision).embed(texts, outputs: .all).embeddings
            for (a, b) in zip(found, fp32) {
                XCTAssertGreaterThan(cosine(a.dense!, b.dense!), 0.999, "\(precision) dense")
                XCTAssertEqual(a.multiVector!.count, b.multiVector!.count)
                XCTAssertGreaterThan(zip(a.multiVector!, b.multiVector!).map { cosine($0, $1) }.min()!, 0.99, "\(precision) ColBERT")
            }
        }
    }

    /// A model without the heads says what to use.
    func testModelsWithoutTheHeadsSayWhatToUse() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"), threads: 1)
        XCTAssertNil(embedder.multiVector)
        XCTAssertThrowsError(try embedder.embed(["a"], outputs: .multiVector)) { XCTAssertTrue("\($0)".contains("colbert_linear.pt"), "\($0)") }
        XCTAssertThrowsError(try embedder.embed(["a"], outputs: .sparse)) { XCTAssertTrue("\($0)".contains("splade-tiny"), "\($0)") }
    }
}

/// `bert embed --dense --sparse --multi-vector` on the BGE-M3 fixture: one record per text with
/// the three outputs of FlagEmbedding's formulas.
final class BGEM3CLITests: CLITestCase {
    func testEmbedWritesTheThreeOutputsInOneRecord() throws {
        let reference = BGEM3Tests.reference
        let texts = reference.texts.prefix(6).map(\.text)
        let folder = try BGEM3Tests.converted().path
        let result = try bert(["embed", "--model", folder, "--dense", "--sparse", "--multi-vector", "--batch-size", "4"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, texts.count)
        for (i, (line, expected)) in zip(lines, reference.texts).enumerated() {
            let record = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            XCTAssertEqual(record.keys.sorted(), ["embedding", "index", "sparse", "vectors"])
            XCTAssertEqual(record["index"] as? Int, i)
            let entries = try XCTUnwrap(record["sparse"] as? [[String: NSNumber]])
            let found = RetrievalEmbedding(
                dense: try XCTUnwrap(record["embedding"] as? [NSNumber]).map(\.floatValue),
                sparse: SparseVector(indices: entries.map { $0["index"]?.int32Value ?? -1 }, values: entries.map { $0["value"]?.floatValue ?? .nan }),
                multiVector: try XCTUnwrap(record["vectors"] as? [[NSNumber]]).map { $0.map(\.floatValue) })
            BGEM3Tests.assertMatches(found, expected, .all)
        }
        // --multi-vector alone: only the vectors; a model without the head, and --dense alone, refused.
        let alone = try bert(["embed", "--model", folder, "--multi-vector", texts[0]])
        XCTAssertEqual(alone.status, 0, alone.stderr)
        let record = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(alone.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(record.keys.sorted(), ["index", "vectors"])
        let missing = try bert(["embed", "--multi-vector", "a text"])
        XCTAssertEqual(missing.status, 65, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("colbert_linear.pt"), missing.stderr)
        XCTAssertEqual(try bert(["embed", "--dense", "a text"]).status, 64)
    }
}

/// /embed_sparse, /embed_multi_vector and /embed_outputs on the BGE-M3 fixture.
extension ServerTests {
    func testRetrievalRoutesServeBGEM3sOutputs() throws {
        let folder = try BGEM3Tests.converted().path
        let server = try ServerProcess(bert: bertPath, arguments: ["--model", "\(folder),all-MiniLM-L6-v2"])
        let reference = BGEM3Tests.reference
        let texts = reference.texts.prefix(4).map(\.text)

        let outputs = try server.post("/embed_outputs", ["model": folder, "inputs": texts, "outputs": ["dense", "sparse", "multi_vector"]])
        XCTAssertEqual(outputs.status, 200, outputs.text)
        let records = try XCTUnwrap(outputs.json() as? [[String: Any]])
        XCTAssertEqual(records.count, texts.count)
        func sparse(_ value: Any?) -> SparseVector {
            let entries = (value as? [[String: NSNumber]]) ?? []
            return SparseVector(indices: entries.map { $0["index"]?.int32Value ?? -1 }, values: entries.map { $0["value"]?.floatValue ?? .nan })
        }
        func vectors(_ value: Any?) -> [[Float]] { ((value as? [[NSNumber]]) ?? []).map { $0.map(\.floatValue) } }
        for (record, expected) in zip(records, reference.texts) {
            let found = RetrievalEmbedding(dense: (record["dense"] as? [NSNumber])?.map(\.floatValue), sparse: sparse(record["sparse"]),
                                           multiVector: vectors(record["multi_vector"]))
            BGEM3Tests.assertMatches(found, expected, .all)
        }
        // Each route on its own: the same outputs.
        let multi = try XCTUnwrap(server.post("/embed_multi_vector", ["model": folder, "inputs": texts]).json() as? [Any])
        let lexical = try XCTUnwrap(server.post("/embed_sparse", ["model": folder, "inputs": texts]).json() as? [Any])
        for (i, expected) in reference.texts.prefix(4).enumerated() {
            BGEM3Tests.assertMatches(RetrievalEmbedding(dense: nil, sparse: sparse(lexical[i]), multiVector: vectors(multi[i])),
                                     expected, [.sparse, .multiVector])
        }
        // Only what is asked for.
        let denseOnly = try XCTUnwrap(server.post("/embed_outputs", ["model": folder, "inputs": texts[0], "outputs": ["dense"]]).json() as? [[String: Any]])
        XCTAssertEqual(denseOnly.first?.keys.sorted(), ["dense"])
        // A client's mistakes are 4xx with what to do: a model without the head, an unknown or no output.
        let noHead = try server.post("/embed_multi_vector", ["model": "all-MiniLM-L6-v2", "inputs": "a"])
        XCTAssertEqual(noHead.status, 422, noHead.text)
        XCTAssertTrue(noHead.text.contains("colbert_linear.pt"), noHead.text)
        XCTAssertEqual(try server.post("/embed_outputs", ["model": folder, "inputs": "a", "outputs": ["colbert"]]).status, 422)
        XCTAssertEqual(try server.post("/embed_outputs", ["model": folder, "inputs": "a", "outputs": []]).status, 422)
        XCTAssertEqual(try server.post("/embed_outputs", ["model": "all-MiniLM-L6-v2", "inputs": "a", "outputs": ["sparse"]]).status, 422)
    }
}
