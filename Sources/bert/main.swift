import ArgumentParser
import Foundation
import SwiftBERT

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a Hugging Face BERT folder into SwiftBERT's format.",
        discussion: "Example: bert convert ~/hf/bert-base-uncased weights/bert-base-uncased")
    @Argument(help: "Folder with config.json, model.safetensors and vocab.txt or tokenizer.json.") var source: String
    @Argument(help: "Destination folder.") var destination: String

    func run() throws {
        let report = try Converter.convert(huggingFaceFolder: URL(fileURLWithPath: source), to: URL(fileURLWithPath: destination))
        let c = report.config
        print("converted \(source) -> \(destination): \(c.numHiddenLayers) layers, hidden \(c.hiddenSize), \(report.tensorCount) tensors, pooling \(c.pooling.rawValue), masked-LM head \(c.hasMaskedLMHead ? "yes" : "no")")
        if !report.droppedTensors.isEmpty {
            print("not used by the engine: \(report.droppedTensors.joined(separator: ", "))")
        }
    }
}

struct Bert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bert", abstract: "BERT inference in pure Swift.",
        subcommands: [Convert.self])
}

Bert.main()
