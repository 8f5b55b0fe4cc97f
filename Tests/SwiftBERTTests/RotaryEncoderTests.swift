import XCTest
@testable import SwiftBERT

/// NomicBERT, GTE and ModernBERT against transformers 5.x, on random-weight checkpoints made by
/// transformers' own classes (tools/fixtures/make_rotary_fixtures.py; random weights: exact, not
/// meaningful). Query and key projections are sharpened, so attention is not uniform and a
/// wrong rotary angle shows. Texts of 17 to 728 tokens within 1e-4; documents of 1,506 to 7,049
/// tokens within 5e-4 (ModernBERT's sliding window of 16 keys each side crosses hundreds of
/// windows there); both checkpoint layouts convert to the same tensors; ModernBERT's masked-LM
/// top-10 as transformers'.
final class RotaryEncoderTests: XCTestCase {
    struct Sequence: Decodable {
        let input_ids: [Int32]
        let mean: [Float]
        let cls: [Float]
        let max: [Float]
    }
    struct Fill: Decodable {
        let input_ids: [Int32]
        let position: Int
        let top_ids: [Int32]
        let smallest_gap: Float
    }
    struct Model: Decodable {
        let texts: [Sequence]
        let documents: [Sequence]
        let document_row_step: Int
        let fill_mask: [Fill]?
    }
    struct Reference: Decodable {
        let nomic: Model
        let gte: Model
        let modernbert: Model
    }

    static let fixtures = Bundle.module.url(forResource: "Fixtures/rotary", withExtension: nil)!
    static let conversions = ConvertedFixtures(fixtures, label: "rotary")
    static let reference = Result {
        try JSONDecoder().decode(Reference.self, from: Data(contentsOf: fixtures.appendingPathComponent("reference.json")))
    }
    static let tensors = Result { try SafeTensorsFile(path: fixtures.appendingPathComponent("reference.safetensors").path) }

    func model(_ name: String) throws -> Model {
        let reference = try Self.reference.get()
        return switch name { case "nomic": reference.nomic; case "gte": reference.gte; default: reference.modernbert }
    }

    /// The engine's pooled vectors of `output` (mean, cls, max), unnormalised.
    func pooled(_ encoder: any EncoderModel, _ output: EncoderOutput) throws -> [Pooling: [[Float]]] {
        var head = try SentenceHead(encoder)
        head.normalize = false
        var result: [Pooling: [[Float]]] = [:]
        for pooling in [Pooling.mean, .cls, .max] {
            head.pooling = pooling
            result[pooling] = head(output, HeadBatch(threads: encoder.threads))
        }
        return result
    }

    func checkAgainstTransformers(_ name: String) throws {
        let reference = try model(name), tensors = try Self.tensors.get()
        let encoder = try loadEncoder(folder: try Self.conversions.folder(name), threads: 2)
        XCTAssertTrue(encoder is RotaryEncoderModel)
        // Texts: all in one packed batch.
        let texts = try encoder.encode(reference.texts.map(\.input_ids))
        var worst: Float = 0
        for i in 0..<texts.count {
            let diff = maxAbsDifference(texts.hiddenStates(i), Array(try tensors.floats("\(name).text.\(i)")))
            XCTAssertLessThanOrEqual(diff, 1e-4, "\(name) text \(i) (\(texts.lengths[i]) tokens)")
            worst = max(worst, diff)
        }
        let pooledTexts = try pooled(encoder, texts)
        for (i, text) in reference.texts.enumerated() {
            for (pooling, expected) in [(Pooling.mean, text.mean), (.cls, text.cls), (.max, text.max)] {
                XCTAssertLessThanOrEqual(maxAbsDifference(pooledTexts[pooling]![i], expected), 1e-4, "\(name) text \(i) \(pooling)")
            }
        }
        // Documents of 1,500 to 7,000 tokens, each alone: every 37th row and the pooled vectors.
        var worstDocument: Float = 0
        for (i, document) in reference.documents.enumerated() {
            let output = try encoder.encode([document.input_ids])
            let rows = try tensors.floats("\(name).document.\(i).rows"), h = encoder.config.encoder.hiddenSize
            let all = output.hiddenStates(0)
            var got: [Float] = []
            for row in stride(from: 0, to: output.lengths[0], by: reference.document_row_step) { got += all[row * h..<(row + 1) * h] }
            let diff = maxAbsDifference(got, Array(rows))
            XCTAssertLessThanOrEqual(diff, 5e-4, "\(name) document \(i) (\(output.lengths[0]) tokens)")
            worstDocument = max(worstDocument, diff)
            let pooledDocument = try pooled(encoder, output)
            for (pooling, expected) in [(Pooling.mean, document.mean), (.cls, document.cls), (.max, document.max)] {
                XCTAssertLessThanOrEqual(maxAbsDifference(pooledDocument[pooling]![0], expected), 5e-4, "\(name) document \(i) \(pooling)")
            }
        }
        print("\(name): worst max-abs difference \(worst) on texts, \(worstDocument) on documents")
    }

