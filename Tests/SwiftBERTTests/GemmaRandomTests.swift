import Foundation
import XCTest
@testable import SwiftBERT

/// The Gemma 3 encoder against tools/fixtures/make_gemma_random_fixture.py: a RANDOM-weight
/// Gemma3TextModel made by transformers (3 layers, hidden 96, 3 query heads sharing 1 key/value
/// head of 32, query_pre_attn_scalar 20, sliding window 8 on two layers), so the forward pass is
/// checked on every machine, without EmbeddingGemma's weights (GemmaTests). Random weights:
/// honest for exactness, meaningless as embeddings.
final class GemmaRandomTests: XCTestCase {
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/gemma-random")
    private static let conversions = ConvertedFixtures(fixtures, label: "gemma-random")

    static func states() throws -> [(ids: [Int32], rows: [[Float]])] {
        let reference = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: fixtures.appendingPathComponent("reference.json")))
        return try XCTUnwrap(reference["hidden_states"]?.array).map { state in
            ((state["input_ids"]?.array ?? []).compactMap(\.int).map(Int32.init),
             (state["rows"]?.array ?? []).map { GemmaTests.halfVector($0.string) })
        }
    }

    /// transformers' last hidden states (float16 in the fixture) row by row, on 43, 110 and 481
    /// tokens, on 1 and 2 threads: the grouped heads, the scores' own scale, the sliding and
    /// full layers with their RoPE bases, and the four RMSNorms of a layer.
    func testLastHiddenStatesMatchTransformers() throws {
        let folder = try Self.conversions.folder("model")
        let states = try Self.states()
        XCTAssertEqual(states.map(\.ids.count), [43, 110, 481])
        for threads in [1, 2] {
            let encoder = try loadEncoder(folder: folder, threads: threads)
            XCTAssertEqual(encoder.config.encoder.architecture, .gemma3)
            let h = encoder.config.encoder.hiddenSize
            for state in states {
                XCTAssertEqual(state.rows.count, state.ids.count)
                XCTAssertEqual(Set(state.rows.map(\.count)), [h])
                let worst = worstErrorInHalfRoundings(try encoder.encode([state.ids]).hiddenStates(0), state.rows, hiddenSize: h)
                XCTAssertLessThanOrEqual(worst, 1, "\(state.ids.count) tokens, \(threads) threads: worst error in units of the fixture's rounding")
            }
        }
    }

    /// The three sequences in one batch give each what it gets alone.
    func testBatchesEqualEachSequenceAlone() throws {
        let encoder = try loadEncoder(folder: Self.conversions.folder("model"), threads: 2)
        try checkLongBatchEqualsEachSequenceAlone(encoder, try Self.states().map(\.ids), "gemma-random")
    }
}
