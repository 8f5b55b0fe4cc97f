import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// Long texts in chunks (issue 27): TextChunker's windows and `SentenceEmbedder.embedChunks`,
/// on WordPiece (all-MiniLM-L6-v2), SentencePiece Unigram (XLM-R) and byte-level BPE (RoBERTa).
final class ChunkTests: XCTestCase {
    static let gpl = try! String(contentsOfFile: "/usr/share/common-licenses/GPL-3", encoding: .utf8)
    static let sentences = try! String(contentsOf: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/sentences.txt"),
                                       encoding: .utf8)

    /// Everything a chunk promises, for every chunk of `text`: its text is its code points of the
    /// document, tokenises on its own to the ids of its span (split words excepted) and frames
    /// to at most `maxTokens`; the chunks cover the document in order, the gaps only whitespace,
    /// consecutive ones sharing the most whole words of at most `overlap` tokens.
    func assertChunks(_ chunks: [TextChunk], of text: String, textIndex: Int = 0, chunker: TextChunker,
                      file: StaticString = #filePath, line: UInt = #line) {
        let scalars = Array(text.unicodeScalars)
        let whole = chunker.tokenizer.encode(text, addSpecialTokens: false)
        let boundaries = chunker.wordBoundaries(whole)
        XCTAssertEqual(chunks.map(\.chunkIndex), Array(chunks.indices), file: file, line: line)
        XCTAssertEqual(chunks.first?.tokenRange.lowerBound, 0, file: file, line: line)
        XCTAssertEqual(chunks.last?.tokenRange.upperBound, whole.ids.count, file: file, line: line)
        var covered = [Bool](repeating: false, count: scalars.count)
        for chunk in chunks {
            XCTAssertEqual(chunk.textIndex, textIndex, file: file, line: line)
            XCTAssertEqual(chunk.text, TextChunker.slice(scalars, chunk.start..<chunk.end), file: file, line: line)
            XCTAssertEqual(chunk.ids, chunker.tokenizer.encode((chunker.prompt ?? "") + chunk.text).ids, file: file, line: line)
            XCTAssertLessThanOrEqual(chunk.tokenCount, chunker.maxTokens, file: file, line: line)
            let own = chunker.tokenizer.encode(chunk.text, addSpecialTokens: false).ids
            let isWhole = boundaries.contains(chunk.tokenRange.lowerBound) && boundaries.contains(chunk.tokenRange.upperBound)
            if isWhole {
                XCTAssertEqual(own, Array(whole.ids[chunk.tokenRange]), "chunk \(chunk.chunkIndex): \(chunk.text.debugDescription)", file: file, line: line)
            }
            for i in chunk.start..<chunk.end { covered[i] = true }
        }
        for (previous, next) in zip(chunks, chunks.dropFirst()) {
            XCTAssertLessThan(previous.start, next.start, file: file, line: line)
            XCTAssertLessThan(previous.end, next.end, file: file, line: line)
            let shared = previous.tokenRange.upperBound - next.tokenRange.lowerBound
            XCTAssertTrue((0...chunker.overlap).contains(shared), "shared \(shared)", file: file, line: line)
            if boundaries.contains(previous.tokenRange.upperBound) {
                // The first word start after the previous start sharing at most `overlap` tokens...
                let end = previous.tokenRange.upperBound
                let overlapStart = boundaries.first { $0 > previous.tokenRange.lowerBound && end - $0 <= chunker.overlap } ?? end
                if next.tokenRange.lowerBound != overlapStart {
                    // ...unless the next word end is out of a chunk's reach from there: then no overlap.
                    XCTAssertEqual(next.tokenRange.lowerBound, end, "chunk \(next.chunkIndex)", file: file, line: line)
                    let nextWordEnd = boundaries.first { $0 > end } ?? end
                    XCTAssertGreaterThan(nextWordEnd - overlapStart, chunker.maxTokens - chunker.framing, "chunk \(next.chunkIndex) could overlap",
                                         file: file, line: line)
                }
            } else {
                XCTAssertEqual(shared, 0, "a split word goes on where it was cut", file: file, line: line)
            }
        }
        let uncovered = covered.indices.filter { !covered[$0] && !scalars[$0].properties.isWhitespace }
        XCTAssertEqual(uncovered, [], "characters in no chunk", file: file, line: line)
    }

