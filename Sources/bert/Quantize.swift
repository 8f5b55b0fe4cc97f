import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

struct Quantize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the INT8 weights file (model.int8.safetensors) of a converted model.",
        discussion: "Example: bert quantize all-MiniLM-L6-v2")
    @Argument(help: "Model name (a folder under weights/) or path to a converted model folder.") var model: String

    func run() throws {
        let folder = try ModelLocator.resolve(model)
        let report = try Quantizer.quantize(folder: folder)
        let ratio = Double(report.int8Bytes) / Double(max(report.fp32Bytes, 1))
        print("quantized \(report.quantizedTensors) matrices of \(folder.path): \(Quantizer.fileName) is "
              + String(format: "%.1f MB, %.1f%% of the FP32 file", Double(report.int8Bytes) / 1e6, ratio * 100))
    }
}
