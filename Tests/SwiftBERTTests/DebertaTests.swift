import Foundation
import XCTest
@testable import SwiftBERT

/// DeBERTa-v3 against tools/fixtures/make_deberta_fixtures.py: RANDOM-weight checkpoints made by
/// transformers' DebertaV2 classes (3 layers, hidden 64, 4 heads; disentangled attention with c2p
/// and p2c, position_buckets 16, normalised relative embeddings, no absolute positions, no token
/// types) under the masked-LM, sequence and token classification heads, and a v2-style encoder
/// (absolute positions, token types, c2p only, unbucketed), with a DebertaV2Tokenizer over a
/// SentencePiece Unigram trained on real text. Random weights: honest for exactness, meaningless
/// as predictions.
final class DebertaTests: XCTestCase {
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/deberta")
    private static let conversions = ConvertedFixtures(fixtures, label: "deberta", quantizes: true)

    /// A fixture folder converted (and quantized) with `bert convert`'s code, once per run.
    static func converted(_ name: String) throws -> URL { try conversions.folder(name) }
    private static let reference: JSONValue = {
        (try? JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: fixtures.appendingPathComponent("reference.json")))) ?? .null
    }()

    static func floats(_ base64: String?) -> [Float] {
        guard let base64, let data = Data(base64Encoded: base64) else { return [] }
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    static func ids(_ value: JSONValue?) -> [Int32] { (value?.array ?? []).compactMap(\.int).map(Int32.init) }

    static func numbers(_ value: JSONValue?) -> [Float] {
        (value?.array ?? []).compactMap { if case let .number(v) = $0 { return Float(v) }; return nil }
    }

    /// The worst |got − expected| over rows of width `h`, relative to 1 + |expected|.
    static func worstError(_ got: [Float], _ expected: [Float]) -> Float {
        zip(got, expected).map { abs($0 - $1) / (1 + abs($1)) }.max() ?? .infinity
    }

    func testConvertsAsDebertaWithItsHeads() throws {
        for (name, task, heads) in [("mlm", nil, ["embed", "fill", "embed_sparse", "embed_all"]), ("classifier", TaskHead.sequenceClassification, ["embed", "predict", "embed_all"]),
                                    ("ner", .tokenClassification, ["embed", "ner", "embed_all"]), ("v2-style", nil, ["embed", "embed_all"])] {
            let model = try loadModel(folder: Self.conversions.folder(name), threads: 1)
            XCTAssertTrue(model.encoder is DebertaEncoderModel, name)
            XCTAssertEqual(model.config.encoder.architecture, .debertaV2, name)
            XCTAssertEqual(model.config.heads.task?.kind, task, name)
            XCTAssertEqual(Set(model.heads.map(\.rawValue)), Set(heads), name)
        }
        let config = try ModelConfig.load(from: Self.conversions.folder("mlm").appendingPathComponent("config.json"))
        XCTAssertEqual(config.encoder.deberta, DebertaConfig(positionBuckets: 16, maxRelativePositions: 512, contentToPosition: true, positionToContent: true,
                                                     positionBiasedInput: false, normalizesRelativeEmbeddings: true))
        XCTAssertFalse(config.encoder.usesTokenTypes)
        XCTAssertEqual(config.encoder.maxSequenceLength, 512)
        let classifier = try ModelConfig.load(from: Self.conversions.folder("classifier").appendingPathComponent("config.json"))
        XCTAssertEqual(classifier.heads.task?.poolerActivation, .gelu)
        let v2 = try ModelConfig.load(from: Self.conversions.folder("v2-style").appendingPathComponent("config.json"))
        XCTAssertEqual(v2.encoder.deberta?.positionBiasedInput, true)
        XCTAssertEqual(v2.encoder.deberta?.span, 24)
        XCTAssertTrue(v2.encoder.usesTokenTypes)
    }

    /// transformers' make_log_bucket_position for every distance up to 4,096, at this fixture's
    /// 16 buckets and at DeBERTa-v3's 256: the float32 log edges fall where torch's do.
    func testRelativePositionBucketsMatchTransformers() throws {
        for (key, buckets) in [("16/512", 16), ("256/512", 256)] {
            let expected = try XCTUnwrap(Self.reference["buckets"]?[key]?.array).compactMap(\.int)
            XCTAssertEqual(expected.count, 4097)
            let config = DebertaConfig(positionBuckets: buckets, maxRelativePositions: 512, contentToPosition: true, positionToContent: true,
                                       positionBiasedInput: false, normalizesRelativeEmbeddings: true)
            // transformers clamps bucket + span into the table's 2 × span rows, as tableRow does.
            func row(_ bucket: Int) -> Int { min(max(bucket + buckets, 0), 2 * buckets - 1) }
            var differences = 0
            for (distance, bucket) in expected.enumerated() {
                if config.tableRow(distance: distance) != row(bucket) || config.tableRow(distance: -distance) != row(-bucket) { differences += 1 }
            }
            XCTAssertEqual(differences, 0, key)
            XCTAssertLessThan(Set(expected).count, expected.count / 4, "\(key): the far distances share log buckets")
        }
    }

    /// HF `tokenizers` on 400 catalogue lines in many scripts and the stress strings: DeBERTa-v3's
    /// Replace (runs of spaces, tabs, new lines), NFC, right Strip, Metaspace and Unigram.
    func testTokenizerMatchesHuggingFace() throws {
        let tokenizer = try Tokenizer.load(folder: Self.conversions.folder("mlm"))
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("tokenizer.json"))
        let records = try XCTUnwrap(JSONDecoder().decode(JSONValue.self, from: data)["records"]?.array)
        XCTAssertGreaterThanOrEqual(records.count, 400)
        var failures: [String] = []
        for record in records {
            let text = try XCTUnwrap(record["text"]?.string), expected = Self.ids(record["ids"])
            let got = tokenizer.encode(text, maxLength: 1 << 20).ids
            if got != expected { failures.append("\(describeLine(text)): \(got) != HF \(expected)") }
        }
        XCTAssertTrue(failures.isEmpty, "\(failures.count) of \(records.count) lines differ:\n" + failures.prefix(5).joined(separator: "\n"))
    }

    /// transformers' last hidden states (float32) on 13 texts, and rows of one of 2,300 tokens,
    /// where distances reach the far log buckets.
    func testLastHiddenStatesMatchTransformers() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("mlm"), threads: 2)
        let tokenizer = try Tokenizer.load(folder: Self.conversions.folder("mlm"))
        let states = try XCTUnwrap(Self.reference["hidden_states"]?.array)
        XCTAssertEqual(states.count, 13)
        var worst: Float = 0
        for state in states {
            let ids = Self.ids(state["input_ids"])
            XCTAssertEqual(tokenizer.encode(try XCTUnwrap(state["text"]?.string), maxLength: 512).ids, ids)
            worst = max(worst, Self.worstError(try encoder.encode([ids]).hiddenStates(0), Self.floats(state["rows"]?.string)))
        }
        print("DeBERTa (random weights) hidden states vs transformers: worst error \(worst) (relative to 1 + |value|)")
        XCTAssertLessThanOrEqual(worst, 1e-4)

        let long = try XCTUnwrap(Self.reference["long"])
        let ids = Self.ids(long["input_ids"]), positions = (long["positions"]?.array ?? []).compactMap(\.int)
        XCTAssertGreaterThanOrEqual(ids.count, 2000)
        let got = try encoder.encode([ids]).hiddenStates(0), h = encoder.config.encoder.hiddenSize
        let rows = positions.flatMap { got[$0 * h ..< ($0 + 1) * h] }
        let longWorst = Self.worstError(rows, Self.floats(long["rows"]?.string))
        print("DeBERTa (random weights) \(ids.count) tokens vs transformers: worst error \(longWorst)")
        XCTAssertLessThanOrEqual(longWorst, 5e-4)
    }

    /// Without absolute positions the encoder takes up to 4,096 tokens (the score bias is n² floats
    /// per head at work); a longer input is a typed error naming the limit, not a trap.
    func testInputsPastTheLimitAreRefusedWithTheLimit() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("mlm"), threads: 2)
        XCTAssertEqual(encoder.config.encoder.positionLimit, 4096)
        let ids = [Int32](repeating: 100, count: 4097)
        XCTAssertThrowsError(try encoder.encode([[1] + Array(ids.dropFirst(2)) + [2]] + [ids])) { error in
            guard case SwiftBERTError.invalidInput = error else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".contains("4096"), "\(error)")
        }
    }

    /// The v2 layout: absolute positions added to the input, two token types (pairs), c2p alone,
    /// and every distance up to 24 its own row.
    func testPositionBiasedV2StyleMatchesTransformers() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("v2-style"), threads: 2)
        let states = try XCTUnwrap(Self.reference["v2_style"]?.array)
        XCTAssertEqual(states.count, 9)
        var worst: Float = 0
        for state in states {
            let output = try encoder.encode([Self.ids(state["input_ids"])], typeIds: [Self.ids(state["token_type_ids"])])
            worst = max(worst, Self.worstError(output.hiddenStates(0), Self.floats(state["rows"]?.string)))
        }
        XCTAssertLessThanOrEqual(worst, 1e-4)
    }

    /// DebertaV2ForSequenceClassification (ContextPooler: dense + GELU on [CLS], then the
    /// classifier) on 20 texts and 11 pairs, through the `TextClassifier` pipeline: ids, token
    /// types and logits.
    func testSequenceClassifierLogitsMatchTransformers() throws {
        let classifier = try TextClassifier(folder: Self.conversions.folder("classifier"), threads: 2)
        XCTAssertEqual(classifier.labels, ["entailment", "neutral", "contradiction"])
        let records = try XCTUnwrap(Self.reference["classifier"]?.array)
        XCTAssertEqual(records.count, 31)
        var worst: Float = 0
        for record in records {
            let expected = Self.numbers(record["logits"])
            let got: [Float]
            if let pair = record["pair"]?.array?.compactMap(\.string) {
                got = try classifier.logits([pair[0]], pairs: [pair[1]])[0]
            } else {
                got = try classifier.logits([try XCTUnwrap(record["text"]?.string)])[0]
            }
            worst = max(worst, maxAbsDifference(got, expected))
        }
        print("DeBERTa (random weights) classifier logits vs transformers: max difference \(worst)")
        XCTAssertLessThanOrEqual(worst, 1e-4)
    }

    /// Zero-shot classification through the NLI classifier, against transformers'
    /// zero-shot-classification pipeline: single-label (softmax of the entailment logits across
    /// labels), multi-label (each label's entailment against contradiction), one label, and a
    /// hypothesis template of its own: the same ranking, scores within 1e-5.
    func testZeroShotMatchesTransformersPipeline() throws {
        let zeroShot = try ZeroShotClassifier(classifier: TextClassifier(folder: Self.conversions.folder("classifier"), threads: 2))
        XCTAssertEqual(zeroShot.entailment, 0)
        XCTAssertEqual(zeroShot.contradiction, 2)
        let records = try XCTUnwrap(Self.reference["zero_shot"]?.array)
        XCTAssertEqual(records.count, 16)
        for record in records {
            let text = try XCTUnwrap(record["text"]?.string), labels = (record["labels"]?.array ?? []).compactMap(\.string)
            let got = try zeroShot.classify([text], labels: labels, template: record["template"]?.string ?? ZeroShotClassifier.defaultTemplate,
                                            multiLabel: record["multi_label"]?.bool ?? false)[0]
            XCTAssertEqual(got.map(\.label), (record["ranked"]?.array ?? []).compactMap(\.string), text)
            XCTAssertLessThanOrEqual(maxAbsDifference(got.map(\.score), Self.numbers(record["scores"])), 1e-5, text)
        }
        // A classifier without an entailment label cannot do it, and says so.
        let relabelled = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-deberta-relabelled-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: relabelled)
        try FileManager.default.copyItem(at: Self.conversions.folder("classifier"), to: relabelled)
        defer { try? FileManager.default.removeItem(at: relabelled) }
        var config = try ModelConfig.load(from: relabelled.appendingPathComponent("config.json"))
        config.heads.task?.labels = ["yes", "maybe", "no"]
        try config.write(to: relabelled.appendingPathComponent("config.json"))
        XCTAssertThrowsError(try ZeroShotClassifier(classifier: TextClassifier(folder: relabelled, threads: 1))) {
            XCTAssertTrue("\($0)".contains("entailment"), "\($0)")
        }
        XCTAssertThrowsError(try zeroShot.classify(["x"], labels: ["a"], template: "no placeholder")) { XCTAssertTrue("\($0)".contains("{}")) }
    }

    /// DebertaV2ForTokenClassification: every token's logits.
    func testTokenClassifierLogitsMatchTransformers() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("ner"), threads: 2)
        let head = try TokenClassificationHead(encoder)
        XCTAssertEqual(head.labels, ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
        for record in try XCTUnwrap(Self.reference["ner"]?.array) {
            let ids = Self.ids(record["input_ids"])
            let got = head(try encoder.encode([ids]), HeadBatch(threads: 2))[0].flatMap { $0 }
            XCTAssertLessThanOrEqual(maxAbsDifference(got, Self.floats(record["logits"]?.string)), 1e-4)
        }
        // The pipeline runs on it.
        let entities = try TokenClassifier(model: encoder, tokenizer: Tokenizer.load(folder: Self.conversions.folder("ner")))
            .entities(["Émilie a mangé des crêpes à Genève."])
        XCTAssertEqual(entities.count, 1)
    }

    /// The masked-LM head (transform, GELU, LayerNorm, the tied decoder and its bias): the top 10
    /// ids at each mask, in order, and their logits; `FillMask` gives the same candidates.
    func testFillMaskTopTenMatchesTransformers() throws {
        let folder = try Self.conversions.folder("mlm")
        let encoder = try loadEncoder(folder: folder, threads: 2)
        let fill = try FillMask(model: encoder, tokenizer: Tokenizer.load(folder: folder))
        let records = try XCTUnwrap(Self.reference["fill_mask"]?.array)
        XCTAssertGreaterThanOrEqual(records.count, 15)
        for record in records {
            let ids = Self.ids(record["input_ids"]), position = try XCTUnwrap(record["position"]?.int)
            let expectedIds = Self.ids(record["top_ids"]), expectedLogits = Self.numbers(record["top_logits"])
            let hidden = try encoder.encode([ids]).hiddenStates(0), h = encoder.config.encoder.hiddenSize
            let logits = try encoder.maskedLMLogits(hiddenRows: Array(hidden[position * h ..< (position + 1) * h]), count: 1)
            let top = logits.indices.sorted { logits[$0] > logits[$1] }.prefix(10)
            XCTAssertEqual(top.map(Int32.init), expectedIds, describeLine(record["text"]?.string ?? ""))
            XCTAssertLessThanOrEqual(maxAbsDifference(top.map { logits[$0] }, expectedLogits), 1e-4)
            let predicted = try fill.predict(try XCTUnwrap(record["text"]?.string), topK: 10)
            XCTAssertEqual(predicted.first?.candidates.map(\.id), expectedIds)
        }
    }

    /// Batches of mixed lengths give each sequence what it gets alone: relative positions are
    /// counted within each packed sequence.
    func testBatchesEqualEachSequenceAlone() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("mlm"), threads: 1)
        let sequences = try XCTUnwrap(Self.reference["hidden_states"]?.array).map { Self.ids($0["input_ids"]) }
        try checkLongBatchEqualsEachSequenceAlone(encoder, sequences, "deberta")
    }

    /// BF16 and INT8 against FP32 on the hidden states, reported, with floors far below what they
    /// measure so that a broken path fails.
    func testReducedPrecisionsAgainstFP32() throws {
        let folder = try Self.conversions.folder("mlm")
        let sequences = try XCTUnwrap(Self.reference["hidden_states"]?.array).map { Self.ids($0["input_ids"]) }
        let reference = try loadEncoder(folder: folder, threads: 2).encode(sequences)
        for precision in [Precision.bf16, .int8, .int8Weights, .int8Attention] {
            let output = try loadEncoder(folder: folder, threads: 2, precision: precision).encode(sequences)
            let h = output.hiddenSize
            var cosines: [Float] = [], largest: Float = 0
            for s in sequences.indices {
                largest = max(largest, maxAbsDifference(output.hiddenStates(s), reference.hiddenStates(s)))
                let (a, b) = (output.hiddenStates(s), reference.hiddenStates(s))
                for t in 0..<sequences[s].count { cosines.append(cosine(Array(a[t * h ..< (t + 1) * h]), Array(b[t * h ..< (t + 1) * h]))) }
            }
            let mean = cosines.reduce(0, +) / Float(cosines.count)
            print("DeBERTa (random weights) \(precision.rawValue) vs FP32: \(cosines.count) token vectors, mean cosine \(mean), min \(cosines.min()!), largest difference \(largest)")
            XCTAssertGreaterThan(mean, 0.95, precision.rawValue)
            XCTAssertGreaterThan(largest, 0, "\(precision.rawValue) runs its own arithmetic")
        }
    }

    /// A DeBERTa checkpoint SwiftBERT does not run is refused at conversion, saying why.
    func testUnsupportedDebertaConfigsAreRefusedWithTheReason() throws {
        let source = Self.fixtures.appendingPathComponent("mlm")
        let cases: [(String, [String: Any], String)] = [
            ("convolution", ["conv_kernel_size": 3], "conv_kernel_size"),
            ("separate position projections", ["share_att_key": false], "share_att_key"),
            ("no relative attention", ["relative_attention": false], "relative_attention"),
            ("factorised embeddings", ["embedding_size": 32], "embedding_size"),
            ("question answering", ["architectures": ["DebertaV2ForQuestionAnswering"]], "DebertaV2ForQuestionAnswering"),
            ("other scores", ["pos_att_type": ["c2p", "p2p"]], "p2p"),
            ("other activation", ["hidden_act": "relu"], "hidden_act"),
        ]
        try checkConfigChangesAreRefused(source, label: "deberta", cases)
    }
}