    /// Each chunk's vector, from the batched path, against its text embedded on its own.
    func assertEachChunkEmbedsAlone(_ embedder: SentenceEmbedder, _ embedded: SentenceEmbedder.ChunkEmbeddings,
                                    file: StaticString = #filePath, line: UInt = #line) throws -> Float {
        var worst: Float = 0
        for (chunk, vector) in zip(embedded.chunks, embedded.vectors) {
            worst = max(worst, maxAbsDifference(vector, try embedder.embed(chunk.text)))
        }
        XCTAssertLessThanOrEqual(worst, 1e-6, file: file, line: line)
        return worst
    }

    // MARK: - Real documents

    func testMiniLMChunksOfTheGPLAreItsSpansAndEmbedAsTheirOwnText() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let chunker = try embedder.chunker(maxTokens: 128, overlap: 32)
        let embedded = try embedder.embedChunks([Self.gpl, "A short text."], maxTokens: 128, overlap: 32)
        let gplChunks = embedded.chunks.filter { $0.textIndex == 0 }
        XCTAssertGreaterThan(gplChunks.count, 40)
        assertChunks(gplChunks, of: Self.gpl, chunker: chunker)
        XCTAssertEqual(embedded.chunks.last?.textIndex, 1)
        XCTAssertEqual(embedded.chunks.last?.chunkIndex, 0)
        XCTAssertEqual(embedded.chunks.last?.text, "A short text.")
        let worst = try assertEachChunkEmbedsAlone(embedder, embedded)
        print("ChunkTests: MiniLM GPL-3 \(gplChunks.count) chunks, largest difference to the chunk alone \(worst)")
    }

    func testMiniLMChunksWithoutOverlapLeaveOnlyWhitespaceBetween() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let chunker = try embedder.chunker(maxTokens: 40, overlap: 0)
        let chunks = try chunker.chunks(of: Self.gpl)
        assertChunks(chunks, of: Self.gpl, chunker: chunker)
        for (previous, next) in zip(chunks, chunks.dropFirst()) {
            XCTAssertEqual(previous.tokenRange.upperBound, next.tokenRange.lowerBound)
            XCTAssertLessThanOrEqual(previous.end, next.start)
        }
    }

    func testXLMRUnigramChunksAreTheirSpansAndEmbedAsTheirOwnText() throws {
        let embedder = try SentenceEmbedder(folder: EncoderFixtureTests.converted("xlmr-st"))
        XCTAssertTrue(embedder.tokenizer.marksWordStarts)
        let document = String(Self.sentences.prefix(12000))
        for (size, overlap) in [(64, 16), (24, 0)] {
            let chunker = try embedder.chunker(maxTokens: size, overlap: overlap)
            let embedded = try embedder.embedChunks([document], maxTokens: size, overlap: overlap)
            assertChunks(embedded.chunks, of: document, chunker: chunker)
            let worst = try assertEachChunkEmbedsAlone(embedder, embedded)
            print("ChunkTests: XLM-R \(embedded.chunks.count) chunks of \(size) (overlap \(overlap)), largest difference \(worst)")
        }
    }

    func testRobertaByteLevelChunksKeepTheSpaceTheirFirstWordIsTokenisedWith() throws {
        let embedder = try SentenceEmbedder(folder: EncoderFixtureTests.converted("roberta-mlm"))
        let document = String(Self.sentences.prefix(12000))
        let chunker = try embedder.chunker(maxTokens: 64, overlap: 16)
        let embedded = try embedder.embedChunks([document], maxTokens: 64, overlap: 16)
        assertChunks(embedded.chunks, of: document, chunker: chunker)
        // Chunks in the middle start with the space that makes their first token Ġword.
        let later = embedded.chunks.dropFirst()
        XCTAssertFalse(later.isEmpty)
        XCTAssertTrue(later.contains { $0.text.first == " " }, later.map(\.text.debugDescription).joined(separator: "\n"))
        let worst = try assertEachChunkEmbedsAlone(embedder, embedded)
        print("ChunkTests: RoBERTa \(embedded.chunks.count) chunks, largest difference \(worst)")
    }

    // MARK: - Edges

    func testAWordLongerThanAChunkIsSplitAtTheChunkSize() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        // 87 characters: under WordPiece's 100, above which a word is one [UNK].
        let long = String(repeating: "floccinaucinihilipilification", count: 3)
        let text = "before \(long) after"
        let chunker = try embedder.chunker(maxTokens: 16, overlap: 4)
        let chunks = try chunker.chunks(of: text)
        assertChunks(chunks, of: text, chunker: chunker)
        XCTAssertEqual(chunks.first?.text, "before")
        let pieces = chunks.dropFirst()
        XCTAssertGreaterThanOrEqual(pieces.count, 2)
        XCTAssertEqual(pieces.map(\.text).joined().replacingOccurrences(of: " ", with: ""), long + "after")
        // Split pieces are cut at the chunk size (14 text tokens) while their own text fits.
        XCTAssertTrue(pieces.allSatisfy { $0.tokenRange.count <= 14 && $0.tokenCount <= 16 })
        XCTAssertEqual(pieces.first?.tokenRange.count, 14)
    }

    func testEmptyAndShortTextsAreOneChunkEqualToThePlainEmbedding() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let texts = ["", "   ", "A cat sat on the mat."]
        let embedded = try embedder.embedChunks(texts, maxTokens: 32)
        XCTAssertEqual(embedded.chunks.map(\.textIndex), [0, 1, 2])
        XCTAssertEqual(embedded.chunks.map(\.text), texts)
        XCTAssertEqual(embedded.chunks.map(\.start), [0, 0, 0])
        XCTAssertEqual(embedded.chunks.map(\.end), [0, 3, 21])
        let plain = try embedder.embed(texts).vectors
        for (a, b) in zip(embedded.vectors, plain) { XCTAssertLessThanOrEqual(maxAbsDifference(a, b), 1e-6) }
        XCTAssertEqual(try embedder.embedChunkMean(texts, maxTokens: 32).map { $0.count }, [384, 384, 384])
    }

    func testOffsetsAreCodePointsAsPythonSlices() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let text = "Café crème brûlée 🍰 naïve façade. " + Array(repeating: "Zoë's résumé is long.", count: 20).joined(separator: " ")
        let chunker = try embedder.chunker(maxTokens: 20, overlap: 5)
        let chunks = try chunker.chunks(of: text)
        assertChunks(chunks, of: text, chunker: chunker)
        // 🍰 is one code point (two UTF-16 units, four UTF-8 bytes): offsets count it once.
        XCTAssertEqual(chunks.last?.end, text.unicodeScalars.count)
        XCTAssertNotEqual(text.unicodeScalars.count, text.utf16.count)
    }

    func testMeanPoolingIsTheNormalisedMeanOfTheChunkVectors() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let texts = [Self.gpl, "One short sentence."]
        let embedded = try embedder.embedChunks(texts, maxTokens: 96, overlap: 24)
        let means = try embedder.embedChunkMean(texts, maxTokens: 96, overlap: 24)
        for (index, mean) in means.enumerated() {
            let vectors = zip(embedded.chunks, embedded.vectors).filter { $0.0.textIndex == index }.map(\.1)
            var expected = [Float](repeating: 0, count: mean.count)
            for vector in vectors { for d in vector.indices { expected[d] += vector[d] / Float(vectors.count) } }
            let norm = expected.reduce(0) { $0 + $1 * $1 }.squareRoot()
            expected = expected.map { $0 / norm }
            XCTAssertLessThanOrEqual(maxAbsDifference(mean, expected), 1e-6, "text \(index)")
        }
        // One chunk: the mean is the plain embedding.
        XCTAssertLessThanOrEqual(maxAbsDifference(means[1], try embedder.embed(texts[1])), 1e-6)
        // Without normalisation the mean is the plain mean.
        let raw = try embedder.embedChunkMean([Self.gpl], maxTokens: 96, overlap: 24, options: .init(normalize: false))
        let rawChunks = try embedder.embedChunks([Self.gpl], maxTokens: 96, overlap: 24, options: .init(normalize: false)).vectors
        let plainMean = (0..<raw[0].count).map { d in rawChunks.reduce(0) { $0 + $1[d] } / Float(rawChunks.count) }
        XCTAssertLessThanOrEqual(maxAbsDifference(raw[0], plainMean), 1e-6)
    }

    func testAPromptCountsInTheChunkSize() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let options = SentenceEmbedder.Options(prompt: "query: ")
        let chunker = try embedder.chunker(maxTokens: 48, overlap: 8, options: options)
        XCTAssertEqual(chunker.framing, embedder.tokenizer.encode("query: ").count)
        let text = String(Self.gpl.prefix(4000))
        let embedded = try embedder.embedChunks([text], maxTokens: 48, overlap: 8, options: options)
        assertChunks(embedded.chunks, of: text, chunker: chunker)
        for (chunk, vector) in zip(embedded.chunks.prefix(5), embedded.vectors) {
            XCTAssertLessThanOrEqual(maxAbsDifference(vector, try embedder.embed(chunk.text, options: options)), 1e-6)
        }
    }

    func testSizesAndOverlapsThatCannotWorkAreRefused() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        func refused(_ size: Int, _ overlap: Int, mentions word: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try embedder.chunker(maxTokens: size, overlap: overlap), file: file, line: line) { error in
                guard case let SwiftBERTError.invalidInput(reason) = error else { return XCTFail("\(error)", file: file, line: line) }
                XCTAssertTrue(reason.contains(word), reason, file: file, line: line)
            }
        }
        refused(257, 0, mentions: "limit of 256")
        refused(2, 0, mentions: "at least 3")
        refused(32, 30, mentions: "smaller than the 30")
        refused(32, -1, mentions: "at least 0")
        XCTAssertNoThrow(try embedder.chunker(maxTokens: 256, overlap: 253))
        // --max-length raises the limit up to the position table's.
        XCTAssertNoThrow(try embedder.chunker(maxTokens: 512, overlap: 0, options: .init(maxLength: 512)))
    }
}

