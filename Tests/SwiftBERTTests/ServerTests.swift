import Foundation
import XCTest
@testable import SwiftBERT
#if canImport(Glibc)
import Glibc
#endif

/// End-to-end tests of `bert serve`: the built binary on a free loopback port, driven over HTTP.
/// Vectors are checked against the library in-process and against `bert embed`.
final class ServerTests: CLITestCase {
    /// One server with an embedding model and a masked-LM model, shared by the tests that need
    /// no special settings (started on first use, stopped after the last test of the class).
    nonisolated(unsafe) static var shared: ServerProcess?
    static let sharedLock = NSLock()

    /// Releasing the shared server kills it (ServerProcess.deinit); a static is never released
    /// otherwise, and the server outlived the test run.
    override class func tearDown() {
        sharedLock.lock()
        shared = nil
        sharedLock.unlock()
        super.tearDown()
    }

    static let sentences: [String] = {
        let text = (try? String(contentsOf: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/sentences.txt"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }()

    override func setUpWithError() throws {
        // The trait Server is on in `make test`; tools/sanitize.sh leaves it off (and Hummingbird
        // unbuilt) to keep CI under an hour.
        #if !Server
        throw XCTSkip("this build has no server: the package trait Server is off (`make test` turns it on; tools/sanitize.sh leaves it off)")
        #endif
        try super.setUpWithError()
        _ = try convertedModel("splade-tiny")
    }

    func sharedServer() throws -> ServerProcess {
        Self.sharedLock.lock(); defer { Self.sharedLock.unlock() }
        if let server = Self.shared, server.process.isRunning { return server }
        let server = try ServerProcess(bert: bertPath, arguments: ["--model", "all-MiniLM-L6-v2,splade-tiny"])
        Self.shared = server
        return server
    }

    func vectors(_ reply: HTTPReply) throws -> [[Float]] {
        let object = try XCTUnwrap(try reply.json() as? [String: Any], reply.text)
        let data = try XCTUnwrap(object["data"] as? [[String: Any]])
        return try data.map { item in
            if let text = item["embedding"] as? String {
                let bytes = try XCTUnwrap(Data(base64Encoded: text))
                return bytes.withUnsafeBytes { raw in (0..<bytes.count / 4).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) } }
            }
            return try XCTUnwrap(item["embedding"] as? [NSNumber]).map(\.floatValue)
        }
    }

    func assertVectorsClose(_ a: [[Float]], _ b: [[Float]], tolerance: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.count, b.count, file: file, line: line)
        for (x, y) in zip(a, b) {
            XCTAssertEqual(x.count, y.count, file: file, line: line)
            XCTAssertLessThanOrEqual(zip(x, y).map { abs($0 - $1) }.max() ?? .infinity, tolerance, file: file, line: line)
        }
    }

    /// OpenAI's error shape: {"error": {"message", "type", "param", "code"}}; returns the message.
    @discardableResult
    func openAIError(_ reply: HTTPReply, status: Int, mentions: [String] = [], file: StaticString = #filePath, line: UInt = #line) -> String {
        XCTAssertEqual(reply.status, status, reply.text, file: file, line: line)
        let error = ((try? reply.json()) as? [String: Any])?["error"] as? [String: Any]
        XCTAssertNotNil(error?["type"] as? String, "no OpenAI error shape: \(reply.text)", file: file, line: line)
        XCTAssertTrue(error?.keys.contains("param") ?? false, file: file, line: line)
        XCTAssertTrue(error?.keys.contains("code") ?? false, file: file, line: line)
        let message = error?["message"] as? String ?? ""
        for word in mentions { XCTAssertTrue(message.contains(word), "\(message) does not mention \(word)", file: file, line: line) }
        return message
    }

    func teiError(_ reply: HTTPReply, status: Int, mentions: [String] = [], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(reply.status, status, reply.text, file: file, line: line)
        let object = (try? reply.json()) as? [String: Any]
        let message = object?["error"] as? String ?? ""
        XCTAssertNotNil(object?["error_type"] as? String, "no TEI error shape: \(reply.text)", file: file, line: line)
        for word in mentions { XCTAssertTrue(message.contains(word), "\(message) does not mention \(word)", file: file, line: line) }
    }

