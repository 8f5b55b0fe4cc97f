import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTBench
import SwiftBERTCommandLine

struct Quantize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the INT8 weights file (model.int8.safetensors) of a converted model.",
        discussion: """
            With --calibrate FILE, write model.int8-static.safetensors (--precision int8-static) instead: \
            the input range of every encoder Linear layer, measured by running the FP32 model over \
            FILE's lines (real text like the model's inputs; a few hundred sentences), with \
            SmoothQuant's smoothing folded into the weights.
            Examples: bert quantize all-MiniLM-L6-v2
                      bert quantize --calibrate sentences.txt all-MiniLM-L6-v2
            """)
    @Argument(help: "Model name (a folder under weights/) or path to a converted model folder.") var model: String
    @Option(help: "A text file, one sentence or passage a line: calibrate static INT8 activations on it.")
    var calibrate: String?
    @Option(help: "With --calibrate: SmoothQuant's migration strength, between 0 and 1.")
    var smoothing: Float = Quantizer.defaultSmoothing

    func run() throws {
        let folder = try ModelLocator.resolve(model)
        let report: Quantizer.Report, written: String
        if let calibrate {
            let sentences = try BenchmarkSentences.load(URL(fileURLWithPath: calibrate))
            report = try Quantizer.calibrate(folder: folder, sentences: sentences, smoothing: smoothing)
            written = Precision.int8Static.fileName
        } else {
            report = try Quantizer.quantize(folder: folder)
            written = Quantizer.fileName
        }
        let ratio = Double(report.int8Bytes) / Double(max(report.fp32Bytes, 1))
        print("quantized \(report.quantizedTensors) matrices of \(folder.path): \(written) is "
              + String(format: "%.1f MB, %.1f%% of the FP32 file", Double(report.int8Bytes) / 1e6, ratio * 100))
    }
}
