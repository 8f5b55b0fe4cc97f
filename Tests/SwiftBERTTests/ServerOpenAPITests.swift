import Foundation
import XCTest
@testable import SwiftBERT

/// GET /openapi.json describes what the routes really answer: each route's real 200 body, and
/// its error body, is checked against the schema the document gives it (`/tokenize`'s null
/// offsets, `/embed` with `chunk`, OpenAI errors' null `param` and `code` failed before).
extension ServerTests {
    func testOpenAPIDocumentMatchesRealResponses() throws {
        let crossEncoder = try HeadFixtureTests.converted("bert-cross-encoder")
        let server = try ServerProcess(bert: bertPath, arguments: ["--model", "all-MiniLM-L6-v2,splade-tiny,\(crossEncoder.path)"])
        let reranker = crossEncoder.lastPathComponent
        let document = try XCTUnwrap(server.get("/openapi.json").json() as? [String: Any])
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: Any]])
        let components = try XCTUnwrap(document["components"] as? [String: Any])
        let checker = SchemaChecker(schemas: components["schemas"] as? [String: Any] ?? [:])

        // No API key on this server: no route declares one.
        XCTAssertNil(components["securitySchemes"])
        for (path, method) in [("/v1/embeddings", "post"), ("/metrics", "get"), ("/health", "get"), ("/info", "head")] {
            XCTAssertEqual(((paths[path]?[method] as? [String: Any])?["security"] as? [Any])?.count, 0, "\(method) \(path)")
        }
        // With the cross-encoder served, the rerank routes are listed; a request's optional
        // fields may be null, as the decoder takes them.
        let rerank = try XCTUnwrap((paths["/rerank"]?["post"] as? [String: Any])?["requestBody"] as? [String: Any])
        let rerankSchema = try XCTUnwrap(((rerank["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any])
        let properties = try XCTUnwrap(rerankSchema["properties"] as? [String: [String: Any]])
        XCTAssertEqual(Set(properties.keys), ["query", "texts", "raw_scores", "return_text", "truncate", "truncation_direction", "model"])
        XCTAssertEqual((properties["model"]?["oneOf"] as? [[String: Any]])?.last?["type"] as? String, "null")
        XCTAssertEqual(properties["query"]?["type"] as? String, "string")
        XCTAssertNotNil(paths["/v2/rerank"])
        XCTAssertNotNil(paths["/predict"])
        XCTAssertNil(paths["/embed_multi_vector"], "no served model has BGE-M3's ColBERT head")

        func schema(_ path: String, _ method: String, _ status: String) throws -> [String: Any] {
            let operation = try XCTUnwrap(paths[path]?[method] as? [String: Any], "\(method) \(path) is not in the document")
            let response = try XCTUnwrap((operation["responses"] as? [String: Any])?[status] as? [String: Any])
            return try XCTUnwrap(((response["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any])
        }
        func check(_ method: String, _ path: String, _ body: Any? = nil, status: Int = 200, file: StaticString = #filePath, line: UInt = #line) throws {
            let reply = method == "get" ? try server.get(path) : try server.post(path, body ?? [String: Any]())
            XCTAssertEqual(reply.status, status, "\(path): \(reply.text.prefix(300))", file: file, line: line)
            let problems = checker.problems(try reply.json(), try schema(path, method, status == 200 ? "200" : "default"))
            XCTAssertEqual(problems, [], "\(method.uppercased()) \(path) answered \(reply.text.prefix(300))", file: file, line: line)
        }
        let texts = ["The cat sat on the mat.", "A dog slept."]
        try check("post", "/v1/embeddings", ["input": texts])
        try check("post", "/v1/embeddings", ["input": texts[0], "encoding_format": "base64"])
        try check("post", "/embeddings", ["input": texts[0]])
        try check("post", "/embed", ["inputs": texts])
        try check("post", "/embed", ["inputs": texts, "chunk": 4])
        try check("post", "/embed", ["inputs": texts, "chunk": 4, "chunk_pooling": "mean"])
        try check("post", "/", ["inputs": texts[0]])
        try check("post", "/embed_sparse", ["inputs": texts, "model": "splade-tiny"])
        try check("post", "/embed_all", ["inputs": texts[1]])
        try check("post", "/similarity", ["inputs": ["source_sentence": texts[0], "sentences": [texts[1]]]])
        try check("post", "/tokenize", ["inputs": texts])
        try check("post", "/decode", ["ids": [101, 7592, 102]])
        try check("post", "/fill", ["inputs": "The capital of France is [MASK].", "top_k": 2])
        try check("post", "/predict", ["inputs": texts[0], "model": reranker])
        try check("post", "/rerank", ["query": "a cat", "texts": texts, "return_text": true, "model": reranker])
        try check("post", "/v1/rerank", ["query": "a cat", "documents": texts, "return_documents": true, "model": reranker])
        try check("post", "/v2/rerank", ["query": "a cat", "documents": texts, "model": reranker])
        try check("post", "/v2/embed", ["texts": texts, "input_type": "search_query", "embedding_types": ["float", "base64", "binary", "ubinary"]])
        try check("post", "/v1/embed", ["texts": texts, "input_type": "search_document"])
        try check("post", "/v1/embed", ["texts": texts, "embedding_types": ["ubinary"]])
        try check("get", "/info")
        try check("get", "/v1/models")
        // Errors, in both shapes: OpenAI's `param` and `code` are null here.
        try check("post", "/v1/embeddings", ["input": []], status: 422)
        try check("post", "/v1/embeddings", ["input": "x", "model": "nope"], status: 404)
        try check("post", "/embed", ["inputs": []], status: 422)
        try check("post", "/v2/rerank", ["query": "q", "documents": ["a"], "top_n": 0, "model": reranker], status: 422)
        try check("post", "/v2/embed", ["texts": texts, "embedding_types": ["int8"]], status: 422)
        XCTAssertEqual(server.terminate(), 0)
    }
}

/// Enough of JSON Schema for the server's document: type, properties, required, items, oneOf
/// (at least one alternative must hold), $ref into components.schemas.
struct SchemaChecker {
    let schemas: [String: Any]

    func problems(_ value: Any, _ schema: [String: Any], at path: String = "$") -> [String] {
        if let ref = schema["$ref"] as? String {
            guard let target = schemas[String(ref.split(separator: "/").last ?? "")] as? [String: Any] else { return ["\(path): unknown \(ref)"] }
            return problems(value, target, at: path)
        }
        if let alternatives = schema["oneOf"] as? [[String: Any]] {
            let failures = alternatives.map { problems(value, $0, at: path) }
            return failures.contains { $0.isEmpty } ? [] : ["\(path): matches none of \(alternatives.count) alternatives: \(failures.map { $0.first ?? "" })"]
        }
        let number = value as? NSNumber
        let isBool = number.map { String(cString: $0.objCType) == "c" } ?? false
        switch schema["type"] as? String {
        case "null": return value is NSNull ? [] : ["\(path): \(value) is not null"]
        case "string": return value is String ? [] : ["\(path): \(value) is not a string"]
        case "boolean": return isBool ? [] : ["\(path): \(value) is not a boolean"]
        case "number": return number != nil && !isBool ? [] : ["\(path): \(value) is not a number"]
        case "integer":
            guard let number, !isBool, number.doubleValue.rounded() == number.doubleValue else { return ["\(path): \(value) is not an integer"] }
            return []
        case "array":
            guard let items = value as? [Any] else { return ["\(path): \(value) is not an array"] }
            let itemSchema = schema["items"] as? [String: Any] ?? [:]
            return items.enumerated().flatMap { problems($1, itemSchema, at: "\(path)[\($0)]") }
        case "object":
            guard let object = value as? [String: Any] else { return ["\(path): \(value) is not an object"] }
            let required = schema["required"] as? [String] ?? []
            let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
            return required.filter { object[$0] == nil }.map { "\(path).\($0) is missing" }
                + properties.sorted { $0.key < $1.key }.flatMap { name, property in object[name].map { problems($0, property, at: "\(path).\(name)") } ?? [] }
        default:
            return ["\(path): the schema has no type: \(schema)"]
        }
    }
}
