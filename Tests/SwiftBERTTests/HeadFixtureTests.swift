import Foundation
import XCTest
@testable import SwiftBERT

/// The task heads against tools/fixtures/make_head_fixtures.py: RANDOM-weight checkpoints (2 layers,
/// hidden 128) made by transformers, and what transformers' pipelines and sentence-transformers
/// output for them. Labels, ids and spans must be identical; scores, probabilities and
/// embeddings within 1e-4 (issue 15).
final class HeadFixtureTests: XCTestCase {
    static let tolerance: Float = 1e-4
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/heads")
    nonisolated(unsafe) static let reference: [String: Any] = {
        let data = try! Data(contentsOf: fixtures.appendingPathComponent("reference.json"))
        return try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    }()
    private static let conversions = ConvertedFixtures(fixtures, label: "heads")

    /// The fixture folder converted with `bert convert`'s code, once per run.
    static func converted(_ name: String) throws -> URL { try conversions.folder(name) }

    func assertClose(_ found: [Float], _ expected: [Double], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(found.count, expected.count, "\(what): length", file: file, line: line)
        let worst = zip(found, expected).map { abs(Double($0) - $1) }.max() ?? 0
        XCTAssertLessThanOrEqual(worst, Double(Self.tolerance), "\(what): largest difference \(worst)", file: file, line: line)
    }

    // MARK: - Pooling, Dense, Normalize, prompts

    func testSentenceTransformersFoldersMatchSentenceTransformers() throws {
        let variants = Self.reference["sentence_transformers"] as! [[String: Any]]
        XCTAssertEqual(variants.count, 8)
        var checked = 0
        for variant in variants {
            let name = variant["folder"] as! String
            let embedder = try SentenceEmbedder(folder: Self.converted(name), threads: 2)
            let config = embedder.model.config
            XCTAssertEqual(config.heads.sentence.pooling.rawValue, variant["pooling_mode"] as? String, name)
            XCTAssertEqual(config.heads.sentence.includePrompt ?? true, variant["include_prompt"] as? Bool, name)
            XCTAssertEqual(config.heads.sentence.normalize, variant["normalize"] as? Bool, name)
            XCTAssertEqual(config.encoder.maxSequenceLength, variant["max_seq_length"] as? Int, name)
            XCTAssertEqual(config.heads.sentence.defaultPromptName, variant["default_prompt_name"] as? String, name)
            let texts = variant["texts"] as! [String]
            for case_ in variant["cases"] as! [[String: Any]] {
                let arguments = case_["arguments"] as! [String: String]
                let options = SentenceEmbedder.Options(promptName: arguments["prompt_name"], prompt: arguments["prompt"])
                let prompt = try embedder.prompt(for: options)
                // sentence-transformers treats "" as no prompt, as SwiftBERT does.
                XCTAssertEqual(prompt ?? "", case_["effective_prompt"] as? String ?? "", "\(name) \(case_["call"]!)")
                let ids = (case_["input_ids"] as! [[Int]]).map { $0.map(Int32.init) }
                let limit = config.encoder.maxSequenceLength
                XCTAssertEqual(texts.map { embedder.tokenizer.encode((prompt ?? "") + $0, maxLength: limit).ids }, ids, "\(name): ids")
                let vectors = try embedder.embed(texts, options: options).vectors
                let expected = case_["embeddings"] as! [[Double]]
                for i in texts.indices {
                    assertClose(vectors[i], expected[i], "\(name) \(case_["call"]!) text \(i)")
                }
                checked += 1
            }
        }
        XCTAssertEqual(checked, 21)
    }

