import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

/// The routes of the model seam: every head a checkpoint has, served; TEI's and OpenAI's shapes;
/// and the defects of the model-seam issue, each with the test that failed before the change.
extension ServerTests {
    func floats(_ reply: HTTPReply, file: StaticString = #filePath, line: UInt = #line) throws -> [[Float]] {
        XCTAssertEqual(reply.status, 200, reply.text, file: file, line: line)
        return try XCTUnwrap(reply.json() as? [[NSNumber]], reply.text, file: file, line: line).map { $0.map(\.floatValue) }
    }

    // MARK: - Classification and reranking

    /// /predict gives the scores of `bert classify` (TextClassifier, checked against transformers
    /// by HeadFixtureTests), /rerank and /v1/rerank those of `bert rerank` (Reranker).
    /// RANDOM-weight fixtures: exactness only.
    func testPredictAndRerankGiveTheScoresOfClassifyAndRerank() throws {
        let classifierFolder = try HeadFixtureTests.converted("bert-classifier")
        let crossEncoderFolder = try HeadFixtureTests.converted("bert-cross-encoder")
        let server = try ServerProcess(bert: bertPath, arguments: ["--model", "\(classifierFolder.path),\(crossEncoderFolder.path)"])
        let classifier = try TextClassifier(folder: classifierFolder, threads: 2)
        let texts = ["I loved this film from start to end.", "The service was slow and the food was cold.", "It is a chair."]

        func assertLabels(_ found: Any?, _ expected: [(String, Float)], file: StaticString = #filePath, line: UInt = #line) {
            let labels = (found as? [[String: Any]]) ?? []
            XCTAssertEqual(labels.map { $0["label"] as? String }, expected.map(\.0), file: file, line: line)
            for (label, want) in zip(labels, expected) {
                XCTAssertEqual((label["score"] as? NSNumber)?.floatValue ?? .nan, want.1, accuracy: 1e-5, file: file, line: line)
            }
        }
        let expected = try classifier.classify(texts).map { $0.map { ($0.label, $0.score) } }
        // A batch: [[…]]; one text: […] (TEI's shapes); the root answers one text as [[…]].
        let batch = try XCTUnwrap(server.post("/predict", ["inputs": texts]).json() as? [Any])
        XCTAssertEqual(batch.count, 3)
        for (found, want) in zip(batch, expected) { assertLabels(found, want) }
        assertLabels(try server.post("/predict", ["inputs": texts[1]]).json(), expected[1])
        let root = try XCTUnwrap(server.post("/", ["inputs": texts[1]]).json() as? [Any])
        XCTAssertEqual(root.count, 1)
        assertLabels(root.first, expected[1])
        // A pair, and raw scores (the logits).
        let pairLogits = try classifier.logits([texts[0]], pairs: [texts[2]])[0]
        assertLabels(try server.post("/predict", ["inputs": [texts[0], texts[2]]]).json(), classifier.scores(pairLogits).map { ($0.label, $0.score) })
        let rawExpected = zip(classifier.labels, try classifier.logits([texts[0]])[0]).sorted { $0.1 > $1.1 }.map { ($0.0, $0.1) }
        assertLabels(try server.post("/predict", ["inputs": texts[0], "raw_scores": true]).json(), rawExpected)

        let reranker = try Reranker(folder: crossEncoderFolder, threads: 2)
        let query = "who may copy the software"
        let documents = ["Anyone may copy and share it.", "The weather is mild in May.", "Copies need the author's leave.", "Blue."]
        let ranked = try reranker.rerank(query: query, documents: documents)
        let model = crossEncoderFolder.path
        let rerank = try XCTUnwrap(server.post("/rerank", ["model": model, "query": query, "texts": documents, "return_text": true]).json() as? [[String: Any]])
        XCTAssertEqual(rerank.map { $0["index"] as? Int }, ranked.map(\.index))
        XCTAssertEqual(rerank.map { $0["text"] as? String }, ranked.map(\.text))
        for (found, want) in zip(rerank, ranked) { XCTAssertEqual((found["score"] as? NSNumber)?.floatValue ?? .nan, want.score, accuracy: 1e-5) }
        let raw = try XCTUnwrap(server.post("/rerank", ["model": model, "query": query, "texts": documents, "raw_scores": true]).json() as? [[String: Any]])
        for (found, want) in zip(raw, ranked) {
            XCTAssertEqual(sigmoid((found["score"] as? NSNumber)?.floatValue ?? .nan), want.score, accuracy: 1e-5)
            XCTAssertNil(found["text"])
        }
        let cohere = try XCTUnwrap(server.post("/v1/rerank", ["model": model, "query": query, "documents": documents, "top_n": 2,
                                                              "return_documents": true]).json() as? [String: Any])
        let results = try XCTUnwrap(cohere["results"] as? [[String: Any]])
        XCTAssertEqual(results.map { $0["index"] as? Int }, ranked.prefix(2).map(\.index))
        XCTAssertEqual(results.map { ($0["document"] as? [String: Any])?["text"] as? String }, ranked.prefix(2).map(\.text))
        XCTAssertEqual((results.first?["relevance_score"] as? NSNumber)?.floatValue ?? .nan, ranked[0].score, accuracy: 1e-5)
        XCTAssertGreaterThan(((cohere["usage"] as? [String: Any])?["total_tokens"] as? Int) ?? 0, documents.count * 3)
        // A classifier with several labels does not rerank; /info says what each model is.
        teiError(try server.post("/rerank", ["query": query, "texts": documents]), status: 422, mentions: ["labels", "/predict"])
        let info = try XCTUnwrap(server.get("/info").json() as? [String: Any])
        let types = (info["models"] as? [[String: Any]])?.compactMap { ($0["model_type"] as? [String: Any])?.keys.first }
        XCTAssertEqual(types, ["classifier", "reranker"])
        // And what runs the Linear layers: the same kernel report as `bert info` (AMX or not).
        let kernels = try XCTUnwrap(info["kernels"] as? [String: Any])
        XCTAssertEqual(kernels["matrix_unit"] as? String, KernelReport.current.matrixUnit)
        XCTAssertEqual(kernels["bf16_linear"] as? String, KernelReport.current.bf16Linear)
        XCTAssertEqual(server.terminate(), 0)
    }