/// `bert embed --chunk`: the records are the library's chunks and vectors.
final class ChunkCLITests: CLITestCase {
    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    func testEmbedChunkWritesOneLinePerChunkWithOffsets() throws {
        let texts = [String(ChunkTests.gpl.prefix(3000)).replacingOccurrences(of: "\n", with: " "), "A short one."]
        let result = try bert(["embed", "--chunk", "48", "--overlap", "8", "--quiet"], stdin: texts.joined(separator: "\n") + "\n")
        XCTAssertEqual(result.status, 0, result.stderr)
        let records = try jsonLines(result.stdout)
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let expected = try embedder.embedChunks(texts, maxTokens: 48, overlap: 8)
        XCTAssertEqual(records.count, expected.chunks.count)
        for (record, (chunk, vector)) in zip(records, zip(expected.chunks, expected.vectors)) {
            XCTAssertEqual(Array(record.keys).sorted(), ["chunk", "embedding", "end", "index", "start", "tokens"])
            XCTAssertEqual(record["index"] as? Int, chunk.textIndex)
            XCTAssertEqual(record["chunk"] as? Int, chunk.chunkIndex)
            XCTAssertEqual(record["start"] as? Int, chunk.start)
            XCTAssertEqual(record["end"] as? Int, chunk.end)
            XCTAssertEqual(record["tokens"] as? Int, chunk.tokenCount)
            let found = try XCTUnwrap(record["embedding"] as? [NSNumber]).map(\.floatValue)
            XCTAssertLessThanOrEqual(maxAbsDifference(found, vector), 1e-6)
        }
        XCTAssertEqual(records.last?["index"] as? Int, 1)
    }

