import Foundation
import XCTest
@testable import SwiftBERT

/// `bert classify`, `rerank`, `ner` and `embed --prompt-name` on the random-weight head fixtures
/// (Hugging Face folders, converted by the command on first use): the JSON shapes of issue 15
/// and the same numbers as the library.
final class HeadCLITests: CLITestCase {
    var heads: URL { HeadFixtureTests.fixtures }

    func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
    }

    func testClassifyPrintsLabelsBestFirst() throws {
        let texts = ["Hello!", "Linus Torvalds released Linux under the GNU General Public License."]
        let folder = heads.appendingPathComponent("bert-classifier").path
        let result = try bert(["classify", "--json", "--model", folder] + texts)
        XCTAssertEqual(result.status, 0, result.stderr)
        let records = try jsonLines(result.stdout)
        XCTAssertEqual(records.count, 2)
        let expected = try TextClassifier(folder: HeadFixtureTests.converted("bert-classifier"), threads: 2).classify(texts)
        for (index, (record, labels)) in zip(records, expected).enumerated() {
            XCTAssertEqual(Set(record.keys), ["index", "labels"])
            XCTAssertEqual(record["index"] as? Int, index)
            let found = record["labels"] as! [[String: Any]]
            XCTAssertEqual(found.map { $0["label"] as! String }, labels.map(\.label))
            XCTAssertEqual(found.map { Float($0["score"] as! Double) }, labels.map(\.score))
        }
        let top = try bert(["classify", "--json", "--top-k", "1", "--model", folder, texts[0]])
        XCTAssertEqual((try jsonLines(top.stdout)[0]["labels"] as! [[String: Any]]).count, 1)
        // The same input options as embed: a file of lines, and JSON Lines on stdin.
        let fromFile = try bert(["classify", "--json", "--model", folder, "--input", try temporaryFile(texts.joined(separator: "\n") + "\n")])
        XCTAssertEqual(fromFile.stdout, result.stdout, fromFile.stderr)
        let jsonl = texts.map { #"{"text": "\#($0)"}"# }.joined(separator: "\n") + "\n"
        let fromStdin = try bert(["classify", "--json", "--model", folder, "--input-format", "jsonl"], stdin: jsonl)
        XCTAssertEqual(fromStdin.stdout, result.stdout, fromStdin.stderr)
        let refused = try bert(["rerank", "--model", folder, "query", "document"])
        XCTAssertEqual(refused.status, 65)
        XCTAssertTrue(refused.stderr.contains("has 3 labels; a cross-encoder for reranking has one"), refused.stderr)
    }

    func testRerankPrintsQueryAndResultsBestFirst() throws {
        let documents = ["Permission is hereby granted.", "Each contributor grants you a patent license.", "It is blue."]
        let result = try bert(["rerank", "--json", "--model", heads.appendingPathComponent("bert-cross-encoder").path, "who may copy"] + documents)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix(#"{"query":"who may copy","results":[{"index":"#), result.stdout)
        let record = try jsonLines(result.stdout)[0]
        let expected = try Reranker(folder: HeadFixtureTests.converted("bert-cross-encoder"), threads: 2).rerank(query: "who may copy", documents: documents)
        let found = record["results"] as! [[String: Any]]
        XCTAssertEqual(found.map { $0["index"] as! Int }, expected.map(\.index))
        XCTAssertEqual(found.map { $0["text"] as! String }, expected.map(\.text))
        XCTAssertEqual(found.map { Float($0["score"] as! Double) }, expected.map(\.score))
        let fromFile = try bert(["rerank", "--json", "--model", heads.appendingPathComponent("bert-cross-encoder").path,
                                 "--documents", try temporaryFile(documents.joined(separator: "\n") + "\n"), "who may copy"])
        XCTAssertEqual(fromFile.stdout, result.stdout, fromFile.stderr)
    }

    /// train-classifier end to end on the random-weight classifier fixture's encoder: it writes a
    /// folder classify runs, and training again from the features it saved (--features) gives
    /// the same classifier, bit for bit (L-BFGS from zero is deterministic).
    func testTrainClassifierWritesAFolderClassifyRuns() throws {
        let texts = (HeadFixtureTests.reference["classify"] as! [String: Any])["texts"] as! [String]
        let records = texts.map { text -> String in
            let label = text.lowercased().contains("software") ? "software" : "other"
            let data = try! JSONSerialization.data(withJSONObject: ["text": text, "label": label])
            return String(decoding: data, as: UTF8.self)
        }
        let train = try temporaryFile(records.joined(separator: "\n") + "\n")
        let features = temporaryPath("train-features"), first = temporaryPath("trained-1"), second = temporaryPath("trained-2")
        let model = heads.appendingPathComponent("bert-classifier").path
        let run = try bert(["train-classifier", "--model", model, "--train", train, "--valid", train, "--output", first,
                            "--save-features", features, "--C", "1", "10"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("(L-BFGS, kept C "), run.stderr)
        let again = try bert(["train-classifier", "--model", model, "--train", train, "--valid", train, "--output", second,
                              "--features", features, "--C", "1", "10", "--quiet"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(again.stderr, "")
        let weights = try [first, second].map { try SafeTensorsFile(path: $0 + "/model.safetensors").floatArray("classifier.weight") }
        XCTAssertEqual(weights[0], weights[1])
        let classified = try bert(["classify", "--json", "--model", first, texts[0]])
        XCTAssertEqual(classified.status, 0, classified.stderr)
        let labels = (try jsonLines(classified.stdout)[0]["labels"] as! [[String: Any]]).map { $0["label"] as! String }
        XCTAssertEqual(Set(labels), ["other", "software"])
        let refused = try bert(["train-classifier", "--model", model, "--train", train, "--output", first, "--C", "1", "10"])
        XCTAssertEqual(refused.status, 64, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("several --C values are chosen between on --valid"), refused.stderr)
    }

    func testNERPrintsEntitiesWithOffsets() throws {
        let text = "José Müller moved from Zürich to São Paulo in 2019."
        let folder = heads.appendingPathComponent("bert-ner").path
        for strategy in AggregationStrategy.allCases {
            let result = try bert(["ner", "--json", "--aggregation", strategy.rawValue, "--model", folder, text])
            XCTAssertEqual(result.status, 0, result.stderr)
            let entities = try jsonLines(result.stdout)[0]["entities"] as! [[String: Any]]
            let expected = try TokenClassifier(folder: HeadFixtureTests.converted("bert-ner"), threads: 2).entities([text], aggregation: strategy)[0]
            XCTAssertEqual(entities.count, expected.count, "\(strategy)")
            XCTAssertFalse(entities.isEmpty)
            let key = strategy == .none ? "entity" : "entity_group"
            XCTAssertEqual(entities.map { $0[key] as! String }, expected.map(\.label))
            XCTAssertEqual(entities.map { $0["start"] as! Int }, expected.map(\.start))
            XCTAssertEqual(entities.map { $0["end"] as! Int }, expected.map(\.end))
            XCTAssertEqual(entities.map { $0["word"] as! String }, expected.map(\.word))
        }
        let plain = try bert(["ner", "--json", "--model", folder, text])
        XCTAssertTrue(plain.stdout.hasPrefix(#"{"index":0,"entities":[{"entity_group":"#), plain.stdout)
    }

    /// A line skipped by --skip-invalid leaves a gap in the indices, as in `bert embed`: each
    /// record still names its input line (before, the records after it named none, and shifted).
    func testClassifyAndNERRecordsNameTheirInputIndexPastSkippedLines() throws {
        var bytes = Data("Hello!\n".utf8)
        bytes.append(contentsOf: [0x66, 0xFF, 0x0A])  // not UTF-8
        bytes.append(Data("Linus Torvalds lives in Portland.\n".utf8))
        let path = temporaryPath("skipped.txt")
        try bytes.write(to: URL(fileURLWithPath: path))
        for (command, model) in [("classify", "bert-classifier"), ("ner", "bert-ner")] {
            let result = try bert([command, "--json", "--skip-invalid", "--model", heads.appendingPathComponent(model).path, "--input", path])
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(try jsonLines(result.stdout).map { $0["index"] as? Int }, [0, 2], command)
            XCTAssertTrue(result.stderr.contains("line 2"), result.stderr)
        }
    }

    /// classify and ner take --no-truncate and --truncation-direction as embed does: a text over
    /// the model's 512 tokens is refused, naming it, or loses its start. Before, both flags were
    /// accepted and ignored (the long text was cut on the right either way).
    func testClassifyAndNERHonourTruncationFlags() throws {
        let long = (0..<300).map { "Linus Torvalds released version \($0) of Linux." }.joined(separator: " ")
        let texts = ["Hello!", long]
        for (command, fixture) in [("classify", "bert-classifier"), ("ner", "bert-ner")] {
            let folder = heads.appendingPathComponent(fixture).path
            let refused = try bert([command, "--json", "--no-truncate", "--model", folder] + texts)
            XCTAssertEqual(refused.status, 65, "\(command): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("input 1 is longer than 512 tokens, the limit"), "\(command): \(refused.stderr)")
            XCTAssertEqual(refused.stdout, "", command)

            let right = try bert([command, "--json", "--model", folder] + texts)
            let left = try bert([command, "--json", "--truncation-direction", "left", "--model", folder] + texts)
            XCTAssertEqual(right.status, 0, right.stderr)
            XCTAssertEqual(left.status, 0, left.stderr)
            // The cut is said on stderr, as embed says it (before, classify and ner said nothing).
            for result in [right, left] {
                XCTAssertEqual(result.stderr, "bert: 1 of 2 inputs were longer than 512 tokens and were truncated\n", command)
            }
            XCTAssertEqual(try bert([command, "--json", "--model", folder, "Hello!"]).stderr, "", "\(command): nothing cut, nothing said")
            XCTAssertNotEqual(try jsonLines(left.stdout)[1] as NSDictionary, try jsonLines(right.stdout)[1] as NSDictionary,
                              "\(command): the long text's kept tokens differ")
            XCTAssertEqual(try jsonLines(left.stdout)[0] as NSDictionary, try jsonLines(right.stdout)[0] as NSDictionary,
                           "\(command): a short text is not cut")
            let converted = try HeadFixtureTests.converted(fixture)
            if command == "classify" {
                let expected = try TextClassifier(folder: converted, threads: 2).classify(texts, truncation: Truncation(fromLeft: true))
                let found = try jsonLines(left.stdout).map { ($0["labels"] as! [[String: Any]]).map { Float($0["score"] as! Double) } }
                XCTAssertEqual(found, expected.map { $0.map(\.score) })
            } else {
                let expected = try TokenClassifier(folder: converted, threads: 2).entities(texts, truncation: Truncation(fromLeft: true))
                let found = try jsonLines(left.stdout).map { ($0["entities"] as! [[String: Any]]).map { $0["start"] as! Int } }
                XCTAssertEqual(found, expected.map { $0.map(\.start) })
                XCTAssertGreaterThan(found[1].first ?? 0, 1000, "ner: entities come from the end of the long text")
            }
        }
    }

    /// rerank says how many (query, document) pairs were cut to the model's limit, as embed,
    /// classify and ner do; it said nothing.
    func testRerankSaysHowManyPairsWereTruncated() throws {
        let long = (0..<300).map { "Version \($0) of the licence grants you a patent licence." }.joined(separator: " ")
        let folder = heads.appendingPathComponent("bert-cross-encoder").path
        let result = try bert(["rerank", "--json", "--model", folder, "who may copy", "It is blue.", long, "Permission is granted."])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "bert: 1 of 3 inputs were longer than 512 tokens and were truncated\n")
        XCTAssertEqual(try bert(["rerank", "--model", folder, "who may copy", "It is blue.", "Permission is granted."]).stderr, "")
    }

    func testEmbedTakesPromptsAndTheModelsWidth() throws {
        let folder = heads.appendingPathComponent("st-cls").path
        let texts = ["hello world", "Free software"]
        let embedder = try SentenceEmbedder(folder: HeadFixtureTests.converted("st-cls"), threads: 2)
        for (arguments, options) in [([String](), SentenceEmbedder.Options()),
                                     (["--prompt-name", "passage"], SentenceEmbedder.Options(promptName: "passage")),
                                     (["--prompt", ""], SentenceEmbedder.Options(prompt: ""))] {
            let result = try bert(["embed", "--model", folder] + arguments + texts)
            XCTAssertEqual(result.status, 0, result.stderr)
            let vectors = try parseJSONLines(result.stdout)
            XCTAssertEqual(vectors.first?.count, 64)  // the Dense module's width
            XCTAssertEqual(vectors, try embedder.embed(texts, options: options).vectors, "\(arguments)")
        }
        let unknown = try bert(["embed", "--model", folder, "--prompt-name", "nope", "x"])
        XCTAssertEqual(unknown.status, 65)
        XCTAssertTrue(unknown.stderr.contains("prompt name 'nope' is not one of st-cls's prompts (passage, query)"), unknown.stderr)
    }

    /// --query and --document are sentence-transformers' encode_query and encode_document. st-cls
    /// has the prompts "query" and "passage", and "query" as its default, so --document embeds
    /// with no prompt: not the default, and not "passage". `bert search` embeds its query as
    /// --query does and its corpus as --document does, and reads `bert embed --document` vectors.
    func testQueryAndDocumentRolesChooseTheirPrompts() throws {
        let folder = heads.appendingPathComponent("st-cls").path
        let texts = ["hello world", "Free software"]
        let embedder = try SentenceEmbedder(folder: HeadFixtureTests.converted("st-cls"), threads: 2)
        func embedded(_ arguments: [String]) throws -> [[Float]] {
            let result = try bert(["embed", "--model", folder] + arguments + texts)
            XCTAssertEqual(result.status, 0, result.stderr)
            return try parseJSONLines(result.stdout)
        }
        let documents = try embedded(["--document"])
        XCTAssertEqual(try embedded(["--query"]), try embedder.embed(texts, options: .init(promptName: "query")).vectors)
        XCTAssertEqual(documents, try embedder.embed(texts, options: .init(prompt: "")).vectors)
        XCTAssertNotEqual(documents, try embedded([]), "the default prompt is st-cls's query prompt")
        XCTAssertEqual(try embedded(["--document", "--prompt-name", "passage"]), try embedded(["--prompt-name", "passage"]))
        XCTAssertEqual(try bert(["embed", "--model", folder, "--query", "--document", "x"]).status, 64)
        // st-cls has no classification or clustering prompt: none, not the default one.
        XCTAssertEqual(try embedded(["--classification"]), documents)
        XCTAssertEqual(try embedded(["--clustering"]), documents)

        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-roles-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let corpus = scratch.appendingPathComponent("corpus.txt").path, vectors = scratch.appendingPathComponent("corpus.npy").path
        try texts.joined(separator: "\n").write(toFile: corpus, atomically: true, encoding: .utf8)
        let precomputed = try bert(["embed", "--document", "--model", folder, "--input", corpus, "--format", "npy", "--output", vectors])
        XCTAssertEqual(precomputed.status, 0, precomputed.stderr)
        let queryVector = try embedder.embed("hello", options: .init(promptName: "query"))
        for extra in [[], ["--embeddings", vectors]] {
            let result = try bert(["search", "--json", "--model", folder, "--corpus", corpus, "hello"] + extra)
            XCTAssertEqual(result.status, 0, result.stderr)
            let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let hits = try XCTUnwrap(report["results"] as? [[String: Any]])
            XCTAssertEqual(hits.count, 2)
            for hit in hits {
                let index = try XCTUnwrap(hit["index"] as? Int)
                XCTAssertEqual(Float(try XCTUnwrap(hit["score"] as? Double)), cosineSimilarity(queryVector, documents[index]), "\(extra)")
            }
        }
    }
}