    // MARK: - Sparse, per-token, similarity, decode

    /// /embed_sparse on splade-tiny: transformers' SPLADE (Fixtures/sparse), within 1e-4.
    func testEmbedSparseMatchesSPLADEOfTransformers() throws {
        let server = try sharedServer()
        let reference = try SparseTests.reference()
        let texts = reference.texts.map(\.text)
        let reply = try server.post("/embed_sparse", ["inputs": texts, "model": "splade-tiny"])
        XCTAssertEqual(reply.status, 200, reply.text)
        let vectors = try XCTUnwrap(reply.json() as? [[[String: Any]]])
        XCTAssertEqual(vectors.count, texts.count)
        for (entries, expected) in zip(vectors, reference.texts) {
            let found = SparseVector(indices: entries.map { Int32($0["index"] as? Int ?? -1) },
                                     values: entries.map { ($0["value"] as? NSNumber)?.floatValue ?? .nan })
            SparseTests.assertMatches(found, expected)
        }
    }

    func testEmbedAllSimilarityDecodeTruncationAndTheRoot() throws {
        let server = try sharedServer()
        let texts = Array(Self.sentences.prefix(3))
        let encoder = try loadModel("all-MiniLM-L6-v2")
        let tokenizer = try libraryTokenizer("all-MiniLM-L6-v2")
        // /embed_all: every token's last hidden state.
        let all = try XCTUnwrap(server.post("/embed_all", ["inputs": texts]).json() as? [[[NSNumber]]])
        for (i, text) in texts.enumerated() {
            let ids = tokenizer.encode(text).ids
            let states = try encoder.encode([ids]).hiddenStates(0)
            XCTAssertEqual(all[i].count, ids.count)
            let found = all[i].flatMap { $0.map(\.floatValue) }
            XCTAssertLessThanOrEqual(zip(found, states).map { abs($0 - $1) }.max() ?? 1, 1e-5)
        }
        // /similarity: cosines of the library's vectors.
        let vectors = try libraryVectors(texts)
        let similarity = try XCTUnwrap(server.post("/similarity", ["inputs": ["source_sentence": texts[0], "sentences": [texts[1], texts[2]]]]).json() as? [NSNumber])
        XCTAssertEqual(similarity.map(\.floatValue)[0], cosineSimilarity(vectors[0], vectors[1]), accuracy: 1e-5)
        XCTAssertEqual(similarity.map(\.floatValue)[1], cosineSimilarity(vectors[0], vectors[2]), accuracy: 1e-5)
        // /decode.
        let ids = tokenizer.encode(texts[0]).ids
        let decoded = try XCTUnwrap(server.post("/decode", ["ids": ids.map(Int.init)]).json() as? [String])
        XCTAssertEqual(decoded, [tokenizer.decode(ids)])
        // truncation_direction Left keeps the end of a long text: the vector of its last tokens.
        let long = (0..<300).map { "word\($0 % 37)" }.joined(separator: " ") + " the very end"
        let left = tokenizer.encode(long, maxLength: 256, truncatesLeft: true)
        XCTAssertTrue(left.wasTruncated)
        XCTAssertEqual(Array(left.ids.suffix(4)), Array(tokenizer.encode("the very end").ids.suffix(4)))
        let byText = try floats(server.post("/embed", ["inputs": long, "truncate": true, "truncation_direction": "Left"]))
        let byIds = try floats(server.post("/embed", ["inputs": [left.ids.map(Int.init)]]))
        assertVectorsClose(byText, byIds)
        let right = try floats(server.post("/embed", ["inputs": long, "truncate": true, "truncation_direction": "right"]))
        XCTAssertGreaterThan(zip(right[0], byText[0]).map { abs($0 - $1) }.max() ?? 0, 1e-3, "left and right truncation differ")
        teiError(try server.post("/embed", ["inputs": "x", "truncation_direction": "up"]), status: 422, mentions: ["Left", "Right"])
        // TEI's root on an embedding model: /embed; the model's Hugging Face id names it too.
        assertVectorsClose(try floats(server.post("/", ["inputs": texts[0]])), [vectors[0]])
        let byId = try server.post("/v1/embeddings", ["input": texts[0], "model": "sentence-transformers/all-MiniLM-L6-v2"])
        assertVectorsClose(try self.vectors(byId), [vectors[0]])
        let models = try XCTUnwrap(server.get("/v1/models").json() as? [String: Any])
        XCTAssertEqual((models["data"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["all-MiniLM-L6-v2", "splade-tiny"])
    }

    // MARK: - Methods, documents, CORS, token ids

    func testWrongMethodsUnknownRoutesHeadAndTheOpenAPIDocument() throws {
        let server = try sharedServer()
        let wrong = try server.get("/embed")
        teiError(wrong, status: 405, mentions: ["POST"])
        XCTAssertEqual(wrong.headers["allow"], "POST")
        openAIError(try server.get("/v1/embeddings"), status: 405, mentions: ["POST"])
        teiError(try server.post("/health", ["x": 1]), status: 405, mentions: ["GET"])
        teiError(try server.post("/no/such/route", ["x": 1]), status: 404, mentions: ["/openapi.json"])
        let head = try httpRequest(port: server.port, method: "HEAD", path: "/health")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)

        let document = try XCTUnwrap(server.get("/openapi.json").json() as? [String: Any])
        XCTAssertEqual(document["openapi"] as? String, "3.1.0")
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: Any]])
        // The shared server runs MiniLM and splade-tiny: the routes they answer are listed (the
        // sparse and fill-mask ones through splade-tiny), those that need a classifier or
        // BGE-M3's ColBERT head are not.
        for (path, method) in [("/", "post"), ("/embed", "post"), ("/embed_sparse", "post"), ("/embed_all", "post"),
                               ("/similarity", "post"), ("/tokenize", "post"), ("/decode", "post"), ("/info", "get"),
                               ("/v1/embeddings", "post"), ("/v1/models", "get"), ("/fill", "post"), ("/embed_outputs", "post"),
                               ("/health", "get"), ("/metrics", "get"), ("/openapi.json", "get"), ("/docs", "get")] {
            XCTAssertNotNil(paths[path]?[method], "\(method.uppercased()) \(path) is not in /openapi.json")
        }
        for path in ["/predict", "/rerank", "/v1/rerank", "/v2/rerank", "/embed_multi_vector"] {
            XCTAssertNil(paths[path], "\(path): no served model answers it, yet /openapi.json lists it")
        }
        // /root's answer may be /predict's or /rerank's: their schemas stay in the components.
        let schemas = try XCTUnwrap((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        XCTAssertNotNil(schemas["predict_response"])
        XCTAssertNotNil(schemas["rerank_response"])
        let docs = try server.get("/docs")
        XCTAssertEqual(docs.status, 200)
        XCTAssertTrue(docs.headers["content-type"]?.hasPrefix("text/html") ?? false)
        XCTAssertTrue(docs.text.contains("/openapi.json"))
    }

    func testTokenIdsWhenAskedCORSAndServedModelName() throws {
        let server = try ServerProcess(bert: bertPath, arguments: ["--accept-token-ids", "--cors-origin", "https://app.example",
                                                                  "--served-model-name", "minilm"])
        let texts = Array(Self.sentences.prefix(2))
        let tokenizer = try libraryTokenizer("all-MiniLM-L6-v2")
        let ids = texts.map { tokenizer.encode($0).ids.map(Int.init) }
        let reply = try server.post("/v1/embeddings", ["input": ids, "model": "minilm"], headers: ["Origin": "https://app.example"])
        assertVectorsClose(try vectors(reply), try libraryVectors(texts))
        XCTAssertEqual(reply.headers["access-control-allow-origin"], "https://app.example")
        let preflight = try httpRequest(port: server.port, method: "OPTIONS", path: "/v1/embeddings",
                                        headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "POST"])
        XCTAssertTrue(preflight.headers["access-control-allow-methods"]?.contains("POST") ?? false, "\(preflight.headers)")
        XCTAssertEqual(server.terminate(), 0)
    }

    /// --default-prompt-name and --default-prompt (TEI's): the prompt of a request that names none,
    /// the OpenAI route's included; a request's prompt_name still wins. A name the model lacks
    /// fails the start with a message naming its prompts; both options at once are a usage error.
    /// Qwen3's RANDOM-weight fixture (its "query" and "document" prompts): exactness only.
    func testDefaultPromptNameAndDefaultPrompt() throws {
        let qwen3 = try Qwen3Tests.converted().path
        let text = "how do tiles multiply?"
        let plainServer = try ServerProcess(bert: bertPath, arguments: ["--model", qwen3])
        let queried = try floats(plainServer.post("/embed", ["inputs": [text], "prompt_name": "query"]))
        let plain = try floats(plainServer.post("/embed", ["inputs": [text]]))
        XCTAssertNotEqual(queried, plain)
        XCTAssertTrue(try XCTUnwrap(plainServer.get("/info").json() as? [String: Any])["default_prompt"] is NSNull)
        XCTAssertEqual(plainServer.terminate(), 0)

        let named = try ServerProcess(bert: bertPath, arguments: ["--model", qwen3, "--default-prompt-name", "query"])
        XCTAssertEqual(try floats(named.post("/embed", ["inputs": [text]])), queried)
        XCTAssertEqual(try vectors(named.post("/v1/embeddings", ["input": [text]])), queried)
        XCTAssertEqual(try floats(named.post("/embed", ["inputs": [text], "prompt_name": "document"])), plain)  // "" prompt
        let prompt = try XCTUnwrap(Qwen3Tests.fixture("model/config_sentence_transformers.json")["prompts"]?["query"]?.string)
        let info = try XCTUnwrap(named.get("/info").json() as? [String: Any])
        XCTAssertEqual(info["default_prompt"] as? String, prompt)
        XCTAssertEqual((info["models"] as? [[String: Any]])?.first?["default_prompt"] as? String, prompt)
        XCTAssertEqual(named.terminate(), 0)

        let given = try ServerProcess(bert: bertPath, arguments: ["--model", qwen3, "--default-prompt", prompt])
        XCTAssertEqual(try floats(given.post("/embed", ["inputs": [text]])), queried)
        XCTAssertEqual(given.terminate(), 0)

        let unknown = try runProcess(bertPath, ["serve", "--port", "0", "--model", qwen3, "--default-prompt-name", "passage"])
        XCTAssertNotEqual(unknown.status, 0)
        for word in ["--default-prompt-name passage", "document, query", "--default-prompt"] {
            XCTAssertTrue(unknown.stderr.contains(word), unknown.stderr)
        }
        let both = try runProcess(bertPath, ["serve", "--model", qwen3, "--default-prompt-name", "query", "--default-prompt", "x"])
        XCTAssertEqual(both.status, 64, both.stderr)
        XCTAssertTrue(both.stderr.contains("not both"), both.stderr)
    }

    /// Cohere's int8 and uint8 with `--calibration`: each dimension cut into 255 steps between its
    /// minimum and maximum over the calibration's embeddings, as sentence-transformers'
    /// quantize_embeddings does (worked out here from the floats the same answer gives). Without
    /// a calibration they are refused (testCohereEmbedChoosesPromptsByInputTypeAndPacksSigns).
    func testCohereInt8AndUint8ComeFromTheCalibration() throws {
        let calibration = temporaryPath("cohere-calibration.npy"), short = temporaryPath("cohere-calibration-8.npy")
        defer { for path in [calibration, short] { try? FileManager.default.removeItem(atPath: path) } }
        let sentences = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/sentences.txt").path
        for (path, extra) in [(calibration, [String]()), (short, ["--dimensions", "8"])] {
            let made = try bert(["embed", "--input", sentences, "--format", "npy", "--output", path, "--quiet"] + extra)
            XCTAssertEqual(made.status, 0, made.stderr)
        }
        let rows = try NPYReader(path: calibration).readAll()
        let minima = (0..<384).map { d in rows.map { $0[d] }.min()! }, maxima = (0..<384).map { d in rows.map { $0[d] }.max()! }

        let server = try ServerProcess(bert: bertPath, arguments: ["--calibration", calibration])
        defer { XCTAssertEqual(server.terminate(), 0) }
        let texts = ["how do tiles multiply?", "Tiles multiply sixteen rows at once.", "A cat sleeps."]
        let reply = try server.post("/v2/embed", ["texts": texts, "input_type": "search_document", "embedding_types": ["float", "int8", "uint8"]])
        XCTAssertEqual(reply.status, 200, reply.text)
        let embeddings = try XCTUnwrap((reply.json() as? [String: Any])?["embeddings"] as? [String: Any], reply.text)
        let floats = try XCTUnwrap(embeddings["float"] as? [[NSNumber]]).map { $0.map(\.floatValue) }
        let buckets = floats.map { vector in
            (0..<384).map { d -> Int in
                let step = (maxima[d] - minima[d]) / 255
                return Int(min(max(((vector[d] - minima[d]) / (step == 0 ? 1 : step)).rounded(.down), 0), 255))
            }
        }
        XCTAssertEqual(try XCTUnwrap(embeddings["uint8"] as? [[NSNumber]]).map { $0.map(\.intValue) }, buckets)
        XCTAssertEqual(try XCTUnwrap(embeddings["int8"] as? [[NSNumber]]).map { $0.map(\.intValue) }, buckets.map { $0.map { $0 - 128 } })
        XCTAssertTrue(buckets.joined().contains { $0 > 0 && $0 < 255 }, "the texts fall inside the calibrated ranges, not all at their ends")
        // The ranges are of the whole vectors: a cut and normalised again vector would need its own.
        let cut = try server.post("/v2/embed", ["texts": texts, "embedding_types": ["int8"], "output_dimension": 8])
        XCTAssertEqual(cut.status, 422, cut.text)
        XCTAssertTrue(cut.text.contains("output_dimension"), cut.text)

        // A calibration of another dimension, or one that names no served model, fails the start.
        let other = try runProcess(bertPath, ["serve", "--port", "0", "--calibration", short])
        XCTAssertNotEqual(other.status, 0)
        XCTAssertTrue(other.stderr.contains("8-dimensional") && other.stderr.contains("384"), other.stderr)
        let unnamed = try runProcess(bertPath, ["serve", "--port", "0", "--model", "all-MiniLM-L6-v2,splade-tiny", "--calibration", calibration])
        XCTAssertEqual(unnamed.status, 64, unnamed.stderr)
        XCTAssertTrue(unnamed.stderr.contains("MODEL=FILE.npy"), unnamed.stderr)
    }

    /// Cohere's embed (/v2/embed, /v1/embed): input_type picks the model's prompt for its role
    /// (TextRole: "query", "document", and "Classification" as MTEB spells it), the vectors are
    /// /embed's, and binary, ubinary and base64 hold exactly the float vector's signs and bytes.
    /// RANDOM-weight Qwen3 fixture (prompts "query" and "document": ""), with a "Classification"
    /// prompt added to a copy of its converted folder.
    func testCohereEmbedChoosesPromptsByInputTypeAndPacksSigns() throws {
        let source = try Qwen3Tests.converted()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-cohere-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.copyItem(at: source, to: folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        let configURL = folder.appendingPathComponent("config.json")
        var config = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: configURL)) as? [String: Any])
        var prompts = try XCTUnwrap(config["prompts"] as? [String: String], "the converted folder keeps the prompts in config.json")
        prompts["Classification"] = "Classify the topic: "
        config["prompts"] = prompts
        try JSONSerialization.data(withJSONObject: config).write(to: configURL)

        let server = try ServerProcess(bert: bertPath, arguments: ["--model", folder.path])
        defer { XCTAssertEqual(server.terminate(), 0) }
        let texts = ["how do tiles multiply?", "Tiles multiply sixteen rows at once."]
        func embed(_ promptName: String?) throws -> [[Float]] {
            try floats(server.post("/embed", promptName.map { ["inputs": texts, "prompt_name": $0] } ?? ["inputs": texts]))
        }
        let (queried, plain, classified) = (try embed("query"), try embed(nil), try embed("Classification"))
        XCTAssertNotEqual(queried, plain)
        XCTAssertNotEqual(classified, plain)
        func cohere(_ path: String, _ body: [String: Any]) throws -> [String: Any] {
            let reply = try server.post(path, body.merging(["texts": texts]) { given, _ in given })
            XCTAssertEqual(reply.status, 200, reply.text)
            return try XCTUnwrap(reply.json() as? [String: Any], reply.text)
        }
        func numbers(_ value: Any?) -> [[Float]] { ((value as? [[NSNumber]]) ?? []).map { $0.map(\.floatValue) } }
        func integers(_ value: Any?) -> [[Int]] { ((value as? [[NSNumber]]) ?? []).map { $0.map(\.intValue) } }

        let answer = try cohere("/v2/embed", ["input_type": "search_query", "embedding_types": ["float", "binary", "ubinary", "base64", "float"]])
        let embeddings = try XCTUnwrap(answer["embeddings"] as? [String: Any])
        XCTAssertEqual(Set(embeddings.keys), ["float", "binary", "ubinary", "base64"])
        XCTAssertEqual(numbers(embeddings["float"]), queried)
        // The signs, first dimension in the highest bit (numpy's packbits of x > 0).
        let signs = queried.map { vector in
            stride(from: 0, to: vector.count, by: 8).map { start in
                (start..<min(start + 8, vector.count)).reduce(0) { $0 | (vector[$1] > 0 ? 0x80 >> ($1 - start) : 0) }
            }
        }
        XCTAssertEqual(integers(embeddings["ubinary"]), signs)
        XCTAssertEqual(integers(embeddings["binary"]), signs.map { $0.map { $0 - 128 } })
        let decoded = try XCTUnwrap(embeddings["base64"] as? [String]).map { text -> [Float] in
            let bytes = [UInt8](Data(base64Encoded: text) ?? Data())
            return stride(from: 0, to: bytes.count, by: 4).map { i in
                Float(bitPattern: UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
            }
        }
        XCTAssertEqual(decoded, queried)
        XCTAssertEqual(answer["response_type"] as? String, "embeddings_by_type")
        XCTAssertEqual(answer["texts"] as? [String], texts)
        let meta = try XCTUnwrap(answer["meta"] as? [String: Any])
        XCTAssertEqual((meta["api_version"] as? [String: Any])?["version"] as? String, "2")
        XCTAssertGreaterThan(((meta["billed_units"] as? [String: Any])?["input_tokens"] as? Int) ?? 0, 2 * texts.count)

        // Each input_type's prompt: "document" is "" here; clustering has none; no input_type: the
        // server's default prompt (none).
        XCTAssertEqual(numbers(try cohere("/v2/embed", ["input_type": "search_document"])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] }), plain)
        XCTAssertEqual(numbers(try cohere("/v2/embed", ["input_type": "classification"])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] }), classified)
        XCTAssertEqual(numbers(try cohere("/v2/embed", ["input_type": "clustering"])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] }), plain)
        XCTAssertEqual(numbers(try cohere("/v2/embed", [:])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] }), plain)
        // v1 without embedding_types: the float vectors themselves.
        let v1 = try cohere("/v1/embed", ["input_type": "search_query"])
        XCTAssertEqual(numbers(v1["embeddings"]), queried)
        XCTAssertEqual(v1["response_type"] as? String, "embeddings_floats")
        // output_dimension: the first dimensions, normalised again, as /v1/embeddings' dimensions.
        let cut = numbers(try cohere("/v2/embed", ["input_type": "search_document", "output_dimension": 8])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] })
        XCTAssertEqual(cut, try vectors(server.post("/v1/embeddings", ["input": texts, "dimensions": 8])))
        // max_tokens: more than the texts have changes nothing; fewer cuts them, or is refused with truncate NONE.
        XCTAssertEqual(numbers(try cohere("/v2/embed", ["input_type": "search_query", "max_tokens": 500])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] }), queried)
        XCTAssertNotEqual(numbers(try cohere("/v2/embed", ["input_type": "search_query", "max_tokens": 2])["embeddings"].flatMap { ($0 as? [String: Any])?["float"] }), queried)

        // truncate START cuts a long text's start and keeps the prompt, as /embed's Left does
        // (TokenizerAPITests.testTruncationFromTheLeftKeepsThePrompt checks the tokens).
        let limit = try XCTUnwrap((server.get("/info").json() as? [String: Any])?["max_input_length"] as? Int)
        let long = String(repeating: "tile ", count: limit + 50) + "end"
        func startCut(_ inputType: String) throws -> [[Float]] {
            numbers((try cohere("/v2/embed", ["texts": [long], "input_type": inputType, "truncate": "START"])["embeddings"] as? [String: Any])?["float"])
        }
        let startQuery = try startCut("search_query")
        XCTAssertEqual(startQuery.count, 1)
        XCTAssertEqual(startQuery, try floats(server.post("/embed", ["inputs": [long], "prompt_name": "query", "truncate": true, "truncation_direction": "Left"])))
        XCTAssertNotEqual(startQuery, try startCut("search_document"), "the query prompt was cut with the text's start")
        // max_tokens counts the text's tokens: the prompt's and the framing come on top.
        let tokenizer = try Tokenizer(tokenizerJSON: folder.appendingPathComponent("tokenizer.json"))
        let queryPrompt = try XCTUnwrap(prompts["query"])
        for (inputType, prompt) in [("search_query", queryPrompt), ("search_document", "")] {
            for truncate in ["START", "END"] {
                let answer = try cohere("/v2/embed", ["texts": [texts[1]], "input_type": inputType, "truncate": truncate, "max_tokens": 2])
                let billed = ((answer["meta"] as? [String: Any])?["billed_units"] as? [String: Any])?["input_tokens"] as? Int
                XCTAssertEqual(billed, tokenizer.framingCount + tokenizer.encode(prompt, addSpecialTokens: false).count + 2, "\(inputType), \(truncate)")
            }
        }

        func refused(_ body: [String: Any], status: Int = 422, mentions words: [String]) throws {
            let reply = try server.post("/v2/embed", body)
            XCTAssertEqual(reply.status, status, "\(body): \(reply.text)")
            for word in words { XCTAssertTrue(reply.text.contains(word), "\(body): \(reply.text)") }
        }
        try refused(["texts": texts, "embedding_types": ["int8"]], mentions: ["calibrated", "ubinary", "quantize_embeddings"])
        try refused(["texts": texts, "embedding_types": [String]()], mentions: ["embedding_types"])
        try refused(["texts": texts, "input_type": "image"], mentions: ["search_query", "image"])
        try refused(["texts": texts, "truncate": "MIDDLE"], mentions: ["NONE", "START", "END"])
        try refused(["texts": texts, "max_tokens": 2, "truncate": "NONE"], status: 413, mentions: ["max_tokens", "truncate END or START"])
        try refused(["texts": [long], "truncate": "NONE"], status: 413, mentions: ["over the model's limit", "send truncate END or START"])
        let trailing = try httpRequest(port: server.port, method: "POST", path: "/v2/embed", body: Data(#"{"texts": ["a", "b",]}"#.utf8))
        XCTAssertEqual(trailing.status, 400, trailing.text)
        XCTAssertTrue(trailing.text.contains("comma before a closing bracket"), trailing.text)
        try refused(["texts": texts, "output_dimension": 0], mentions: ["output_dimension"])
        try refused(["texts": texts, "images": ["data:image/png;base64,AAAA"]], mentions: ["text only"])
        try refused(["input_type": "search_query"], mentions: ["texts"])
    }

    // MARK: - Client faults are 4xx; waiting is advised only when it helps

    /// A body cut short of its Content-Length, and one that is not UTF-8: 400, never 500.
    func testShortBodiesAndInvalidUTF8Get400() throws {
        let server = try sharedServer()
        let short = try rawExchange(port: server.port, head: "POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
                                    body: Data(#"{"inputs": "hi"}"#.utf8))
        XCTAssertTrue(short.hasPrefix("HTTP/1.1 400"), short)
        XCTAssertTrue(short.contains("Content-Length"), short)
        var bytes = Data(#"{"inputs": "caf"#.utf8)
        bytes.append(contentsOf: [0xE9, 0x20, 0xFF])
        bytes.append(Data(#""}"#.utf8))
        let reply = try httpRequest(port: server.port, method: "POST", path: "/embed", body: bytes)
        teiError(reply, status: 400, mentions: ["UTF-8", "offset 15"])
        XCTAssertEqual(try server.post("/embed", ["inputs": "still here"]).status, 200)
    }

    /// More inputs than one client may ever queue: 413 saying the limit (a 503 would invite retries
    /// that can never succeed). A timeout: 503 saying the request was not processed.
    func testRequestLargerThanTheQueueGets413AndATimeoutSaysNotProcessed() throws {
        let server = try ServerProcess(bert: bertPath, arguments: ["--queue-capacity", "4", "--request-timeout", "0.001"])
        let texts = Array(Self.sentences.prefix(8))
        openAIError(try server.post("/v1/embeddings", ["input": texts]), status: 413, mentions: ["8 inputs", "the 3 one client may have", "--queue-capacity 4"])
        // 3: one client's share of a queue of 4.
        let long = Array(repeating: Self.sentences.prefix(12).joined(separator: " "), count: 3)
        let timedOut = try server.post("/v1/embeddings", ["input": long])
        openAIError(timedOut, status: 503, mentions: ["not processed", "retrying is safe"])
        XCTAssertEqual(server.terminate(), 0)
    }

    /// Tokenising runs off the threads that serve connections: /health answers within 50 ms
    /// while two large /tokenize requests are being tokenised (it stalled for seconds before).
    /// Two clients post /tokenize back to back until 10 probes have run with both in flight, so the
    /// check holds however fast this machine tokenises (a fixed count of requests ended before the
    /// probes began on a faster CI host).
    func testHealthAnswersWhileLargeTokenizeRequestsRun() throws {
        let server = try ServerProcess(bert: bertPath, arguments: ["--body-limit", "16000000"])
        // 330,000 tokens: an answer of 24 MB, under the default --max-response-bytes (32 MiB).
        let text = String(repeating: "Tokenisation of a very long request takes a while. ", count: 30_000)
        let body = jsonBody(["inputs": text])
        let load = TokenizeLoad()
        let done = DispatchGroup()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: done) {
                while !load.stopped {
                    load.begin()
                    let reply = try? httpRequest(port: server.port, method: "POST", path: "/tokenize", body: body, timeout: 120)
                    load.end(ok: reply?.status == 200, reply.map { "\($0.status) \($0.text.prefix(200))" } ?? "no answer")
                }
            }
        }
        var busyProbes: [Double] = []
        let deadline = Date().addingTimeInterval(60)
        while busyProbes.count < 10, Date() < deadline {
            let before = load.snapshot()
            guard before.inFlight == 2 else { Thread.sleep(forTimeInterval: 0.01); continue }
            Thread.sleep(forTimeInterval: 0.1)  // let the bodies arrive and tokenising begin
            let started = Date()
            XCTAssertEqual(try server.get("/health").status, 200)
            let seconds = Date().timeIntervalSince(started)
            // Counted only if neither request ended meanwhile: both were being served throughout.
            if load.snapshot().finished == before.finished { busyProbes.append(seconds) }
        }
        load.stop()
        done.wait()
        print("health while tokenising | \(busyProbes.count) probes | slowest \(String(format: "%.1f", (busyProbes.max() ?? 0) * 1000)) ms | \(load.snapshot().succeeded) /tokenize answered")
        XCTAssertGreaterThanOrEqual(busyProbes.count, 10, "only \(busyProbes.count) probes ran while both tokenize requests were in flight")
        XCTAssertLessThanOrEqual(busyProbes.max() ?? 1, 0.05, "slowest /health while tokenising: \(busyProbes.max() ?? 1) s (\(busyProbes.count) probes)")
        XCTAssertGreaterThan(load.snapshot().succeeded, 0, "no /tokenize request succeeded")
        XCTAssertEqual(load.snapshot().failed, 0, "a /tokenize request failed: \(load.firstFailure)")
        XCTAssertEqual(server.terminate(), 0)
    }

    // MARK: - Every encoder serves every head its checkpoint has

    /// DeBERTa-v3 (RANDOM-weight fixtures, checked against transformers by DebertaTests) through
    /// `bert serve` and `bert classify --labels`: /predict gives TextClassifier's scores, for a
    /// text and a pair, /fill FillMask's candidates, /embed SentenceEmbedder's vectors, and the
    /// command line's zero-shot ZeroShotClassifier's.
    func testDebertaServesPredictFillAndEmbed() throws {
        let classifierFolder = try DebertaTests.converted("classifier"), mlmFolder = try DebertaTests.converted("mlm")
        let server = try ServerProcess(bert: bertPath, arguments: ["--model", "\(classifierFolder.path),\(mlmFolder.path)"])
        let classifier = try TextClassifier(folder: classifierFolder, threads: 2)
        let (premise, hypothesis) = ("A man is eating food.", "Someone eats a meal.")
        func assertScores(_ reply: HTTPReply, _ expected: [LabelScore], file: StaticString = #filePath, line: UInt = #line) throws {
            XCTAssertEqual(reply.status, 200, reply.text, file: file, line: line)
            let found = try XCTUnwrap(reply.json() as? [[String: Any]], file: file, line: line)
            XCTAssertEqual(found.map { $0["label"] as? String }, expected.map(\.label), file: file, line: line)
            for (label, want) in zip(found, expected) {
                XCTAssertEqual((label["score"] as? NSNumber)?.floatValue ?? .nan, want.score, accuracy: 1e-5, file: file, line: line)
            }
        }
        try assertScores(server.post("/predict", ["inputs": premise, "model": "classifier"]), classifier.classify([premise])[0])
        try assertScores(server.post("/predict", ["inputs": [premise, hypothesis], "model": "classifier"]),
                         classifier.scores(classifier.logits([premise], pairs: [hypothesis])[0]))
        let text = "The licence is [MASK] by the author."
        let fill = try XCTUnwrap(server.post("/fill", ["inputs": text, "top_k": 5, "model": "mlm"]).json() as? [String: Any])
        let candidates = ((fill["predictions"] as? [[String: Any]])?.first?["candidates"] as? [[String: Any]]) ?? []
        let want = try FillMask(folder: mlmFolder, threads: 2).predict(text, topK: 5)[0].candidates
        XCTAssertEqual(candidates.map { $0["id"] as? Int }, want.map { Int($0.id) })
        let texts = ["the cat sat on the mat.", "Le chat dort."]
        assertVectorsClose(try floats(server.post("/embed", ["inputs": texts, "model": "mlm"])), try SentenceEmbedder(folder: mlmFolder, threads: 2).embed(texts).vectors)
        XCTAssertEqual(server.terminate(), 0)

        let labels = ["sports", "politics", "cooking"]
        let zeroShot = try bert(["classify", "--model", classifierFolder.path, "--labels", labels.joined(separator: ","), "--json", premise])
        XCTAssertEqual(zeroShot.status, 0, zeroShot.stderr)
        let line = try XCTUnwrap(zeroShot.stdout.split(separator: "\n").first)
        let record = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["labels"] as? [[String: Any]])
        let expected = try ZeroShotClassifier(classifier: classifier).classify([premise], labels: labels)[0]
        XCTAssertEqual(record.map { $0["label"] as? String }, expected.map(\.label))
        let refused = try bert(["classify", "--model", classifierFolder.path, "--labels", "a", "--hypothesis-template", "no slot", premise])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("{}"), refused.stderr)
    }

    /// MobileBERT (RANDOM weights, a fixture) embeds with `bert embed` and fills masks in `bert serve`,
    /// as the library does over its encoder (checked against transformers by MobileBertTests).
    func testMobileBertEmbedsAndServesFillMask() throws {
        let folder = try MobileBertTests.converted("mobilebert-nonorm")
        let texts = ["the cat sat on the mat.", "a quick brown fox."]
        let embed = try bert(["embed", "--model", folder.path, "--format", "jsonl"] + texts)
        XCTAssertEqual(embed.status, 0, embed.stderr)
        let expected = try SentenceEmbedder(folder: folder, threads: 2).embed(texts).vectors
        assertVectorsClose(try parseJSONLines(embed.stdout), expected)

        let server = try ServerProcess(bert: bertPath, arguments: ["--model", folder.path])
        let text = "the cat sat on the [MASK]."
        let fill = try XCTUnwrap(server.post("/fill", ["inputs": text, "top_k": 5]).json() as? [String: Any])
        let candidates = ((fill["predictions"] as? [[String: Any]])?.first?["candidates"] as? [[String: Any]]) ?? []
        let want = try FillMask(folder: folder, threads: 2).predict(text, topK: 5)[0].candidates
        XCTAssertEqual(candidates.map { $0["id"] as? Int }, want.map { Int($0.id) })
        assertVectorsClose(try floats(server.post("/embed", ["inputs": texts])), expected)
        XCTAssertEqual(server.terminate(), 0)
    }
}

/// Sends `head` and `body` as they are, closes the sending side, and returns the whole reply.
func rawExchange(port: Int, head: String, body: Data) throws -> String {
    let fd = try connectLoopback(port: port, timeout: 10)
    defer { close(fd) }
    let outgoing = Data(head.utf8) + body
    _ = outgoing.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
    shutdown(fd, Int32(SHUT_WR))
    var reply = Data(), buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        reply.append(buffer, count: n)
    }
    return String(decoding: reply, as: UTF8.self)
}

/// Requests in flight and finished, shared between the load threads and the prober.
private final class TokenizeLoad: @unchecked Sendable {
    private let lock = NSLock()
    private var inFlight = 0, finished = 0, succeeded = 0, failed = 0
    private var stopFlag = false

    var stopped: Bool { lock.withLock { stopFlag } }
    func stop() { lock.withLock { stopFlag = true } }
    func begin() { lock.withLock { inFlight += 1 } }
    private(set) var firstFailure = ""
    func end(ok: Bool, _ answer: @autoclosure () -> String) {
        lock.withLock {
            inFlight -= 1; finished += 1
            if ok { succeeded += 1 } else { failed += 1 }
            if !ok, firstFailure.isEmpty { firstFailure = answer() }
        }
    }
    func snapshot() -> (inFlight: Int, finished: Int, succeeded: Int, failed: Int) {
        lock.withLock { (inFlight, finished, succeeded, failed) }
    }
}
