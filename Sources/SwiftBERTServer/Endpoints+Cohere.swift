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
            json.key("results")
            json.array {
                for index in rankedIndices(scores).prefix(request.top_n ?? scores.count) {
                    json.object {
                        json.key("index"); json.number(index)
                        json.key("relevance_score"); json.number(scores[index])
                        if request.return_documents ?? false {
                            json.key("document"); json.object { json.key("text"); json.string(documents[index]) }
                        }
                    }
                }
            }
            json.key("usage"); json.object { json.key("total_tokens"); json.number(tokens) }
        }
        return json.bytes
    }

    /// Indices by score, best first; ties keep input order.
    func rankedIndices(_ scores: [Float]) -> [Int] {
        scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
    }
}
#endif
