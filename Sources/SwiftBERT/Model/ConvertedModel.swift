import Foundation

// What every model class does to load a converted folder, whatever its modules.

/// The config and the memory-mapped weights of `precision` in a converted folder.
func openConvertedModel(folder: URL, precision: Precision, checksFiniteWeights: Bool) throws -> (BertConfig, SafeTensorsFile) {
    guard FileManager.default.fileExists(atPath: folder.path) else {
        throw BertError.fileNotFound(path: folder.path, hint: "Give a converted model folder (see `bert convert`).")
    }
    let config = try BertConfig.load(from: folder.appendingPathComponent("config.json"))
    let weightsPath = folder.appendingPathComponent(precision.fileName).path
    if precision.fileName != WeightFiles.fp32, !FileManager.default.fileExists(atPath: weightsPath) {
        throw BertError.fileNotFound(path: weightsPath, hint: "Make it with `bert quantize \(folder.path)`.")
    }
    let weights = try SafeTensorsFile(path: weightsPath)
    // A NaN or infinity in any float32 tensor would turn every output into NaN without a
    // word: one vectorised pass over the weights refuses them here (docs/robustness.md has
    // its cost, a few ms per 100 MB once the file is in the page cache).
    if checksFiniteWeights { try weights.checkFinite() }
    return (config, weights)
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