    /// A Dense module saved without bias (`"bias": false`, no linear.bias) gives the vectors of
    /// the same module with a zero bias: the zero bias the converter writes for it adds nothing.
    func testDenseWithoutBiasIsAZeroBias() throws {
        let fm = FileManager.default
        let source = Self.fixtures.appendingPathComponent("st-cls")
        let root = fm.temporaryDirectory.appendingPathComponent("swiftbert-dense-bias-\(ProcessInfo.processInfo.processIdentifier)")
        try? fm.removeItem(at: root)
        let texts = Self.reference["sentence_transformers"].flatMap { ($0 as! [[String: Any]])[0]["texts"] as? [String] }!
        let weight = try SafeTensorsFile(path: source.appendingPathComponent("2_Dense/model.safetensors").path).floatArray("linear.weight")
        var vectors: [[[Float]]] = []
        for hasBias in [false, true] {
            let folder = root.appendingPathComponent(hasBias ? "zero-bias" : "no-bias")
            try fm.createDirectory(at: folder.appendingPathComponent("2_Dense"), withIntermediateDirectories: true)
            for item in try fm.contentsOfDirectory(atPath: source.path) where item != "2_Dense" {
                try fm.createSymbolicLink(at: folder.appendingPathComponent(item),
                                          withDestinationURL: source.appendingPathComponent(item).resolvingSymlinksInPath())
            }
            var entries = [SafeTensorsWriter.Entry(name: "linear.weight", shape: [64, 128], floats: weight)]
            if hasBias { entries.append(.init(name: "linear.bias", shape: [64], floats: [Float](repeating: 0, count: 64))) }
            try SafeTensorsWriter.write(entries, metadata: ["format": "pt"], to: folder.appendingPathComponent("2_Dense/model.safetensors").path)
            let config = #"{"in_features": 128, "out_features": 64, "bias": \#(hasBias), "activation_function": "torch.nn.modules.activation.Tanh"}"#
            try config.write(to: folder.appendingPathComponent("2_Dense/config.json"), atomically: true, encoding: .utf8)
            let converted = root.appendingPathComponent("converted-" + folder.lastPathComponent)
            let report = try Converter.convert(huggingFaceFolder: folder, to: converted)
            XCTAssertEqual(report.config.heads.sentence.denseLayers?.first?.hasBias, hasBias)
            vectors.append(try SentenceEmbedder(folder: converted, threads: 2).embed(texts).vectors)
        }
        XCTAssertEqual(vectors[0].count, texts.count)
        XCTAssertEqual(vectors[0], vectors[1])
    }

    func testUnknownPromptNameIsRefusedWithTheKnownOnes() throws {
        let embedder = try SentenceEmbedder(folder: Self.converted("st-cls"), threads: 1)
        XCTAssertThrowsError(try embedder.embed(["x"], options: .init(promptName: "nope"))) { error in
            XCTAssertTrue("\(error)".contains("passage, query"), "\(error)")
        }
    }

    // MARK: - Sequence classification and reranking

    func checkClassifier(_ key: String) throws {
        let reference = (Self.reference[key] ?? (Self.reference["distilbert"] as! [String: Any])["classify"]) as! [String: Any]
        let classifier = try TextClassifier(folder: Self.converted(reference["folder"] as! String), threads: 2)
        let texts = reference["texts"] as! [String]
        let logits = try classifier.logits(texts)
        let expectedLogits = reference["logits"] as! [[Double]]
        let pipeline = reference["pipeline"] as! [[[String: Any]]]
        let results = try classifier.classify(texts)
        for i in texts.indices {
            assertClose(logits[i], expectedLogits[i], "\(key) logits \(i)")
            XCTAssertEqual(results[i].map(\.label), pipeline[i].map { $0["label"] as! String }, "\(key) labels \(i)")
            assertClose(results[i].map(\.score), pipeline[i].map { $0["score"] as! Double }, "\(key) scores \(i)")
        }
        XCTAssertEqual(try classifier.classify(texts, topK: 1).map { $0.map(\.label) }, pipeline.map { [$0[0]["label"] as! String] })
    }

    func testClassifierMatchesTheTextClassificationPipeline() throws { try checkClassifier("classify") }
    func testMultiLabelClassifierUsesSigmoid() throws { try checkClassifier("classify_multi_label") }

    func testRerankerMatchesCrossEncoder() throws {
        let reference = Self.reference["rerank"] as! [String: Any]
        let reranker = try Reranker(folder: Self.converted("bert-cross-encoder"), threads: 2)
        for case_ in reference["cases"] as! [[String: Any]] {
            let query = case_["query"] as! String, documents = case_["documents"] as! [String]
            let encodings = documents.map { reranker.classifier.tokenizer.encode(query, pair: $0) }
            XCTAssertEqual(encodings.map { $0.ids.map(Int.init) }, case_["input_ids"] as! [[Int]])
            XCTAssertEqual(encodings.map { $0.typeIds.map(Int.init) }, case_["token_type_ids"] as! [[Int]])
            assertClose(try reranker.scores(query: query, documents: documents), case_["scores"] as! [Double], "scores for \(query)")
            let ranked = try reranker.rerank(query: query, documents: documents)
            let expected = case_["rank"] as! [[String: Any]]
            XCTAssertEqual(ranked.map(\.index), expected.map { $0["index"] as! Int }, "order for \(query)")
            XCTAssertEqual(ranked.map(\.text), expected.map { $0["text"] as! String })
            assertClose(ranked.map(\.score), expected.map { $0["score"] as! Double }, "ranked scores")
            XCTAssertEqual(try reranker.rerank(query: query, documents: documents, topK: 2).map(\.index), Array(expected.prefix(2).map { $0["index"] as! Int }))
        }
    }

    // MARK: - Token classification

    func checkNER(_ reference: [String: Any]) throws {
        let name = reference["folder"] as! String
        try assertEntitiesMatchPipeline(TokenClassifier(folder: Self.converted(name), threads: 2), texts: reference["texts"] as! [String],
                                        aggregations: reference["aggregations"] as! [String: [[[String: Any]]]], name)
    }

