import Foundation
import SwiftBERTKernels

// What every model class does to load a converted folder, whatever its modules.

/// What `BertModel` and `MobileBertModel` hold alike: the converted folder they were loaded
/// from, its config and memory-mapped weights, and how they run. Each subclass adds its modules.
public class ConvertedModel: @unchecked Sendable {
    public let config: ModelConfig
    public let folder: URL
    /// Worker threads used inside one forward pass.
    public let threads: Int
    /// Seconds spent opening, validating and wiring the weights.
    public let loadSeconds: Double
    public let precision: Precision
    let weights: SafeTensorsFile

    /// Called by a model class once it has loaded its modules from `opened`, which it opened at `start`.
    init(_ opened: OpenedFolder, loadStarted start: DispatchTime) {
        (config, folder, weights) = (opened.config, opened.folder, opened.weights)
        (threads, precision) = (opened.threads, opened.precision)
        useSingleThreadedBLAS()
        loadSeconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    /// The root of the weights for a head: its Linear layers run FP32, or weight-only on INT8
    /// weights (a head runs on few rows).
    var headScope: WeightScope { WeightScope(weights, precision: .fp32) }

    /// Number of parameters in the weights file, as converted: a tied decoder counted once,
    /// MobileBERT's widened decoder with its embedding block again.
    public var parameterCount: Int { weights.tensors.values.reduce(0) { $0 + $1.count } }
}

/// A converted folder opened for one precision: its config, the memory-mapped weights, and the
/// threads a forward pass will use.
struct OpenedFolder {
    let folder: URL
    let config: ModelConfig
    let weights: SafeTensorsFile
    let precision: Precision
    let threads: Int
}

/// The most worker threads a model takes: more than any machine's cores, few enough that the
/// sizes computed from the count cannot overflow.
public let maximumThreads = 1024

/// Opens `folder` for `precision` (threads: nil for one per core).
func openConvertedModel(folder: URL, precision: Precision, threads: Int?, checksFiniteWeights: Bool) throws -> OpenedFolder {
    if let threads, threads > maximumThreads {
        throw SwiftBERTError.invalidInput(reason: "\(threads) threads: at most \(maximumThreads); give the number of cores (\(ProcessInfo.processInfo.activeProcessorCount) here) or fewer")
    }
    guard FileManager.default.fileExists(atPath: folder.path) else {
        throw SwiftBERTError.fileNotFound(path: folder.path, hint: "Give a converted model folder (see `bert convert`).")
    }
    let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
    let weightsPath = folder.appendingPathComponent(precision.fileName).path
    if precision.fileName != WeightFiles.fp32, !FileManager.default.fileExists(atPath: weightsPath) {
        let command = precision == .int8Static ? "bert quantize --calibrate SENTENCES.txt" : "bert quantize"
        throw SwiftBERTError.fileNotFound(path: weightsPath, hint: "Make it with `\(command) \(folder.path)`.")
    }
    let weights = try SafeTensorsFile(path: weightsPath)
    // A NaN or infinity in any float32 tensor would turn every output into NaN without a
    // word: one vectorised pass over the weights refuses them here (docs/robustness.md has
    // its cost, a few ms per 100 MB once the file is in the page cache).
    if checksFiniteWeights { try weights.checkFinite() }
    return OpenedFolder(folder: folder, config: config, weights: weights, precision: precision,
                        threads: max(1, threads ?? ProcessInfo.processInfo.activeProcessorCount))
}

/// `openConvertedModel` for a family's own encoder class: the folder opened, and the family's
/// fields (`fields`, its sub-config of `EncoderConfig`), which a folder of another family lacks.
func openConvertedModel<Fields>(folder: URL, precision: Precision, threads: Int?, checksFiniteWeights: Bool,
                                family fields: KeyPath<EncoderConfig, Fields?>, named name: String) throws -> (OpenedFolder, Fields) {
    let opened = try openConvertedModel(folder: folder, precision: precision, threads: threads, checksFiniteWeights: checksFiniteWeights)
    guard let own = opened.config.encoder[keyPath: fields] else {
        throw SwiftBERTError.invalidInput(reason: "\(folder.lastPathComponent) is not a \(name) model: load it with loadModel or loadEncoder")
    }
    return (opened, own)
}

/// `count` layers made by `load`, one per thread at a time: FP32 layers repack their weights
/// (PackedFloatMatrix), which is the cost of loading.
func loadInParallel<Layer>(_ count: Int, threads: Int, _ load: (Int) throws -> Layer) throws -> [Layer] {
    var loaded = [Result<Layer, Error>?](repeating: nil, count: count)
    loaded.withUnsafeMutableBufferPointer { slots in
        parallelFor(slots.count, threads: threads) { index, _ in slots[index] = Result { try load(index) } }
    }
    return try loaded.map { try $0!.get() }
}

/// A masked-LM head run on hidden rows [m × H] into fresh logits [m × vocabulary].
func runHead(_ rows: [Float], m: Int, vocabulary: Int,
             _ head: (UnsafePointer<Float>, UnsafeMutablePointer<Float>) -> Void) -> [Float] {
    var logits = [Float](repeating: 0, count: m * vocabulary)
    rows.withUnsafeBufferPointer { x in logits.withUnsafeMutableBufferPointer { head(x.baseAddress!, $0.baseAddress!) } }
    return logits
}
