import XCTest
@testable import SwiftBERT

/// The FP32 engine against PyTorch + transformers (fixtures from tools/fixtures/make_reference_fixtures.py).
final class EngineExactnessTests: XCTestCase {
    func checkLastHiddenState(_ name: String) throws {
        let reference = try Reference(name)
        let model = try loadModel(name)
        XCTAssertGreaterThanOrEqual(reference.meta.input_ids.count, 20)
        let output = try model.encode(reference.meta.input_ids)
        var worst: Float = 0
        for i in 0..<output.count {
            let diff = maxAbsDifference(output.hiddenStates(i), try reference.tensor("last_hidden_state.\(i)"))
            XCTAssertLessThanOrEqual(diff, 1e-4, "\(name) sentence \(i): \(reference.meta.sentences[i])")
            worst = max(worst, diff)
        }
        print("\(name) last_hidden_state: worst max-abs difference \(worst) over \(output.count) sentences")
    }

    func testMiniLMLastHiddenStateMatchesPyTorch() throws { try checkLastHiddenState("all-MiniLM-L6-v2") }
    func testSpladeLastHiddenStateMatchesPyTorch() throws { try checkLastHiddenState("splade-tiny") }

    func testMiniLMSentenceEmbeddingsMatchSentenceTransformers() throws {
        let reference = try Reference("all-MiniLM-L6-v2")
        let model = try loadModel("all-MiniLM-L6-v2")
        let embeddings = try SentenceHead(model)(try model.encode(reference.meta.input_ids), HeadBatch(threads: model.threads))
        for (i, e) in embeddings.enumerated() {
            let expected = try reference.tensor("sentence_embedding.\(i)")
            XCTAssertGreaterThanOrEqual(cosine(e, expected), 0.99999, "sentence \(i)")
            XCTAssertEqual(e.reduce(0) { $0 + $1 * $1 }, 1, accuracy: 1e-5, "L2-normalised")
        }
    }

    func testMiniLMPublishedPairCosine() throws {
        let pair = try XCTUnwrap(try Reference("all-MiniLM-L6-v2").meta.pair)
        let model = try loadModel("all-MiniLM-L6-v2")
        let e = try SentenceHead(model)(try model.encode(pair.input_ids), HeadBatch(threads: model.threads))
        XCTAssertEqual(cosine(e[0], e[1]), 0.7553, accuracy: 0.0005)
        XCTAssertEqual(cosine(e[0], e[1]), pair.cosine, accuracy: 1e-5)
    }

    func testSpladeFillMaskTop10MatchesPyTorch() throws {
        let fills = try XCTUnwrap(try Reference("splade-tiny").meta.fill_mask)
        XCTAssertGreaterThanOrEqual(fills.count, 20)
        let model = try loadModel("splade-tiny")
        let output = try model.encode(fills.map(\.input_ids))
        var positions: [(sequence: Int, position: Int)] = []
        for (s, fill) in fills.enumerated() { for p in fill.mask_positions { positions.append((s, p)) } }
        let logits = try model.maskedLMLogits(output, at: positions)
        var expected: [([Int32], [Float])] = []
        for fill in fills { for k in fill.mask_positions.indices { expected.append((fill.top_ids[k], fill.top_probabilities[k])) } }
        for (row, (ids, probabilities)) in zip(logits, expected) {
            let top = topK(softmax(row), k: 10)
            XCTAssertEqual(top.map(\.id), ids)
            for (got, want) in zip(top.map(\.probability), probabilities) { XCTAssertEqual(got, want, accuracy: 1e-4) }
        }
    }

    // MARK: Layer by layer, each fed PyTorch's own input, so a regression points at its layer.

    func checkLayers(_ name: String) throws {
        let reference = try Reference(name)
        let model = try loadModel(name)
        let h = model.config.encoder.hiddenSize
        for i in 0..<4 {
            let ids = reference.meta.input_ids[i]
            let context = model.context(for: PackedSequences(lengths: [ids.count]))
            var x = [Float](repeating: 0, count: ids.count * h)
            x.withUnsafeMutableBufferPointer {
                model.embeddings(ids: ids, typeIds: .init(repeating: 0, count: ids.count), into: $0.baseAddress!, context)
            }
            XCTAssertLessThanOrEqual(maxAbsDifference(x, try reference.tensor("hidden_states.0.\(i)")), 1e-5, "\(name) embeddings, sentence \(i)")

            x = try reference.tensor("hidden_states.0.\(i)")
            x.withUnsafeMutableBufferPointer { model.layers[0].attention($0.baseAddress!, context) }
            XCTAssertLessThanOrEqual(maxAbsDifference(x, try reference.tensor("layer0_attention.\(i)")), 1e-5, "\(name) layer 0 attention, sentence \(i)")

            x = try reference.tensor("layer0_attention.\(i)")
            x.withUnsafeMutableBufferPointer { feedForward(model.layers[0], $0.baseAddress!, context) }
            XCTAssertLessThanOrEqual(maxAbsDifference(x, try reference.tensor("hidden_states.1.\(i)")), 1e-5, "\(name) layer 0 feed-forward, sentence \(i)")

            for l in 1..<model.layers.count {
                x = try reference.tensor("hidden_states.\(l).\(i)")
                x.withUnsafeMutableBufferPointer {
                    model.layers[l].attention($0.baseAddress!, context)
                    feedForward(model.layers[l], $0.baseAddress!, context)
                }
                XCTAssertLessThanOrEqual(maxAbsDifference(x, try reference.tensor("hidden_states.\(l + 1).\(i)")), 1e-4, "\(name) layer \(l), sentence \(i)")
            }
        }
    }

