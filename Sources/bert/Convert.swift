import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a Hugging Face BERT folder into SwiftBERT's format.",
        discussion: "Example: bert convert ~/hf/bert-base-uncased weights/bert-base-uncased")
    @Argument(help: "Folder with config.json, model.safetensors (or pytorch_model.bin) and vocab.txt or tokenizer.json; BGE-M3's sparse_linear.pt and colbert_linear.pt beside them are read too.") var source: String
    @Argument(help: "Destination folder.") var destination: String

    func run() throws {
        let report = try Converter.convert(huggingFaceFolder: URL(fileURLWithPath: source), to: URL(fileURLWithPath: destination))
        let (encoder, heads) = (report.config.encoder, report.config.heads)
        var text = "converted \(source) -> \(destination): \(encoder.numHiddenLayers) layers, hidden \(encoder.hiddenSize), \(report.tensorCount) tensors, pooling \(heads.sentence.pooling.rawValue), masked-LM head \(heads.hasMaskedLMHead ? "yes" : "no")"
            + (heads.hasLexicalWeights == true ? ", sparse head (sparse_linear)" : "")
            + (heads.colbertDimension.map { ", multi-vector head (colbert_linear, \($0) wide)" } ?? "") + "\n"
        if !report.droppedTensors.isEmpty {
            text += "not used by the engine: \(report.droppedTensors.joined(separator: ", "))\n"
        }
        try writeResult(text)
    }
}
