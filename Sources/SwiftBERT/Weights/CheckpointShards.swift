import Foundation

/// What the converter reads tensors from: a safetensors file or a torch checkpoint.
protocol TensorSource: AnyObject {
    var path: String { get }
    /// Tensor names, in any order.
    var tensorNames: [String] { get }
    func shape(_ name: String) -> [Int]?
    /// A float tensor converted to a fresh float32 array.
    func floatArray(_ name: String) throws -> [Float]
}

extension SafeTensorsFile: TensorSource {
    var tensorNames: [String] { Array(tensors.keys) }
    func shape(_ name: String) -> [Int]? { tensors[name]?.shape }
}

extension TorchCheckpoint: TensorSource {
    var tensorNames: [String] { names }
}

/// The weights of a Hugging Face checkpoint folder: `model.safetensors`, or the shards that
/// `model.safetensors.index.json` lists (transformers writes those for large models; the test
/// fixtures use them so that heads can share one encoder file); failing those, `pytorch_model.bin`
/// or the shards of `pytorch_model.bin.index.json` (see `TorchCheckpoint`). safetensors is
/// preferred: it is read without running a pickle.
struct CheckpointShards {
    /// A tensor's shape, as the converter checks it against config.json.
    struct TensorInfo { let shape: [Int] }

    let files: [any TensorSource]
    /// Tensor name -> index into `files`.
    let owner: [String: Int]
    /// What error messages name: the single file, or the index.
    let path: String

    /// The weights files a folder may hold, in order of preference.
    private static var formats: [(single: String, index: String, shardSuffix: String, open: (String) throws -> any TensorSource)] { [
        ("model.safetensors", "model.safetensors.index.json", ".safetensors", { try SafeTensorsFile(path: $0) }),
        ("pytorch_model.bin", "pytorch_model.bin.index.json", ".bin", { try TorchCheckpoint(path: $0) }),
    ] }

    init(folder: URL) throws {
        let fm = FileManager.default
        guard let format = Self.formats.first(where: {
            fm.fileExists(atPath: folder.appendingPathComponent($0.single).path) || fm.fileExists(atPath: folder.appendingPathComponent($0.index).path)
        }) else {
            throw SwiftBERTError.unsupportedCheckpoint(path: folder.path, reason: "model.safetensors (or pytorch_model.bin) is missing")
        }
        let single = folder.appendingPathComponent(format.single)
        let index = folder.appendingPathComponent(format.index)
        if fm.fileExists(atPath: single.path) {
            let file = try format.open(single.path)
            files = [file]
            owner = Dictionary(file.tensorNames.map { ($0, 0) }, uniquingKeysWith: { first, _ in first })
            path = single.path
            return
        }
        let data = try readBoundedFile(index, limit: 64 << 20, what: format.index)
        guard case let .object(map)? = (try? JSONDecoder().decode(JSONValue.self, from: data))?["weight_map"] else {
            throw SwiftBERTError.invalidConfig(path: index.path, reason: "no weight_map object; give the index transformers wrote")
        }
        var shardNames: [String] = []
        var owner: [String: Int] = [:]
        for (tensor, value) in map {
            // A shard is a file name inside the folder, never a path elsewhere.
            guard let shard = value.string, !shard.isEmpty, !shard.contains("/"), shard != "..", shard.hasSuffix(format.shardSuffix) else {
                throw SwiftBERTError.invalidConfig(path: index.path, reason: "tensor '\(printable(tensor))' maps to \(printable("\(value)")), not a \(format.shardSuffix) file in the folder")
            }
            if !shardNames.contains(shard) { shardNames.append(shard) }
            owner[tensor] = shardNames.firstIndex(of: shard)!
        }
        files = try shardNames.map { try format.open(folder.appendingPathComponent($0).path) }
        for (tensor, shard) in owner where files[shard].shape(tensor) == nil {
            throw SwiftBERTError.invalidWeights(path: files[shard].path, reason: "the index places tensor '\(printable(tensor))' here, but the file does not hold it; the checkpoint is incomplete")
        }
        self.owner = owner
        path = index.path
    }

    var names: Dictionary<String, Int>.Keys { owner.keys }

    func info(_ name: String) -> TensorInfo? {
        owner[name].flatMap { files[$0].shape(name) }.map(TensorInfo.init(shape:))
    }

    func floatArray(_ name: String) throws -> [Float] {
        guard let shard = owner[name] else {
            throw SwiftBERTError.unsupportedCheckpoint(path: path, reason: "missing tensor '\(printable(name))'")
        }
        return try files[shard].floatArray(name)
    }
}