    /// Hugging Face's feed_forward_chunk: intermediate (dense, GELU), then output (dense, residual, LayerNorm).
    private func feedForward(_ layer: BertLayer, _ x: UnsafeMutablePointer<Float>, _ context: ForwardContext) {
        layer.intermediate(x, into: context.wide, context)
        layer.output(context.wide, residual: x, context)
    }

    func testMiniLMLayerByLayer() throws { try checkLayers("all-MiniLM-L6-v2") }
    func testSpladeLayerByLayer() throws { try checkLayers("splade-tiny") }

    // MARK: Batching and threads

    func testSequenceAloneEqualsSequenceInBatch() throws {
        let reference = try Reference("all-MiniLM-L6-v2")
        let model = try loadModel("all-MiniLM-L6-v2")
        let batch = try model.encode(reference.meta.input_ids)
        for i in [0, 5, 23] {
            let alone = try model.encode([reference.meta.input_ids[i]])
            XCTAssertLessThanOrEqual(maxAbsDifference(alone.hiddenStates(0), batch.hiddenStates(i)), 1e-5)
        }
    }

    /// `BertModel.encode` runs a batch of more than `chunkTokensPerThread` tokens a thread in
    /// chunks of sequences: every sequence still gets what it gets alone, in every chunk and
    /// precision. (MobileBERT and the rotary encoders: the same test in their suites.)
    func testLongBatchRunsInChunksThatEqualEachSequenceAlone() throws {
        let ids = try Reference("all-MiniLM-L6-v2").meta.input_ids
        for precision in [Precision.fp32, .int8] {
            let model = try BertModel(folder: convertedModel("all-MiniLM-L6-v2"), threads: 1, precision: precision)
            try checkLongBatchEqualsEachSequenceAlone(model, ids, "\(precision)")
        }
    }

    func testChunksCoverTheSequencesInOrderWithinTheBudget() {
        let sequences = PackedSequences(lengths: [300, 200, 12, 100, 600, 10, 502])
        XCTAssertEqual(sequences.chunks(tokens: 512), [0..<3, 3..<4, 4..<5, 5..<7])  // 512 fits; 600 alone
        XCTAssertEqual(sequences.chunks(tokens: 10_000), [0..<7])
        XCTAssertEqual(sequences.chunks(tokens: 1), (0..<7).map { $0..<($0 + 1) })
        XCTAssertEqual(PackedSequences(lengths: []).chunks(tokens: 512), [])
        // Each chunk's own layout and its rows in the batch, at 512 tokens a thread.
        let chunks = sequences.encoderChunks(threads: 1)
        XCTAssertEqual(chunks.map(\.tokens), [0..<512, 512..<612, 612..<1212, 1212..<1724])
        XCTAssertEqual(chunks.map(\.sequences.lengths), [[300, 200, 12], [100], [600], [10, 502]])
        XCTAssertEqual(chunks.map(\.sequences.starts), [[0, 300, 500], [0], [0], [0, 10]])
        XCTAssertEqual(sequences.encoderChunks(threads: 2).map(\.tokens), [0..<612, 612..<1222, 1222..<1724])  // 1,024 a chunk
    }

    func testSameInputSameOutputAcrossRunsAndThreadCounts() throws {
        let ids = try Reference("all-MiniLM-L6-v2").meta.input_ids
        let one = try loadModel("all-MiniLM-L6-v2", threads: 1)
        let two = try loadModel("all-MiniLM-L6-v2", threads: 2)
        let first = try two.encode(ids), second = try two.encode(ids), single = try one.encode(ids)
        for i in 0..<ids.count {
            XCTAssertEqual(first.hiddenStates(i), second.hiddenStates(i), "repeatable, sentence \(i)")
            // Column splits change OpenBLAS edge kernels: equal within the batching tolerance (1e-5).
            XCTAssertLessThanOrEqual(maxAbsDifference(first.hiddenStates(i), single.hiddenStates(i)), 1e-5, "threads, sentence \(i)")
        }
    }

    func testInvalidTokenIdsAreRejected() throws {
        let model = try loadModel("splade-tiny")
        XCTAssertThrowsError(try model.encode([[101, 40000, 102]]))
        XCTAssertThrowsError(try model.encode([[]]))
        XCTAssertThrowsError(try model.encode([]))
        XCTAssertThrowsError(try model.encode([[Int32](repeating: 1000, count: 513)]))
        XCTAssertThrowsError(try model.encode([[101, 102]], typeIds: [[0, 2]]))
    }
}
