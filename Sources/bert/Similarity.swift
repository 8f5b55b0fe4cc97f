import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Similarity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cosine similarity of every pair of texts, as a matrix.",
        discussion: """
            Examples:
              bert similarity "A man is eating." "A man eats pasta." "The sky is blue."
              bert similarity --json "first text" "second text" | jq '.matrix[0][1]'
            """)

    @Argument(help: "Two or more texts.")
    var texts: [String] = []

    @Flag(help: "JSON: {\"texts\": [...], \"matrix\": [[...], ...]}.")
    var json = false

    @OptionGroup var model: EmbeddingModelOptions

    func validate() throws {
        if texts.count < 2 { throw ValidationError("give at least two texts to compare") }
    }

    func run() throws {
        let (bert, embedder) = try model.load()
        let result = try embedder.embed(texts, options: model.embedding.options())
        let matrix = similarityMatrix(result.vectors)
        try writeResult(json ? SimilarityReport.json(texts: texts, matrix: matrix).text + "\n"
                          : SimilarityReport.text(texts: texts, matrix: matrix))
        reportTruncation(result.truncated.count, of: texts.count, limit: effectiveLimit(model.embedding.maxLength, bert.config))
    }
}
