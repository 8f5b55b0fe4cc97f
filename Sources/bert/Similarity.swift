import ArgumentParser
import Foundation
import SwiftBERT

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

    @Option(help: "Model name (a folder under weights/) or path to a converted model.")
    var model = ModelLocator.defaultEmbeddingModel

    @OptionGroup var embedding: EmbeddingOptions
    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if texts.count < 2 { throw ValidationError("give at least two texts to compare") }
    }

    func run() throws {
        let (bert, tokenizer) = try engine.load(model)
        let result = try SentenceEmbedder(model: bert, tokenizer: tokenizer).embed(texts, options: embedding.options())
        let matrix = similarityMatrix(result.vectors)
        let out = OutputSink.standardOutput()
        try out.write(json ? SimilarityReport.json(texts: texts, matrix: matrix).text + "\n"
                           : SimilarityReport.text(texts: texts, matrix: matrix))
        try out.close()
        if !result.truncated.isEmpty {
            writeStandardError("bert: \(result.truncated.count) of \(texts.count) texts were longer than \(effectiveLimit(embedding.maxLength, bert.config)) tokens and were truncated\n")
        }
    }
}