    // MARK: - Endpoints

    func testOpenAIEmbeddingsMatchTheLibrary() throws {
        let server = try sharedServer()
        let texts = Array(Self.sentences.prefix(5))
        let expected = try libraryVectors(texts)
        let tokenizer = try libraryTokenizer("all-MiniLM-L6-v2")

        let one = try server.post("/v1/embeddings", ["input": texts[0], "model": "all-MiniLM-L6-v2"])
        XCTAssertEqual(one.status, 200, one.text)
        assertVectorsClose(try vectors(one), [expected[0]])
        let object = try XCTUnwrap(one.json() as? [String: Any])
        XCTAssertEqual(object["object"] as? String, "list")
        XCTAssertEqual(object["model"] as? String, "all-MiniLM-L6-v2")
        let usage = try XCTUnwrap(object["usage"] as? [String: Int])
        XCTAssertEqual(usage["prompt_tokens"], tokenizer.encode(texts[0], maxLength: 256).count)
        XCTAssertEqual(usage["total_tokens"], usage["prompt_tokens"])

        // Several texts, no model (the first one served), base64.
        let many = try server.post("/v1/embeddings", ["input": texts, "encoding_format": "base64"])
        XCTAssertEqual(many.status, 200, many.text)
        assertVectorsClose(try vectors(many), expected)

        // Token ids on the OpenAI route are refused (OpenAI clients send tiktoken ids); /embed takes
        // this model's ids, as /tokenize gives them, one list and several (TEI's semantics).
        let ids = texts.map { tokenizer.encode($0, maxLength: 256).ids.map(Int.init) }
        openAIError(try server.post("/v1/embeddings", ["input": ids]), status: 400,
                    mentions: ["token ids", "check_embedding_ctx_length=False", "--accept-token-ids"])
        let byIds = try XCTUnwrap(server.post("/embed", ["inputs": ids]).json() as? [[NSNumber]]).map { $0.map(\.floatValue) }
        assertVectorsClose(byIds, expected)
        let byOneList = try XCTUnwrap(server.post("/embed", ["inputs": ids[1]]).json() as? [[NSNumber]]).map { $0.map(\.floatValue) }
        assertVectorsClose(byOneList, [expected[1]])

        // dimensions: the first 64 values, renormalised.
        let cut = try vectors(server.post("/v1/embeddings", ["input": texts[0], "dimensions": 64]))[0]
        XCTAssertEqual(cut.count, 64)
        let prefix = Array(expected[0].prefix(64))
        let norm = prefix.reduce(0) { $0 + $1 * $1 }.squareRoot()
        assertVectorsClose([cut], [prefix.map { $0 / norm }])
        openAIError(try server.post("/v1/embeddings", ["input": "x", "dimensions": 385]), status: 422, mentions: ["384"])

        // Unknown model: 404 in OpenAI's shape, naming what is served.
        let unknown = try server.post("/v1/embeddings", ["input": "x", "model": "text-embedding-3-small"])
        openAIError(unknown, status: 404, mentions: ["text-embedding-3-small", "all-MiniLM-L6-v2"])
        XCTAssertEqual((((try? unknown.json()) as? [String: Any])?["error"] as? [String: Any])?["code"] as? String, "model_not_found")
    }

