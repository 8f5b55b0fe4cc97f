import Foundation

/// The weights of a Hugging Face checkpoint folder: `model.safetensors`, or the shards that
/// `model.safetensors.index.json` lists (transformers writes those for large models; the test
/// fixtures use them so that heads can share one encoder file).
struct CheckpointShards {
    let files: [SafeTensorsFile]
    /// Tensor name -> index into `files`.
    let owner: [String: Int]
    /// What error messages name: the single file, or the index.
    let path: String

    init(folder: URL) throws {
        let fm = FileManager.default
        let single = folder.appendingPathComponent("model.safetensors")
        let index = folder.appendingPathComponent("model.safetensors.index.json")
        if fm.fileExists(atPath: single.path) {
            let file = try SafeTensorsFile(path: single.path)
            files = [file]
            owner = Dictionary(uniqueKeysWithValues: file.tensors.keys.map { ($0, 0) })
            path = single.path
            return
        }
        guard fm.fileExists(atPath: index.path) else {
            let hasBin = fm.fileExists(atPath: folder.appendingPathComponent("pytorch_model.bin").path)
            throw BertError.notABertCheckpoint(path: folder.path, reason: hasBin
                ? "only pytorch_model.bin is present; save it as model.safetensors first (transformers: model.save_pretrained(dir, safe_serialization=True))"
                : "model.safetensors is missing")
        }
        let data = try readBoundedFile(index, limit: 64 << 20, what: "model.safetensors.index.json")
        guard case let .object(map)? = (try? JSONDecoder().decode(JSONValue.self, from: data))?["weight_map"] else {
            throw BertError.invalidConfig(path: index.path, reason: "no weight_map object; give the index transformers wrote")
        }
        var shardNames: [String] = []
        var owner: [String: Int] = [:]
        for (tensor, value) in map {
            // A shard is a file name inside the folder, never a path elsewhere.
            guard let shard = value.string, !shard.isEmpty, !shard.contains("/"), shard != "..", shard.hasSuffix(".safetensors") else {
                throw BertError.invalidConfig(path: index.path, reason: "tensor '\(printable(tensor))' maps to \(printable("\(value)")), not a .safetensors file in the folder")
            }
            if !shardNames.contains(shard) { shardNames.append(shard) }
            owner[tensor] = shardNames.firstIndex(of: shard)!
        }
        files = try shardNames.map { try SafeTensorsFile(path: folder.appendingPathComponent($0).path) }
        for (tensor, shard) in owner where files[shard].tensors[tensor] == nil {
            throw BertError.invalidWeights(path: files[shard].path, reason: "the index places tensor '\(printable(tensor))' here, but the file does not hold it; the checkpoint is incomplete")
        }
        self.owner = owner
        path = index.path
    }

    var names: Dictionary<String, Int>.Keys { owner.keys }

    func info(_ name: String) -> SafeTensorsFile.TensorInfo? {
        owner[name].flatMap { files[$0].tensors[name] }
    }

    func floatArray(_ name: String) throws -> [Float] {
        guard let shard = owner[name] else {
            throw BertError.notABertCheckpoint(path: path, reason: "missing tensor '\(printable(name))'")
        }
        return try files[shard].floatArray(name)
    }
}
