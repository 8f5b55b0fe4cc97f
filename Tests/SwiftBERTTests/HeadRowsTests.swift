import Foundation
import XCTest
@testable import SwiftBERT

/// The last layer for the rows a head reads (`HeadRows`): a [CLS]-pooled embedder, a classifier,
/// a cross-encoder or fill-mask asks for one row (or its masks') of each sequence, and BertModel
/// runs the last layer's queries, attention output and feed-forward network for those alone.
/// Each row read must be the same, bit for bit, as in a pass over every row: in every precision,
/// on 1 and 2 threads, in batches of mixed lengths that span several chunks.
final class HeadRowsTests: XCTestCase {
    func testRowsOfASequence() {
        let ids: [Int32] = [101, 5, 103, 7, 103, 102]
        XCTAssertEqual(HeadRows.all.rows(of: ids[...]), 0..<6)
        XCTAssertEqual(HeadRows.position(0).rows(of: ids[...]), 0..<1)
        XCTAssertEqual(HeadRows.position(3).rows(of: ids[...]), 3..<4)
        // Past the end: row 0, as [CLS] pooling after a prompt longer than the text falls back.
        XCTAssertEqual(HeadRows.position(6).rows(of: ids[...]), 0..<1)
        XCTAssertEqual(HeadRows.last.rows(of: ids[...]), 5..<6)
        XCTAssertEqual(HeadRows.token(103).rows(of: ids[...]), 2..<5)
        XCTAssertEqual(HeadRows.token(999).rows(of: ids[...]), 0..<0)
        // A slice that does not start at index 0.
        XCTAssertEqual(HeadRows.token(103).rows(of: ([1, 2] + ids)[2...]), 2..<5)
        XCTAssertEqual(HeadRows.last.rows(of: ([] as [Int32])[...]), 0..<0)
    }