    func testTEIEmbedTokenizeInfo() throws {
        let server = try sharedServer()
        let texts = Array(Self.sentences.dropFirst(10).prefix(3))
        let embed = try server.post("/embed", ["inputs": texts])
        XCTAssertEqual(embed.status, 200, embed.text)
        let vectors = try XCTUnwrap(embed.json() as? [[NSNumber]]).map { $0.map(\.floatValue) }
        assertVectorsClose(vectors, try libraryVectors(texts))
        let single = try XCTUnwrap(server.post("/embed", ["inputs": texts[0]]).json() as? [[NSNumber]])
        XCTAssertEqual(single.count, 1)

        let raw = try XCTUnwrap(server.post("/embed", ["inputs": texts[0], "normalize": false]).json() as? [[NSNumber]]).map { $0.map(\.floatValue) }
        assertVectorsClose(raw, try libraryVectors([texts[0]], options: .init(normalize: false)))
        XCTAssertGreaterThan(abs(raw[0].reduce(0) { $0 + $1 * $1 } - 1), 1e-3, "not normalised")

        teiError(try server.post("/embed", ["inputs": "x", "prompt_name": "query"]), status: 422, mentions: ["query", "no prompts"])

        // Too long: refused unless truncate is true (TEI's default is false).
        let long = Array(repeating: "word", count: 400).joined(separator: " ")
        teiError(try server.post("/embed", ["inputs": long]), status: 413, mentions: ["256", "truncate"])
        let cut = try server.post("/embed", ["inputs": long, "truncate": true])
        XCTAssertEqual(cut.status, 200, cut.text)
        assertVectorsClose(try XCTUnwrap(cut.json() as? [[NSNumber]]).map { $0.map(\.floatValue) }, try libraryVectors([long]))
        // /v1/embeddings truncates by default, as `bert embed` does, and refuses with truncate false.
        XCTAssertEqual(try server.post("/v1/embeddings", ["input": long]).status, 200)
        openAIError(try server.post("/v1/embeddings", ["input": long, "truncate": false]), status: 413, mentions: ["256"])

        let tokens = try server.post("/tokenize", ["inputs": ["The cat sat.", "Héllo"]])
        XCTAssertEqual(tokens.status, 200, tokens.text)
        let lists = try XCTUnwrap(tokens.json() as? [[[String: Any]]])
        let tokenizer = try libraryTokenizer("all-MiniLM-L6-v2")
        XCTAssertEqual(lists[0].map { $0["id"] as? Int }, tokenizer.encode("The cat sat.").ids.map { Int($0) })
        XCTAssertEqual(lists[0].first?["special"] as? Bool, true)
        XCTAssertEqual(lists[0][1]["text"] as? String, "the")
        XCTAssertEqual(lists[0][1]["start"] as? Int, 0)
        XCTAssertEqual(lists[0][1]["stop"] as? Int, 3)
        XCTAssertEqual(lists[1].map { $0["id"] as? Int }, tokenizer.encode("Héllo").ids.map { Int($0) })

        let info = try XCTUnwrap(server.get("/info").json() as? [String: Any])
        XCTAssertEqual(info["model_id"] as? String, "all-MiniLM-L6-v2")
        XCTAssertEqual(info["dimension"] as? Int, 384)
        XCTAssertEqual(info["max_input_length"] as? Int, 256)
        XCTAssertEqual((info["models"] as? [[String: Any]])?.compactMap { $0["model_id"] as? String }, ["all-MiniLM-L6-v2", "splade-tiny"])
    }

