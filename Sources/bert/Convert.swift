import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a Hugging Face BERT folder into SwiftBERT's format.",
        discussion: "Example: bert convert ~/hf/bert-base-uncased weights/bert-base-uncased")
    @Argument(help: "Folder with config.json, model.safetensors (or pytorch_model.bin) and vocab.txt or tokenizer.json; BGE-M3's sparse_linear.pt and colbert_linear.pt beside them are read too.") var source: String
    @Argument(help: "Destination folder.") var destination: String

    func run() throws {
        try checkCreatable(destination)
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

/// Whether `destination` is a folder bert can write the converted model into, or make: checked
/// before minutes of converting. A file there, or a parent it cannot write into, is a failure to
/// create the output (EX_CANTCREAT, 73), not a write error (74) after the work.
func checkCreatable(_ destination: String) throws {
    var isFolder: ObjCBool = false
    if FileManager.default.fileExists(atPath: destination, isDirectory: &isFolder) {
        guard isFolder.boolValue else {
            throw StreamError.cannotCreate(path: destination, reason: "it is a file, not a folder: give a folder to write the converted model into")
        }
        if access(destination, W_OK) != 0 {
            throw StreamError.cannotCreate(path: destination, reason: "the folder is not writable (\(String(cString: strerror(errno))))")
        }
        return
    }
    // The folder is made with its missing parents: the nearest one that exists must take it.
    var parent = URL(fileURLWithPath: destination).standardizedFileURL.deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: parent.path, isDirectory: &isFolder) { parent.deleteLastPathComponent() }
    guard isFolder.boolValue else {
        throw StreamError.cannotCreate(path: destination, reason: "\(parent.path) is a file, so no folder can be made in it")
    }
    if access(parent.path, W_OK) != 0 {
        throw StreamError.cannotCreate(path: destination, reason: "no folder can be made in \(parent.path) (\(String(cString: strerror(errno))))")
    }
}