    /// Sentences of the fixture, one of them 300 tokens long (its rows past the first query
    /// blocks), 48 in all: more tokens than one chunk of a pass holds at 2 threads.
    func batch(_ tokenizer: Tokenizer) throws -> [[Int32]] {
        let lines = try String(contentsOf: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/sentences.txt"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        var batch = lines.prefix(47).map { tokenizer.encode($0, maxLength: 512).ids }
        batch.insert(tokenizer.encode(lines.prefix(40).joined(separator: " "), maxLength: 300).ids, at: 5)
        XCTAssertEqual(batch[5].count, 300)
        XCTAssertGreaterThan(batch.reduce(0) { $0 + $1.count }, 2 * PackedSequences.chunkTokensPerThread)
        return batch
    }

    /// Each sequence's rows read, by a different rule in turn (a word's id as the "mask").
    func reads(_ batch: [[Int32]]) -> [HeadRows] {
        batch.indices.map { s in
            switch s % 6 {
            case 0: .position(0)
            case 1: .last
            case 2: .position(3)
            case 3: .all
            case 4: .token(batch[s][1])
            default: .position(1_000)
            }
        }
    }

    func assertReadRowsEqualAFullPass(_ encoder: any EncoderModel, _ batch: [[Int32]], _ label: String,
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        let reads = reads(batch)
        let full = try encoder.encode(batch)
        let partial = try encoder.encode(batch, typeIds: nil, profile: nil, reading: reads)
        XCTAssertNotNil(partial.computedRows, "\(label): the last layer ran every row", file: file, line: line)
        var compared = 0, differing = 0
        for (s, rows) in reads.enumerated() {
            XCTAssertEqual(partial.computedRows?[s], rows.rows(of: batch[s][...]), "\(label) sequence \(s)", file: file, line: line)
            for position in rows.rows(of: batch[s][...]) {
                let h = full.hiddenSize
                let expected = full.withRow(sequence: s, position: position) { Array(UnsafeBufferPointer(start: $0, count: h)) }
                let found = partial.withRow(sequence: s, position: position) { Array(UnsafeBufferPointer(start: $0, count: h)) }
                if expected.map(\.bitPattern) != found.map(\.bitPattern) { differing += 1 }
                compared += 1
            }
        }
        XCTAssertEqual(differing, 0, "\(label): \(differing) of \(compared) rows read differ from the full pass's", file: file, line: line)
        XCTAssertGreaterThan(compared, batch.count, file: file, line: line)
    }

    func testRowsReadAreThoseOfAFullPassInEveryPrecision() throws {
        // A copy with an int8-static file of its own: the set-up makes none.
        try assertRowsReadInEveryPrecision(ConcurrencyTests.quicklyCalibrated(convertedModel("all-MiniLM-L6-v2")), BertModel.self,
                                           [.fp32, .bf16, .int8, .int8Attention, .int8Static], "MiniLM", sequences: 48)
    }

    /// MPNet: its relative position bias is read by absolute query position.
    func testRowsReadWithARelativePositionBias() throws {
        let folder = try convertedModel("all-mpnet-base-v2")
        let loaded = try SwiftBERT.loadModel(folder: folder, threads: 2)
        let batch = Array(try batch(loaded.tokenizer).prefix(8))
        try assertReadRowsEqualAFullPass(loaded.encoder, batch, "MPNet fp32")
    }

    /// A converted folder's encoder (of type `Encoder`), loaded in each precision on 1 and 2
    /// threads, over the first `sequences` of `batch` (all 48 span several chunks).
    func assertRowsReadInEveryPrecision<Encoder: EncoderModel>(_ folder: URL, _: Encoder.Type, _ precisions: [Precision],
                                                                 _ label: String, sequences: Int = 20) throws {
        let batch = Array(try batch(Tokenizer.load(folder: folder)).prefix(sequences))
        for precision in precisions {
            for threads in [1, 2] {
                let encoder = try loadEncoder(folder: folder, threads: threads, precision: precision)
                XCTAssertTrue(encoder is Encoder, label)
                try assertReadRowsEqualAFullPass(encoder, batch, "\(label) \(precision) \(threads) threads")
            }
        }
    }

    /// DeBERTa (random weights, tools/fixtures): the disentangled scores are read by absolute
    /// query position, and its last layer runs the rows read alone too.
    func testRowsReadInDeBERTa() throws {
        try assertRowsReadInEveryPrecision(DebertaTests.converted("classifier"), DebertaEncoderModel.self, [.fp32, .bf16, .int8], "DeBERTa")
    }

    /// Qwen3 (random weights, tools/fixtures): causal attention, grouped-query heads wider than
    /// the hidden size, and the final RMSNorm after the last layer; last-token pooling reads the
    /// last row.
    func testRowsReadInQwen3() throws {
        let folder = try Qwen3Tests.converted()
        try assertRowsReadInEveryPrecision(folder, Qwen3EncoderModel.self, [.fp32, .bf16, .int8], "Qwen3")
        let embedder = try SentenceEmbedder(folder: folder, threads: 2)
        XCTAssertEqual(embedder.head(for: .init()).rowsRead(HeadBatch(threads: 1)), HeadRows.last)
    }

    /// The rotary encoders (random weights, tools/fixtures): GTE (post-LN), NomicBERT, and
    /// ModernBERT (pre-LN, a final norm, sliding-window layers: a windowed block's keys depend on
    /// its rows).
    func testRowsReadInTheRotaryEncoders() throws {
        for name in ["gte", "nomic", "modernbert"] {
            try assertRowsReadInEveryPrecision(RotaryEncoderTests.conversions.folder(name), RotaryEncoderModel.self, [.fp32, .bf16], name)
        }
    }

    /// The pipelines ask for their heads' rows, and answer as over a full pass.
    func testPipelinesGiveWhatTheirHeadsGiveOverAFullPass() throws {
        let loaded = try SwiftBERT.loadModel(folder: convertedModel("all-MiniLM-L6-v2"), threads: 2)
        let embedder = try SentenceEmbedder(model: loaded.encoder, tokenizer: loaded.tokenizer)
        let texts = ["A man is playing a guitar.", "The new movie is awesome", "short"]
        var options = SentenceEmbedder.Options(pooling: .cls)
        let vectors = try embedder.embed(texts, options: options).vectors
        let head = embedder.head(for: options)
        XCTAssertEqual(head.rowsRead(HeadBatch(threads: 1)), HeadRows.position(0))
        let ids = texts.map { loaded.tokenizer.encode($0, maxLength: 512).ids }
        let reference = try head(loaded.encoder.encode(ids), HeadBatch(threads: 2))
        XCTAssertEqual(vectors.map { $0.map { $0.bitPattern } }, reference.map { $0.map { $0.bitPattern } })
        options.pooling = .mean
        XCTAssertEqual(embedder.head(for: options).rowsRead(HeadBatch(threads: 1)), HeadRows.all)

        let splade = try SwiftBERT.loadModel(folder: convertedModel("splade-tiny"), threads: 2)
        let fill = try FillMask(model: splade.encoder, tokenizer: splade.tokenizer)
        let text = "The capital of France is [MASK], and the capital of Italy is [MASK]."
        let predicted = try fill.predict(text, topK: 5)
        let encoding = try fill.prepare(text)
        let maskHead = try MaskedLMHead(splade.encoder, maskId: splade.tokenizer.maskId)
        XCTAssertEqual(maskHead.rowsRead(HeadBatch(threads: 1)), HeadRows.token(splade.tokenizer.maskId))
        let masks = try maskHead(splade.encoder.encode([encoding.ids], typeIds: [encoding.typeIds]), HeadBatch(threads: 2))[0]
        XCTAssertEqual(masks.count, 2)
        XCTAssertEqual(predicted, fill.finish(masks, topK: 5))
    }
}
