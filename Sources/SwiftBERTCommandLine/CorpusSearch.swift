import Foundation
import SwiftBERT

/// A corpus record and its cosine similarity to the query.
package struct SearchHit: Sendable, Equatable {
    /// Record index in the corpus, 0-based, and its 1-based line.
    package let index: Int
    package let line: Int
    package let score: Float
    package let text: String
}

extension EmbeddingStream {
    /// The `topK` corpus records most similar to `query`, best first (ties: earlier record first).
    /// The corpus is embedded a window at a time and only the best `topK` records are kept, so
    /// memory does not grow with the corpus. With `precomputed`, the vectors are read from an
    /// .npy file written by `bert embed --document --format npy` for the same corpus and model
    /// instead. The query is embedded in the query role and the corpus in the document role
    /// (`SentenceEmbedder.options(_:as:)`), unless the options name a prompt.
    package func search(_ query: String, in corpus: TextRecordReader, topK: Int, precomputed: NPYReader? = nil,
                       progress: ((StreamProgress) -> Void)? = nil) throws -> (hits: [SearchHit], summary: StreamSummary) {
        guard topK > 0 else { throw SwiftBERTError.invalidInput(reason: "top-k must be at least 1") }
        let start = DispatchTime.now()
        let queryVector = try embedder.embed(query, options: embedder.options(options, as: .query))
        var documents = self
        documents.options = embedder.options(options, as: .document)
        if let precomputed, precomputed.columns != queryVector.count {
            throw StreamError.mismatch(reason: "\(precomputed.path) holds \(precomputed.columns)-dimensional vectors but the model gives \(queryVector.count); embed the corpus with the same model")
        }
        var best: [SearchHit] = []
        var records = 0, truncated = 0
        while true {
            let batch = try corpus.next(upTo: window)
            if batch.isEmpty { break }
            let vectors: [[Float]]
            if let precomputed {
                vectors = try batch.map { record in
                    guard let row = try precomputed.next() else {
                        throw StreamError.mismatch(reason: "\(precomputed.path) has \(precomputed.rows) rows but \(corpus.sourceName) has more records; re-embed the corpus")
                    }
                    return row
                }
            } else {
                guard let embedded = try documents.embed(batch, truncated: &truncated, embedded: { done in
                    progress?(StreamProgress(records: records + done, bytesRead: corpus.bytesRead(done, of: batch.count),
                                             totalBytes: corpus.totalBytes, seconds: seconds(since: start)))
                }) else {
                    throw StreamError.interrupted(signal: interruption?.signal ?? SIGINT, records: records, output: "the search")
                }
                vectors = embedded
            }
            for (record, vector) in zip(batch, vectors) {
                let hit = SearchHit(index: record.index, line: record.line, score: cosineSimilarity(queryVector, vector), text: record.text)
                insert(hit, into: &best, keeping: topK)
            }
            records += batch.count
            progress?(StreamProgress(records: records, bytesRead: corpus.bytesRead, totalBytes: corpus.totalBytes,
                                     seconds: seconds(since: start)))
        }
        guard records > 0 else { throw StreamError.emptyInput(source: corpus.sourceName, skipped: corpus.skippedCount) }
        if let precomputed, precomputed.rows != records {
            throw StreamError.mismatch(reason: "\(precomputed.path) has \(precomputed.rows) rows but \(corpus.sourceName) has \(records) records; re-embed the corpus")
        }
        return (best, StreamSummary(records: records, truncated: truncated, skipped: corpus.skippedCount, seconds: seconds(since: start)))
    }
}

/// Keeps `best` sorted by descending score, at most `k` long; a new hit goes after equal scores.
private func insert(_ hit: SearchHit, into best: inout [SearchHit], keeping k: Int) {
    if best.count == k, hit.score <= best[k - 1].score { return }
    var slot = best.count
    while slot > 0, best[slot - 1].score < hit.score { slot -= 1 }
    best.insert(hit, at: slot)
    if best.count > k { best.removeLast() }
}
