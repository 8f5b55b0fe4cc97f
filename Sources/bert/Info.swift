import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe a converted model: shape, size, precisions, load time and memory.",
        discussion: """
            Resident memory is VmRSS from /proc/self/status right after loading (weights are \
            memory-mapped, so it counts the pages loading touched).

            Examples:
              bert info
              bert info --model splade-tiny --json | jq .parameters
            """)

    @Option(help: "Model name (a folder under weights/) or path to a converted model.")
    var model = ModelLocator.defaultEmbeddingModel

    @Flag(help: "JSON object instead of a table.")
    var json = false

    @OptionGroup var engine: EngineOptions

    func run() throws {
        let folder = try ModelLocator.folder(model, precisions: [engine.precision])
        let start = Date()
        _ = try Tokenizer.load(folder: folder)
        let tokenizerSeconds = Date().timeIntervalSince(start)
        let bert = try loadEncoder(folder: folder, threads: engine.threads, precision: engine.precision)
        let report = ModelReport(model: bert, precision: engine.precision, tokenizerLoadSeconds: tokenizerSeconds)
        try writeResult(json ? report.json.text + "\n" : report.text)
    }
}
