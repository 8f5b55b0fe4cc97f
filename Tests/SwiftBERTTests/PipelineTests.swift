import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine

/// Text-in pipelines: the tokenizer and the engine together give what sentence-transformers and
/// transformers give for the same text.
final class PipelineTests: XCTestCase {
    func testEmbedderFromTextMatchesSentenceTransformers() throws {
        let reference = try Reference("all-MiniLM-L6-v2")
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let vectors = try embedder.embed(reference.meta.sentences).vectors
        for (i, v) in vectors.enumerated() {
            XCTAssertGreaterThanOrEqual(cosine(v, try reference.tensor("sentence_embedding.\(i)")), 0.99999, "sentence \(i)")
        }
        let pair = try XCTUnwrap(reference.meta.pair)
        let e = try embedder.embed(pair.sentences).vectors
        XCTAssertEqual(cosineSimilarity(e[0], e[1]), 0.7553, accuracy: 0.0005)
    }

    func testEmbedderResultDoesNotDependOnBatchSize() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let texts = try Reference("all-MiniLM-L6-v2").meta.sentences
        let big = try embedder.embed(texts, options: .init(batchSize: 64)).vectors
        let small = try embedder.embed(texts, options: .init(batchSize: 3)).vectors
        for (a, b) in zip(big, small) { XCTAssertLessThanOrEqual(maxAbsDifference(a, b), 1e-5) }
    }

    func testEmbedderTruncatesToTheModelLimitAndSaysSo() throws {
        let embedder = try SentenceEmbedder(folder: convertedModel("all-MiniLM-L6-v2"))
        let long = Array(repeating: "word", count: 400).joined(separator: " ")
        let result = try embedder.embed(["short text", long])
        XCTAssertEqual(result.truncated, [1])
        XCTAssertEqual(result.vectors[1].count, 384)
    }

    func testFillMaskFromTextMatchesTransformers() throws {
        let fills = try XCTUnwrap(try Reference("splade-tiny").meta.fill_mask)
        let pipeline = try FillMask(folder: convertedModel("splade-tiny"))
        for fill in fills {
            let predictions = try pipeline.predict(fill.text, topK: 10)
            XCTAssertEqual(predictions.map(\.position), fill.mask_positions, fill.text)
            for (prediction, want) in zip(predictions, fill.top_ids) {
                XCTAssertEqual(prediction.candidates.map(\.id), want, fill.text)
            }
        }
    }

    func testFillMaskFilters() throws {
        let pipeline = try FillMask(folder: convertedModel("splade-tiny"))
        let words = try pipeline.predict("The cat sat on the [MASK].", topK: 20, wordsOnly: true)[0].candidates
        XCTAssertEqual(words.count, 20)
        for c in words { XCTAssertTrue(readsAsWord(c.token), c.token) }
        let prefixed = try pipeline.predict("The cat sat on the [MASK].", topK: 5, prefix: "Ma")[0].candidates
        XCTAssertFalse(prefixed.isEmpty)
        for c in prefixed { XCTAssertTrue(c.token.hasPrefix("ma"), c.token) }
        XCTAssertThrowsError(try pipeline.predict("No mask here.")) { error in
            XCTAssertEqual((error as? SwiftBERTError)?.exitStatus, 65)
        }
    }

    func testFillMaskNeedsAMaskedLMHead() throws {
        let folder = try convertedModel("all-MiniLM-L6-v2")
        XCTAssertThrowsError(try FillMask(folder: folder))
    }

    func testModelLocatorResolvesNamesAndListsAvailableOnes() throws {
        let saved = FileManager.default.currentDirectoryPath
        FileManager.default.changeCurrentDirectoryPath(repositoryRoot.path)
        defer { FileManager.default.changeCurrentDirectoryPath(saved) }
        XCTAssertEqual(try ModelLocator.resolve("splade-tiny").lastPathComponent, "splade-tiny")
        XCTAssertThrowsError(try ModelLocator.resolve("no-such-model")) { error in
            XCTAssertTrue("\(error)".contains("all-MiniLM-L6-v2"), "\(error)")
        }
        XCTAssertThrowsError(try ModelLocator.resolve("SPLADE-tiny")) { error in
            XCTAssertTrue("\(error)".contains("Did you mean splade-tiny?"), "\(error)")
        }
    }

    func testClosestNameForADidYouMean() {
        let names = ["all-MiniLM-L6-v2", "all-mpnet-base-v2", "splade-tiny", "bge-m3", "bge-m2"]
        XCTAssertEqual(closestName(to: "ALL-minilm-L6-V2", among: names), "all-MiniLM-L6-v2")   // case alone
        XCTAssertEqual(closestName(to: "all-MiniLM-L6v2", among: names), "all-MiniLM-L6-v2")    // a letter dropped
        XCTAssertEqual(closestName(to: "all-MiniLMM-L6-v2", among: names), "all-MiniLM-L6-v2")  // one added
        XCTAssertEqual(closestName(to: "all-MiniLM-L6-v3", among: names), "all-MiniLM-L6-v2")   // one changed
        XCTAssertEqual(closestName(to: "all-MiniLM-6L-v2", among: names), "all-MiniLM-L6-v2")   // two swapped: one edit
        XCTAssertEqual(closestName(to: "spalde-tny", among: names), "splade-tiny")              // swapped and dropped
        XCTAssertNil(closestName(to: "all-MiniLM-L12-v3", among: names))                        // three edits
        XCTAssertNil(closestName(to: "bge-m", among: names))                                    // as near two names
        XCTAssertNil(closestName(to: "x", among: names))
        XCTAssertNil(closestName(to: "", among: []))
        XCTAssertEqual(editDistance("kitten", "sitting", atMost: 5), 3)
        XCTAssertEqual(editDistance("kitten", "sitting", atMost: 2), 3)  // past the limit: limit + 1
        XCTAssertEqual(editDistance("ab", "ba", atMost: 2), 1)
        XCTAssertEqual(editDistance("", "abc", atMost: 3), 3)
    }
}
