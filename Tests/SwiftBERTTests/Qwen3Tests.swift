import Foundation
import XCTest
@testable import SwiftBERT

/// Qwen3 (Qwen3-Embedding's architecture) against tools/fixtures/make_qwen3_fixtures.py: a
/// RANDOM-weight Qwen3Model made by transformers (3 layers, hidden 64, 4 query heads sharing 2
/// key/value heads of 32), saved as sentence-transformers saves Qwen3-Embedding (last-token
/// pooling, Normalize, the `query` instruction prompt), with a Qwen2-style byte-level BPE
/// tokenizer trained on real text. Random weights: honest for exactness, meaningless as
/// embeddings.
final class Qwen3Tests: XCTestCase {
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/qwen3")
    private static let conversions = ConvertedFixtures(fixtures, label: "qwen3", quantizes: true)

    /// The fixture checkpoint converted (and quantized) with `bert convert`'s code, once per run.
    static func converted() throws -> URL { try conversions.folder("model") }

    static func fixture(_ file: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: fixtures.appendingPathComponent(file)))
    }

    struct Record {
        let text: String
        let prompt: String?
        let ids: [Int32]
        let vector: [Float]
    }

    static func records() throws -> [Record] {
        try XCTUnwrap(fixture("reference.json")["embeddings"]?.array).map { record in
            Record(text: record["text"]?.string ?? "", prompt: record["prompt_name"]?.string,
                   ids: (record["input_ids"]?.array ?? []).compactMap(\.int).map(Int32.init),
                   vector: GemmaTests.halfVector(record["vector"]?.string))
        }
    }

    func testConvertsAsQwen3WithCausalLastTokenPooling() throws {
        let folder = try Self.conversions.folder("model")
        let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
        XCTAssertEqual(config.encoder.architecture, .qwen3)
        XCTAssertEqual(config.encoder.qwen3, Qwen3Config(headDim: 32, keyValueHeads: 2, ropeTheta: 1_000_000))
        XCTAssertEqual(config.heads.sentence.pooling, .lastToken)
        XCTAssertEqual(config.heads.sentence.prompts?["query"], try Self.fixture("reference.json")["query_prompt"]?.string)
        XCTAssertFalse(config.encoder.usesTokenTypes)
        XCTAssertTrue(try loadEncoder(folder: folder) is Qwen3EncoderModel)
    }

    /// HF `tokenizers` on 400 catalogue lines in many scripts and the stress strings (contractions,
    /// digits, runs of spaces and new lines, emoji, the added tokens in text): the Qwen2 Split
    /// regex, byte-level BPE, NFC, and `<|endoftext|>` appended by the post-processor.
    func testTokenizerMatchesHuggingFace() throws {
        let tokenizer = try Tokenizer.load(folder: Self.conversions.folder("model"))
        let records = try XCTUnwrap(Self.fixture("tokenizer.json")["records"]?.array)
        XCTAssertGreaterThanOrEqual(records.count, 400)
        var failures: [String] = []
        for record in records {
            let text = try XCTUnwrap(record["text"]?.string)
            let expected = (record["ids"]?.array ?? []).compactMap(\.int).map(Int32.init)
            let got = tokenizer.encode(text, maxLength: 1 << 20).ids
            if got != expected { failures.append("\(describeLine(text)): \(got) != HF \(expected)") }
        }
        XCTAssertTrue(failures.isEmpty, "\(failures.count) of \(records.count) lines differ:\n" + failures.prefix(5).joined(separator: "\n"))
    }

    /// transformers' last hidden states (float16 in the fixture) row by row, on three texts of
    /// up to 540 tokens: causal attention, RoPE, the grouped heads and the two RMSNorms.
    func testLastHiddenStatesMatchTransformers() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("model"), threads: 2)
        let states = try XCTUnwrap(Self.fixture("reference.json")["hidden_states"]?.array)
        XCTAssertEqual(states.count, 3)
        for state in states {
            let ids = (state["input_ids"]?.array ?? []).compactMap(\.int).map(Int32.init)
            let rows = try XCTUnwrap(state["rows"]?.array).map { GemmaTests.halfVector($0.string) }
            XCTAssertEqual(rows.count, ids.count)
            let worst = worstErrorInHalfRoundings(try encoder.encode([ids]).hiddenStates(0), rows, hiddenSize: encoder.config.encoder.hiddenSize)
            XCTAssertLessThanOrEqual(worst, 1, "\(ids.count) tokens: worst error in units of the fixture's rounding")
        }
    }

    /// sentence-transformers' `encode` (batches of 16, padded on the left as Qwen3-Embedding's
    /// tokenizer is) on 156 texts, and 40 with the `query` instruction prompt: the same ids, and
    /// the same unit vectors to the fixture's float16 rounding. SwiftBERT packs sequences without
    /// padding, so each vector is its sequence's last row: this is the left-padded answer.
    func testFP32MatchesSentenceTransformersWithAndWithoutPrompt() throws {
        let embedder = try SentenceEmbedder(folder: Self.conversions.folder("model"), threads: 2)
        let records = try Self.records()
        XCTAssertGreaterThanOrEqual(records.count, 190)
        XCTAssertTrue(records.contains { $0.ids.count > 2048 })
        for record in records {
            let prompt = record.prompt.flatMap { embedder.model.config.heads.sentence.prompts?[$0] } ?? ""
            let ids = embedder.tokenizer.encode(prompt + record.text, maxLength: embedder.model.config.encoder.maxSequenceLength).ids
            XCTAssertEqual(ids, record.ids, describeLine(record.text))
        }
        let vectors = try GemmaTests.embed(embedder, records.map { .init(text: $0.text, prompt: $0.prompt, ids: $0.ids, vector: $0.vector, vector256: []) })
        let cosines = zip(vectors, records).map { cosine($0, $1.vector) }
        let worst = cosines.indices.min { cosines[$0] < cosines[$1] }!
        print("Qwen3 (random weights) FP32 vs sentence-transformers: \(records.count) texts, min cosine \(cosines[worst]) (\(records[worst].ids.count) tokens)")
        XCTAssertGreaterThanOrEqual(cosines[worst], 0.9999995, "text \(worst): \(describeLine(records[worst].text))")
        for (vector, record) in zip(vectors, records) {
            XCTAssertLessThanOrEqual(maxAbsDifference(vector, record.vector), 1e-3, describeLine(record.text))
        }
    }

    /// Batches of any composition give each text what it gets alone (the packed batch and its
    /// chunks never let one sequence's tokens see another's), and the last token read is each
    /// sequence's own.
    func testBatchesEqualEachSequenceAlone() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("model"), threads: 1)
        let sequences = Array(try Self.records().prefix(24).map(\.ids))
        try checkLongBatchEqualsEachSequenceAlone(encoder, sequences, "qwen3")
    }

    /// BF16 and INT8 against FP32, reported, with floors far below what they measure so that a
    /// broken path fails.
    func testReducedPrecisionsAgainstFP32() throws {
        let folder = try Self.conversions.folder("model")
        let records = Array(try Self.records().prefix(60)).map { GemmaTests.Record(text: $0.text, prompt: $0.prompt, ids: $0.ids, vector: $0.vector, vector256: []) }
        let reference = try GemmaTests.embed(try SentenceEmbedder(folder: folder, threads: 2), records)
        for precision in [Precision.bf16, .int8, .int8Weights] {
            let vectors = try GemmaTests.embed(try SentenceEmbedder(folder: folder, threads: 2, precision: precision), records)
            let cosines = zip(vectors, reference).map { cosine($0, $1) }
            let mean = cosines.reduce(0, +) / Float(cosines.count)
            print("Qwen3 (random weights) \(precision.rawValue) vs FP32: \(records.count) texts, mean cosine \(mean), min \(cosines.min()!)")
            XCTAssertGreaterThan(mean, 0.95, precision.rawValue)
        }
    }

    /// A Qwen3 checkpoint SwiftBERT does not run is refused at conversion, saying why.
    func testUnsupportedQwen3ConfigsAreRefusedWithTheReason() throws {
        let source = Self.fixtures.appendingPathComponent("model")
        let cases: [(String, [String: Any], String)] = [
            ("sliding window", ["use_sliding_window": true], "use_sliding_window"),
            ("classifier head", ["architectures": ["Qwen3ForSequenceClassification"]], "Qwen3ForSequenceClassification"),
            ("other activation", ["hidden_act": "gelu"], "hidden_act"),
            ("scaled RoPE", ["rope_parameters": ["rope_type": "yarn", "rope_theta": 1e6, "factor": 4]], "yarn"),
            ("uneven groups", ["num_key_value_heads": 3], "num_key_value_heads"),
        ]
        try checkConfigChangesAreRefused(source, label: "qwen3", cases)
    }
}