    func testNERMatchesTheTokenClassificationPipeline() throws {
        try checkNER(Self.reference["ner"] as! [String: Any])
    }

    // MARK: - DistilBERT

    var distilbert: [String: Any] { Self.reference["distilbert"] as! [String: Any] }

    func testDistilBERTHiddenStatesAndMeanPooling() throws {
        let reference = distilbert["model"] as! [String: Any]
        let folder = try Self.converted("distilbert-mlm")
        let model = try BertModel(folder: folder, threads: 2)
        XCTAssertEqual(model.config.encoder.architecture, .distilBERT)
        let tokenizer = try Tokenizer.load(folder: folder)
        let texts = reference["texts"] as! [String]
        let ids = texts.map { tokenizer.encode($0).ids }
        XCTAssertEqual(ids.map { $0.map(Int.init) }, reference["input_ids"] as! [[Int]])
        let output = try model.encode(ids)
        let expected = try SafeTensorsFile(path: Self.fixtures.appendingPathComponent("reference.safetensors").path)
        for i in texts.indices {
            let want = Array(try expected.floats("distilbert.last_hidden_state.\(i)")).map(Double.init)
            assertClose(output.hiddenStates(i), want, "DistilBERT last hidden state \(i)")
        }
        // sentence-transformers' default for a plain checkpoint: mean pooling, no Normalize.
        let vectors = try SentenceEmbedder(model: model, tokenizer: tokenizer).embed(texts, options: .init(pooling: .mean, normalize: false)).vectors
        for (i, want) in (reference["mean_pooled"] as! [[Double]]).enumerated() { assertClose(vectors[i], want, "mean pooled \(i)") }
    }

    func testDistilBERTFillMask() throws {
        let reference = distilbert["fill_mask"] as! [String: Any]
        let fill = try FillMask(folder: Self.converted("distilbert-mlm"), threads: 2)
        var checked = 0
        for case_ in reference["cases"] as! [[String: Any]] {
            let predictions = try fill.predict(case_["text"] as! String, topK: 10)
            XCTAssertEqual(predictions.map(\.position), case_["mask_positions"] as! [Int])
            let ids = case_["top_ids"] as! [[Int]], probabilities = case_["top_probabilities"] as! [[Double]]
            for (k, prediction) in predictions.enumerated() {
                XCTAssertEqual(prediction.candidates.map { Int($0.id) }, ids[k], "top-10 ids of \(case_["text"]!)")
                assertClose(prediction.candidates.map(\.probability), probabilities[k], "top-10 probabilities")
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, 5)
    }

    func testDistilBERTClassifier() throws { try checkClassifier("distilbert-classify") }

    func testDistilBERTNER() throws { try checkNER(distilbert["ner"] as! [String: Any]) }
}

/// Every aggregation strategy of `ner` on `texts` against transformers' token-classification
/// pipeline (`aggregations`: its output per strategy and text): labels, words, spans and (token
/// by token) indices identical, scores within the fixtures' tolerance.
func assertEntitiesMatchPipeline(_ ner: TokenClassifier, texts: [String], aggregations: [String: [[[String: Any]]]], _ name: String,
                                 file: StaticString = #filePath, line: UInt = #line) throws {
    XCTAssertEqual(aggregations.count, 5, file: file, line: line)
    for strategy in AggregationStrategy.allCases {
        let found = try ner.entities(texts, aggregation: strategy)
        let expected = try XCTUnwrap(aggregations[strategy.rawValue], file: file, line: line)
        for i in texts.indices {
            let key = strategy == .none ? "entity" : "entity_group"
            let what = "\(name) \(strategy) text \(i)"
            XCTAssertEqual(found[i].map(\.label), expected[i].map { $0[key] as! String }, what, file: file, line: line)
            XCTAssertEqual(found[i].map(\.word), expected[i].map { $0["word"] as! String }, what, file: file, line: line)
            XCTAssertEqual(found[i].map(\.start), expected[i].map { $0["start"] as! Int }, what, file: file, line: line)
            XCTAssertEqual(found[i].map(\.end), expected[i].map { $0["end"] as! Int }, what, file: file, line: line)
            if strategy == .none {
                XCTAssertEqual(found[i].map { $0.index! }, expected[i].map { $0["index"] as! Int }, what, file: file, line: line)
            }
            if found[i].count == expected[i].count {
                let worst = zip(found[i], expected[i]).map { abs(Double($0.score) - ($1["score"] as! Double)) }.max() ?? 0
                XCTAssertLessThanOrEqual(worst, 1e-4, "\(what): largest score difference \(worst)", file: file, line: line)
            }
        }
    }
}