    func testFillMaskHealthMetricsAndMissingRoutes() throws {
        let server = try sharedServer()
        let text = "The capital of France is [MASK]."
        let reply = try server.post("/fill", ["inputs": text, "top_k": 3])
        XCTAssertEqual(reply.status, 200, reply.text)
        let object = try XCTUnwrap(reply.json() as? [String: Any])
        XCTAssertEqual(object["model"] as? String, "splade-tiny")
        let predictions = try XCTUnwrap(object["predictions"] as? [[String: Any]])
        let candidates = try XCTUnwrap(predictions.first?["candidates"] as? [[String: Any]])
        let expected = try FillMask(model: loadModel("splade-tiny"), tokenizer: libraryTokenizer("splade-tiny")).predict(text, topK: 3)[0]
        XCTAssertEqual(predictions.first?["position"] as? Int, expected.position)
        XCTAssertEqual(candidates.map { $0["id"] as? Int }, expected.candidates.map { Int($0.id) })
        XCTAssertEqual(candidates.map { $0["token"] as? String }, expected.candidates.map(\.token))
        for (got, want) in zip(candidates, expected.candidates) {
            XCTAssertEqual((got["probability"] as? NSNumber)?.floatValue ?? -1, want.probability, accuracy: 1e-5)
        }
        teiError(try server.post("/fill", ["inputs": "no mask here"]), status: 422, mentions: ["[MASK]"])
        teiError(try server.post("/fill", ["inputs": text, "model": "all-MiniLM-L6-v2"]), status: 422, mentions: ["masked-LM"])
        teiError(try server.post("/fill", ["inputs": text, "top_k": 0]), status: 422, mentions: ["top_k"])

        let health = try server.get("/health")
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(health.text, #"{"status":"ok"}"#)

        // A model without the head a route needs: 400 naming the head and what to serve instead.
        teiError(try server.post("/rerank", ["query": "q", "texts": ["a"]]), status: 422, mentions: ["sequence-classification", "cross-encoder"])
        teiError(try server.post("/predict", ["inputs": "a"]), status: 422, mentions: ["sequence-classification"])
        teiError(try server.post("/embed_sparse", ["inputs": "a"]), status: 422, mentions: ["sparse", "splade-tiny"])

        let metrics = try server.get("/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.headers["content-type"]?.hasPrefix("text/plain") ?? false)
        for needle in [#"swiftbert_http_requests_total{"#, #"route="/fill""#, #"status="200""#, #"status="422""#,
                       "swiftbert_http_request_duration_seconds_bucket", "swiftbert_batch_sequences_bucket",
                       "swiftbert_batch_tokens_bucket", "swiftbert_queue_depth", "swiftbert_tokens_total", "swiftbert_forward_duration_seconds"] {
            XCTAssertTrue(metrics.text.contains(needle), "no \(needle) in /metrics:\n\(metrics.text.prefix(3000))")
        }
    }

    // MARK: - Bad requests

    func testBadRequestsGetMessages() throws {
        let server = try sharedServer()
        func raw(_ path: String, _ body: String) throws -> HTTPReply {
            try httpRequest(port: server.port, method: "POST", path: path, body: Data(body.utf8))
        }
        openAIError(try raw("/v1/embeddings", "{\"input\": "), status: 400, mentions: ["not valid JSON"])
        openAIError(try raw("/v1/embeddings", ""), status: 400, mentions: ["empty"])
        openAIError(try raw("/v1/embeddings", "[1, 2]"), status: 422, mentions: ["object"])
        openAIError(try raw("/v1/embeddings", #"{"model": "all-MiniLM-L6-v2"}"#), status: 422, mentions: ["input", "required"])
        openAIError(try raw("/v1/embeddings", #"{"input": 5}"#), status: 422, mentions: ["input", "string"])
        openAIError(try raw("/v1/embeddings", #"{"input": [{"text": "a"}]}"#), status: 422, mentions: ["input"])
        openAIError(try raw("/v1/embeddings", #"{"input": []}"#), status: 422, mentions: ["empty"])
        teiError(try raw("/embed", #"{"inputs": [[101, 99999999, 102]]}"#), status: 422, mentions: ["99999999", "vocabulary"])
        openAIError(try raw("/v1/embeddings", #"{"input": "x", "encoding_format": "int8"}"#), status: 422, mentions: ["encoding_format", #""float", "base64"; got "int8""#])
        teiError(try raw("/embed_outputs", #"{"inputs": "x", "outputs": ["dense", "colbert"]}"#), status: 422,
                 mentions: [#""dense", "sparse", "multi_vector"; got "colbert""#])
        teiError(try raw("/embed", #"{"inputs": "x", "chunk": 8, "chunk_pooling": "max"}"#), status: 422, mentions: [#""none", "mean"; got "max""#])
        // A lone surrogate escape is named where it stands, for a field read by our decoders and
        // one read by Foundation's; a pair, and an escaped backslash before "u", are text.
        openAIError(try raw("/v1/embeddings", #"{"input": ["ok", "a\ud83d b"]}"#), status: 422, mentions: [#"`input`: the string escape \ud83d at byte 20 is half of a UTF-16 surrogate pair"#])
        openAIError(try raw("/v1/embeddings", #"{"input": "x", "model": "\udfff"}"#), status: 422, mentions: [#"\udfff at byte 26"#, "UTF-8"])
        openAIError(try raw("/v1/embeddings", #"{"input": "\ud800"#), status: 400, mentions: ["not valid JSON"])
        XCTAssertEqual(try raw("/v1/embeddings", #"{"input": "\ud83d\ude00 \\ud800"}"#).status, 200)
        // A key twice in one object (also written with an escape, or in a nested object) is
        // refused, as TEI refuses it; keys inside strings are text.
        openAIError(try raw("/v1/embeddings", #"{"input": "x", "input": "y"}"#), status: 422, mentions: [#""input" twice"#])
        openAIError(try raw("/v1/embeddings", #"{"input": "x", "\u0069nput": "y"}"#), status: 422, mentions: [#""input" twice"#])
        XCTAssertEqual(try raw("/v1/embeddings", #"{"input": "say \"input\": 1, \"input\"", "user": "input"}"#).status, 200)
        openAIError(try raw("/v1/embeddings", #"{"input": "x", "dimensions": "big"}"#), status: 422, mentions: ["dimensions"])
        teiError(try raw("/embed", #"{"inputs": null}"#), status: 422, mentions: ["inputs"])
        teiError(try raw("/tokenize", #"{"text": "a"}"#), status: 422, mentions: ["inputs", "required"])

        // Over the 2 MiB default body limit: 413, with a message, and the server lives on.
        let big = #"{"input": ""# + String(repeating: "a ", count: 1_100_000) + #""}"#
        openAIError(try raw("/v1/embeddings", big), status: 413, mentions: ["limit"])
        XCTAssertEqual(try server.post("/v1/embeddings", ["input": "still alive"]).status, 200)
        // Unknown routes: 404, in JSON.
        teiError(try server.get("/v2/nothing"), status: 404, mentions: ["/openapi.json"])
    }

    func testAPIKeyIsRequiredWhenSet() throws {
        let server = try ServerProcess(bert: bertPath, arguments: ["--body-limit", "4096"], environment: ["SWIFTBERT_API_KEY": "s3cret-key"])
        openAIError(try server.post("/v1/embeddings", ["input": "x"]), status: 401, mentions: ["API key"])
        openAIError(try server.post("/v1/embeddings", ["input": "x"], headers: ["Authorization": "Bearer s3cret-kez"]), status: 401)
        openAIError(try server.post("/v1/embeddings", ["input": "x"], headers: ["Authorization": "Bearer s3cret-key-and-more"]), status: 401)
        XCTAssertEqual(try server.post("/v1/embeddings", ["input": "x"], headers: ["Authorization": "Bearer s3cret-key"]).status, 200)
        XCTAssertEqual(try server.get("/metrics").status, 401)
        XCTAssertEqual(try server.get("/health").status, 200, "probes need no key")
        // The document says so: the bearer scheme, on the API routes and /metrics (with their 401), not on the probes.
        let document = try XCTUnwrap(server.get("/openapi.json").json() as? [String: Any])
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: [String: Any]]])
        let schemes = try XCTUnwrap((document["components"] as? [String: Any])?["securitySchemes"] as? [String: [String: Any]])
        XCTAssertEqual(schemes["apiKey"]?["scheme"] as? String, "bearer")
        for (path, method, keyed) in [("/v1/embeddings", "post", true), ("/info", "head", true), ("/metrics", "get", true),
                                      ("/health", "get", false), ("/openapi.json", "get", false)] {
            XCTAssertEqual((paths[path]?[method]?["security"] as? [Any])?.count, keyed ? 1 : 0, "\(method) \(path)")
        }
        XCTAssertNotNil((paths["/metrics"]?["get"]?["responses"] as? [String: Any])?["401"])
        XCTAssertNotNil((paths["/v1/embeddings"]?["post"]?["responses"] as? [String: Any])?["401"], "the POST routes name their 401")
        // --body-limit is configurable.
        let body = jsonBody(["input": String(repeating: "b ", count: 3000)])
        let reply = try httpRequest(port: server.port, method: "POST", path: "/v1/embeddings", body: body, headers: ["Authorization": "Bearer s3cret-key"])
        openAIError(reply, status: 413, mentions: ["4096"])
        XCTAssertEqual(server.terminate(), 0)
    }

    /// Weights that fail to load (a truncated file; the port opens while they load) end the server with the
    /// loader's typed error and its exit status: BertServer.run throws it after a graceful
    /// shutdown, instead of calling exit inside the library.
    func testModelThatCannotLoadEndsTheServerWithItsError() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("truncated-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        // A copy of the real files: weights/ may hold symlinks, and copyItem copies a symlink as
        // a symlink, so writing into the copy truncated the shared model.safetensors (and SIGBUS'd
        // every process that had it mapped).
        try FileManager.default.copyItem(at: convertedModel("all-MiniLM-L6-v2").resolvingSymlinksInPath(), to: folder)
        let weights = folder.appendingPathComponent("model.safetensors")
        let head = Data(try Data(contentsOf: weights).prefix(5000))
        try FileManager.default.removeItem(at: weights)  // a new file, never the original's inode
        try head.write(to: weights)
        try? FileManager.default.removeItem(at: folder.appendingPathComponent("model.int8.safetensors"))
        let result = try runProcess(bertPath, ["serve", "--port", "0", "--model", folder.path])
        XCTAssertEqual(result.status, 65, result.stderr)
        XCTAssertTrue(result.stderr.contains("truncated"), result.stderr)
        XCTAssertTrue(result.stderr.contains("bert convert"), "the message says what to do: \(result.stderr)")
        XCTAssertFalse(result.stderr.contains("error bert-serve"), "no Hummingbird error lines on the way out: \(result.stderr)")
    }

    // MARK: - Load, back-pressure, shutdown

    func testSixtyFourClientsTimesTenRequestsAllSucceed() throws {
        let server = try sharedServer()
        let texts = Array(Self.sentences.prefix(64))
        let expected = try libraryVectors(texts)
        let failures = concurrently(64) { client -> [String] in
            var problems: [String] = []
            for request in 0..<10 {
                let index = (client + request) % texts.count
                do {
                    let reply = try server.post("/v1/embeddings", ["input": texts[index]])
                    guard reply.status == 200 else { problems.append("status \(reply.status): \(reply.text)"); continue }
                    let vector = try self.vectors(reply)[0]
                    let error = zip(vector, expected[index]).map { abs($0 - $1) }.max() ?? 1
                    if error > 1e-5 { problems.append("client \(client) request \(request): vector off by \(error)") }
                } catch {
                    problems.append("client \(client) request \(request): \(error)")
                }
            }
            return problems
        }.flatMap { $0 }
        XCTAssertEqual(failures.count, 0, failures.prefix(5).joined(separator: "\n"))
        // Concurrent requests were batched together.
        let metrics = try server.get("/metrics").text
        let batches = metrics.split(separator: "\n").first { $0.hasPrefix("swiftbert_batch_sequences_count") }
        let sequences = metrics.split(separator: "\n").first { $0.hasPrefix("swiftbert_batch_sequences_sum") }
        let count = batches.flatMap { Double($0.split(separator: " ").last!) } ?? 0
        let sum = sequences.flatMap { Double($0.split(separator: " ").last!) } ?? 0
        XCTAssertGreaterThan(sum / max(count, 1), 1.5, "mean batch size \(sum / max(count, 1)): requests were not coalesced")
    }

    /// 48 concurrent requests of 4 texts from 4 clients into a queue of 8 (6 at most for one
    /// client): a client past its share gets 429, a request that finds the queue full 503, both
    /// with Retry-After; nothing else fails, and the server serves afterwards.
    func testFloodGets503WithRetryAfterAndServerRecovers() throws {
        let server = try ServerProcess(bert: bertPath, arguments: ["--queue-capacity", "8", "--max-wait-ms", "20"])
        let texts = Array(Self.sentences.prefix(4))
        let replies = concurrently(48) { i in
            try? httpRequest(port: server.port, method: "POST", path: "/v1/embeddings", body: jsonBody(["input": texts]), from: "127.0.0.\(2 + i % 4)")
        }
        let statuses = replies.map { $0?.status ?? -1 }
        let refused = replies.compactMap { $0 }.filter { $0.status == 503 || $0.status == 429 }
        XCTAssertEqual(statuses.filter { ![200, 429, 503].contains($0) }, [], "only 200, 429 or 503 under a flood")
        XCTAssertFalse(refused.isEmpty, "a queue of 8 texts took 48 concurrent requests of 4")
        XCTAssertGreaterThan(statuses.filter { $0 == 200 }.count, 0)
        for reply in refused {
            XCTAssertEqual(reply.headers["retry-after"], "1")
            if reply.status == 503 { openAIError(reply, status: 503, mentions: ["queue", "full"]) }
            else { openAIError(reply, status: 429, mentions: ["this client already has", "at most 6", "retry when"]) }
        }
        XCTAssertEqual(try server.post("/v1/embeddings", ["input": texts]).status, 200, "recovers after the flood")
        XCTAssertTrue(try server.get("/metrics").text.contains("swiftbert_rejected_total"))
        XCTAssertEqual(server.terminate(), 0)
    }

    func testSIGTERMAnswersEveryAcceptedRequestThenExitsZero() throws {
        let server = try ServerProcess(bert: bertPath, arguments: ["--max-batch-tokens", "128"])
        let texts = Array(Self.sentences.prefix(16))
        let expected = try libraryVectors(texts)
        // 8 requests of 16 texts in batches of at most 128 tokens: many forward passes, so most
        // of the texts are still queued when SIGTERM lands.
        let group = DispatchGroup()
        let lock = NSLock()
        nonisolated(unsafe) var results: [Result<HTTPReply, Error>] = []  // appended under the lock
        for _ in 0..<8 {
            group.enter()
            Thread {
                let result = Result { try server.post("/v1/embeddings", ["input": texts]) }
                lock.lock(); results.append(result); lock.unlock()
                group.leave()
            }.start()
        }
        // Wait until the server has queued all 8 × 16 texts (sequences taken into batches plus
        // those still waiting), so that every request was accepted before the signal.
        let deadline = Date().addingTimeInterval(60)
        var queued = 0.0
        while Date() < deadline {
            let text = (try? server.get("/metrics").text) ?? ""
            queued = metric(text, "swiftbert_sequences_total") + metric(text, "swiftbert_queue_depth")
            if queued >= 8 * 16 { break }
            usleep(20_000)
        }
        XCTAssertEqual(queued, 8 * 16, "the requests were not all queued within 60 s")
        let waiting = metric(try server.get("/metrics").text, "swiftbert_queue_depth")
        XCTAssertGreaterThan(waiting, 0, "the queue was already empty at SIGTERM; the test proves nothing")
        XCTAssertEqual(server.terminate(timeout: 120), 0, server.standardError)
        group.wait()
        for result in results {
            switch result {
            case let .success(reply):
                XCTAssertEqual(reply.status, 200, reply.text)
                if reply.status == 200 { assertVectorsClose(try vectors(reply), expected) }
            case let .failure(error):
                XCTFail("an accepted request was lost: \(error)")
            }
        }
        XCTAssertTrue(server.standardError.contains("stopped"), server.standardError)
        // Nothing listens any more.
        XCTAssertThrowsError(try server.get("/health"))
    }

    /// The value of the first sample of a metric in Prometheus text (0 when absent).
    func metric(_ text: String, _ name: String) -> Double {
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    // MARK: - Real clients

    /// tools/clients/check_clients.py drives two servers with the real Python clients of
    /// tools/requirements.txt (openai float and base64, huggingface_hub's InferenceClient at the
    /// root, LangChain's OpenAIEmbeddings with its defaults, which must get a 400, and without
    /// token ids, llama-index, and cohere's embed, v2 and v1), each checked against `bert embed`
    /// (see tools/clients/README.md).
    func testRealPythonClientsGetTheRightAnswers() throws {
        let python = repositoryRoot.appendingPathComponent("tools/.venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            XCTFail("the Python clients are not installed: run tools/venv.sh (make setup runs it)")
            return
        }
        let server = try sharedServer()
        let classifier = try ServerProcess(bert: bertPath, arguments: ["--model", HeadFixtureTests.converted("bert-classifier").path])
        let result = try runProcess(python, [repositoryRoot.appendingPathComponent("tools/clients/check_clients.py").path,
                                             "--embed-url", "http://127.0.0.1:\(server.port)",
                                             "--classify-url", "http://127.0.0.1:\(classifier.port)", "--bert", bertPath],
                                    currentDirectory: repositoryRoot.path)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains(" 0 failed"), result.stdout)
        for check in ["openai float", "openai base64", "huggingface_hub feature_extraction", "huggingface_hub text_classification",
                      "langchain defaults (token ids refused)", "langchain check_embedding_ctx_length=False", "llama-index",
                      "cohere ClientV2.embed", "cohere Client.embed"] {
            XCTAssertTrue(result.stdout.contains("ok   " + check), "no passing check \(check):\n\(result.stdout)")
        }
        XCTAssertEqual(classifier.terminate(), 0)
    }
}
