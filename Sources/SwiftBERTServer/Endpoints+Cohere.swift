#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// Cohere's and Jina's rerank API: POST /v1/rerank.
extension Endpoints {
    /// POST /v1/rerank (Cohere, Jina): {"model", "results": [{"index", "relevance_score", "document"?}], "usage"}.
    func cohereRerank(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(CohereRerankRequest.self, from: body) }
        let model = try self.model(request.model)
        if let topN = request.top_n, topN < 1 { throw APIError.invalid("top_n must be at least 1; got \(topN)", param: "top_n") }
        let documents = request.documents.map(\.text)
        let (scores, tokens) = try await rerankScores(query: request.query, documents: documents, model: model, truncate: true,
                                                      fromLeft: false, raw: false, param: "documents")
        let json = JSONWriter()
        json.object {
            json.key("model"); json.string(model.name)
            writeResults(json, scores: scores, topN: request.top_n, documents: request.return_documents ?? false ? documents : nil)
            json.key("usage"); json.object { json.key("total_tokens"); json.number(tokens) }
        }
        return json.bytes
    }

    /// POST /v2/rerank (Cohere's v2 API, `cohere.ClientV2(...).rerank()`): documents are strings,
    /// each cut to its first `max_tokens_per_doc` tokens when given; the answer is
    /// {"id", "results": [{"index", "relevance_score"}], "meta"}, scored as /v1/rerank.
    func cohereV2Rerank(_ body: [UInt8]) async throws -> [UInt8] {
        let request = try await offload { try decodeBody(CohereV2RerankRequest.self, from: body) }
        let model = try self.model(request.model)
        if let topN = request.top_n, topN < 1 { throw APIError.invalid("top_n must be at least 1; got \(topN)", param: "top_n") }
        var documents = request.documents
        if let maxTokens = request.max_tokens_per_doc {
            guard maxTokens >= 1 else { throw APIError.invalid("max_tokens_per_doc must be at least 1; got \(maxTokens)", param: "max_tokens_per_doc") }
            let given = documents
            documents = try await offload { [self] in given.map { firstTokens($0, maxTokens, tokenizer: model.tokenizer) } }
        }
        let (scores, tokens) = try await rerankScores(query: request.query, documents: documents, model: model, truncate: true,
                                                      fromLeft: false, raw: false, param: "documents")
        let json = JSONWriter()
        json.object {
            json.key("id"); json.string(UUID().uuidString.lowercased())
            writeResults(json, scores: scores, topN: request.top_n, documents: nil)
            json.key("meta")
            json.object {
                json.key("api_version"); json.object { json.key("version"); json.string("2") }
                json.key("tokens"); json.object { json.key("input_tokens"); json.number(tokens); json.key("output_tokens"); json.number(0) }
            }
        }
        return json.bytes
    }

    /// `text` up to the end of its `count`-th token (special tokens not counted); all of it when shorter.
    func firstTokens(_ text: String, _ count: Int, tokenizer: Tokenizer) -> String {
        let encoding = tokenizer.encode(text, addSpecialTokens: false)
        guard encoding.count > count, let end = encoding.offsets.prefix(count).last(where: { !$0.isEmpty })?.upperBound else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(end)))
    }

    /// Cohere's "results" (v1 and v2): the top `topN` by score, each {"index", "relevance_score"},
    /// with {"document": {"text"}} when `documents` is given (v1's return_documents).
    private func writeResults(_ json: JSONWriter, scores: [Float], topN: Int?, documents: [String]?) {
        json.key("results")
        json.array {
            for index in bestFirst(scores).prefix(topN ?? scores.count) {
                json.object {
                    json.key("index"); json.number(index)
                    json.key("relevance_score"); json.number(scores[index])
                    if let documents { json.key("document"); json.object { json.key("text"); json.string(documents[index]) } }
                }
            }
        }
    }
}
#endif