    func testEmbedChunkMeanWritesOneVectorPerTextInAnyFormat() throws {
        let texts = [String(ChunkTests.gpl.prefix(3000)).replacingOccurrences(of: "\n", with: " "), "A short one."]
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let expected = try embedder.embedChunkMean(texts, maxTokens: 48, overlap: 8)
        let result = try bert(["embed", "--chunk", "48", "--overlap", "8", "--chunk-pooling", "mean", "--quiet"] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let records = try jsonLines(result.stdout)
        XCTAssertEqual(records.map { $0["index"] as? Int }, [0, 1])
        for (record, vector) in zip(records, expected) {
            XCTAssertLessThanOrEqual(maxAbsDifference(try XCTUnwrap(record["embedding"] as? [NSNumber]).map(\.floatValue), vector), 1e-6)
        }
        let tsv = try bert(["embed", "--chunk", "48", "--overlap", "8", "--chunk-pooling", "mean", "--format", "tsv", "--quiet"] + texts)
        XCTAssertEqual(tsv.status, 0, tsv.stderr)
        XCTAssertEqual(tsv.stdout.split(separator: "\n").count, 2)
    }

    func testEmbedChunkRefusesWhatItCannotDo() throws {
        func refused(_ arguments: [String], mentions word: String, file: StaticString = #filePath, line: UInt = #line) throws {
            let result = try bert(["embed"] + arguments + ["some text"])
            XCTAssertNotEqual(result.status, 0, file: file, line: line)
            XCTAssertTrue(result.stderr.contains(word), result.stderr, file: file, line: line)
            XCTAssertEqual(result.stdout, "", file: file, line: line)
        }
        try refused(["--chunk", "32", "--format", "npy", "--output", "/dev/null"], mentions: "--chunk-pooling mean")
        try refused(["--overlap", "4"], mentions: "--chunk")
        try refused(["--chunk-pooling", "mean"], mentions: "--chunk")
        try refused(["--chunk", "32", "--sparse"], mentions: "--sparse")
        try refused(["--chunk", "32", "--resume", "--output", "/tmp/never-written.jsonl"], mentions: "--resume")
        try refused(["--chunk", "32", "--chunk-pooling", "max"], mentions: "mean")
        try refused(["--chunk", "1000"], mentions: "limit of 256")
        try refused(["--chunk", "32", "--overlap", "32"], mentions: "smaller than")
    }
}

extension ServerTests {
    /// /embed with "chunk": per-chunk records as the library's; "mean" as embedChunkMean; 422s.
    func testChunkedEmbedMatchesTheLibraryAndRefusesBadOptions() throws {
        let server = try sharedServer()
        let texts = [String(ChunkTests.gpl.prefix(5000)), "A short one."]
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let expected = try embedder.embedChunks(texts, maxTokens: 64, overlap: 16)
        let reply = try server.post("/embed", ["inputs": texts, "chunk": 64, "overlap": 16])
        XCTAssertEqual(reply.status, 200, reply.text)
        let perText = try XCTUnwrap(reply.json() as? [[[String: Any]]], reply.text)
        XCTAssertEqual(perText.count, 2)
        let records = perText.flatMap { $0 }
        XCTAssertEqual(records.count, expected.chunks.count)
        for (record, (chunk, vector)) in zip(records, zip(expected.chunks, expected.vectors)) {
            XCTAssertEqual(Array(record.keys).sorted(), ["embedding", "end", "start", "tokens"])
            XCTAssertEqual(record["start"] as? Int, chunk.start)
            XCTAssertEqual(record["end"] as? Int, chunk.end)
            XCTAssertEqual(record["tokens"] as? Int, chunk.tokenCount)
            XCTAssertLessThanOrEqual(maxAbsDifference(try XCTUnwrap(record["embedding"] as? [NSNumber]).map(\.floatValue), vector), 1e-6)
        }
        XCTAssertEqual(perText[1].count, 1)

        let means = try floats(server.post("/embed", ["inputs": texts, "chunk": 64, "overlap": 16, "chunk_pooling": "mean"]))
        assertVectorsClose(means, try embedder.embedChunkMean(texts, maxTokens: 64, overlap: 16), tolerance: 1e-6)

        teiError(try server.post("/embed", ["inputs": texts, "chunk": 257]), status: 422, mentions: ["limit of 256"])
        teiError(try server.post("/embed", ["inputs": texts, "chunk": 64, "overlap": 64]), status: 422, mentions: ["overlap", "smaller than"])
        teiError(try server.post("/embed", ["inputs": texts, "chunk": 64, "chunk_pooling": "max"]), status: 422, mentions: ["none", "mean"])
        teiError(try server.post("/embed", ["inputs": texts, "overlap": 8]), status: 422, mentions: ["chunk"])
        teiError(try server.post("/embed", ["inputs": [[101, 2023, 102]], "chunk": 64]), status: 422, mentions: ["text"])
        teiError(try server.post("/embed", ["inputs": texts, "chunk": "64"]), status: 422, mentions: ["chunk"])
    }
}