    func testNomicBertMatchesTransformers() throws { try checkAgainstTransformers("nomic") }
    func testGteMatchesTransformers() throws { try checkAgainstTransformers("gte") }
    func testModernBertMatchesTransformers() throws { try checkAgainstTransformers("modernbert") }

    /// The Hub's remote-code layouts convert to exactly the tensors of transformers 5.x's.
    func checkRemoteLayout(_ name: String) throws {
        let native = try SafeTensorsFile(path: try Self.conversions.folder(name).appendingPathComponent("model.safetensors").path)
        let remote = try SafeTensorsFile(path: try Self.conversions.folder(name + "-remote").appendingPathComponent("model.safetensors").path)
        XCTAssertEqual(Set(native.tensors.keys), Set(remote.tensors.keys))
        for tensor in native.tensors.keys.sorted() {
            XCTAssertEqual(Array(try native.floats(tensor)), Array(try remote.floats(tensor)), "\(name): \(tensor)")
        }
        let a = try ModelConfig.load(from: try Self.conversions.folder(name).appendingPathComponent("config.json"))
        let b = try ModelConfig.load(from: try Self.conversions.folder(name + "-remote").appendingPathComponent("config.json"))
        XCTAssertEqual(a.encoder.rotary, b.encoder.rotary)
        XCTAssertEqual(a.encoder.hiddenAct, b.encoder.hiddenAct)
    }

    func testNomicRemoteCodeLayoutConvertsToTheSameTensors() throws { try checkRemoteLayout("nomic") }
    func testGteRemoteCodeLayoutConvertsToTheSameTensors() throws { try checkRemoteLayout("gte") }

    func testModernBertFillMaskTop10() throws {
        let fills = try XCTUnwrap(try model("modernbert").fill_mask)
        XCTAssertGreaterThanOrEqual(fills.count, 5)
        let encoder = try loadEncoder(folder: try Self.conversions.folder("modernbert"), threads: 2)
        for fill in fills {
            XCTAssertGreaterThan(fill.smallest_gap, 1e-3, "the random head's top-10 is decisive")
            let output = try encoder.encode([fill.input_ids])
            let logits = try encoder.maskedLMLogits(output, at: [(0, fill.position)])[0]
            XCTAssertEqual(topK(softmax(logits), k: 10).map(\.id), fill.top_ids, "mask at \(fill.position)")
        }
    }

    /// INT8 and BF16 beside FP32 on each architecture: mean-pooled vectors of the texts and
    /// documents, cosine with transformers' FP32. Random weights: the figure says the kernels
    /// run these layers, not how a trained model fares.
    func testInt8AndBF16() throws {
        for name in ["nomic", "gte", "modernbert"] {
            let reference = try model(name), folder = try Self.conversions.folder(name)
            _ = try quantizedOnce(folder)
            for precision in [Precision.int8, .int8Weights, .bf16] {
                let encoder = try loadEncoder(folder: folder, threads: 2, precision: precision)
                var cosines: [Float] = []
                for sequence in reference.texts + reference.documents {
                    let mean = try pooled(encoder, try encoder.encode([sequence.input_ids]))[.mean]![0]
                    cosines.append(cosine(mean, sequence.mean))
                }
                print("\(name) \(precision.rawValue): mean-pooled cosine with transformers FP32, min \(cosines.min()!), mean \(cosines.reduce(0, +) / Float(cosines.count))")
                XCTAssertGreaterThanOrEqual(cosines.min()!, precision == .bf16 ? 0.999 : 0.98, "\(name) \(precision.rawValue)")
            }
        }
    }

    /// A batch of more than `chunkTokensPerThread` tokens runs in chunks of whole sequences
    /// (`PackedSequences.encoderChunks`): each sequence still gets what it gets alone.
    func testLongBatchRunsInChunksThatEqualEachSequenceAlone() throws {
        for name in ["nomic", "gte", "modernbert"] {
            let encoder = try loadEncoder(folder: Self.conversions.folder(name), threads: 1)
            try checkLongBatchEqualsEachSequenceAlone(encoder, try model(name).texts.map(\.input_ids), name)
        }
    }

    // MARK: ModernBERT's classifiers

    struct Classifiers: Decodable {
        struct Rerank: Decodable { let input_ids: [[Int32]]; let logits: [[Float]] }
        struct Tokens: Decodable { let input_ids: [[Int32]]; let logits: [[[Float]]]; let labels: [String] }
        let rerank: Rerank
        let tokens: Tokens
        enum CodingKeys: String, CodingKey { case rerank = "modernbert-rerank", tokens = "modernbert-ner" }
    }

    func classifiers() throws -> Classifiers {
        try JSONDecoder().decode(Classifiers.self, from: Data(contentsOf: Self.fixtures.appendingPathComponent("classifiers.json")))
    }

    /// A cross-encoder (ModernBertForSequenceClassification, one label, mean pooling): the query
    /// and document pairs tokenised as transformers does, their scores within 1e-4.
    func testModernBertCrossEncoderMatchesTransformers() throws {
        let reference = try classifiers().rerank
        let folder = try Self.conversions.folder("modernbert-rerank")
        let loaded = try loadModel(folder: folder, threads: 2)
        XCTAssertEqual(loaded.encoder.config.heads.task?.classifierPooling, .mean)
        XCTAssertTrue(loaded.encoder.heads.contains(.sequenceClassification))
        let head = try SequenceClassificationHead(loaded.encoder)
        let scores = head(try loaded.encoder.encode(reference.input_ids), HeadBatch(threads: 2))
        XCTAssertEqual(scores.count, 8)
        for (i, (got, expected)) in zip(scores, reference.logits).enumerated() {
            XCTAssertEqual(got.count, 1)
            XCTAssertLessThanOrEqual(maxAbsDifference(got, expected), 1e-4, "pair \(i)")
        }
    }

    /// ModernBertForTokenClassification: every token through the prediction head, then the classifier.
    func testModernBertTokenClassifierMatchesTransformers() throws {
        let reference = try classifiers().tokens
        let encoder = try loadEncoder(folder: try Self.conversions.folder("modernbert-ner"), threads: 2)
        let head = try TokenClassificationHead(encoder)
        XCTAssertEqual(head.labels, reference.labels)
        let logits = head(try encoder.encode(reference.input_ids), HeadBatch(threads: 2))
        XCTAssertEqual(logits.count, 4)
        for (s, (got, expected)) in zip(logits, reference.logits).enumerated() {
            XCTAssertEqual(got.count, expected.count)
            XCTAssertLessThanOrEqual(maxAbsDifference(got.flatMap { $0 }, expected.flatMap { $0 }), 1e-4, "text \(s)")
        }
    }
}
