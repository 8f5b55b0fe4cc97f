import Foundation

/// A PyTorch checkpoint (`pytorch_model.bin`, `*.pt`) in the zip format of `torch.save` (torch ≥
/// 1.6), memory-mapped read-only. Only a state dict of tensors is accepted: `data.pkl` is run by
/// `TorchPickle`, which refuses every Python name but the few a state dict uses, and each tensor is
/// checked to lie inside its storage, a stored zip member, before any is handed out. A checkpoint
/// that wraps its state dict as `{"state_dict": ...}` or `{"model": ...}` is read too.
final class TorchCheckpoint: @unchecked Sendable {
    struct TensorInfo: Sendable {
        let dtype: TorchDType
        let shape: [Int]
        /// Byte range of the tensor's elements in the image.
        let range: Range<Int>
        /// Elements; checked not to overflow when the checkpoint was read.
        var count: Int { shape.reduce(1, *) }
    }

    let path: String
    private let tensors: [String: TensorInfo]
    private let order: [String]
    private let mapping: UnsafeMutableRawPointer
    private let size: Int

    /// Tensor names of the state dict, in the checkpoint's order.
    var names: [String] { order }

    private static let resave = "re-save it with torch.save(model.state_dict(), path) (torch ≥ 1.6) or as safetensors"

    convenience init(path: String) throws {
        let (map, size) = try MemoryMapping.mapFile(path: path, minimumSize: 22, what: "a pytorch_model.bin or .pt file",
                                                    tooShort: { Self.tooShort(path: path, size: $0) })
        try self.init(mapping: map, size: size, path: path)
    }

    /// A checkpoint image held in memory (tests and fuzzing), parsed by the same code as a file.
    convenience init(image: UnsafeRawBufferPointer, path: String) throws {
        let (map, size) = try MemoryMapping.mapCopy(of: image, path: path, minimumSize: 22,
                                                    tooShort: { Self.tooShort(path: path, size: $0) })
        try self.init(mapping: map, size: size, path: path)
    }

    private init(mapping map: UnsafeMutableRawPointer, size: Int, path: String) throws {
        let parsed: (tensors: [String: TensorInfo], order: [String])
        do { parsed = try Self.parse(UnsafeRawBufferPointer(start: map, count: size), path: path) }
        catch { munmap(map, size); throw error }
        self.path = path
        self.tensors = parsed.tensors
        self.order = parsed.order
        self.mapping = map
        self.size = size
    }

    deinit { munmap(mapping, size) }

    static func tooShort(path: String, size: Int) -> SwiftBERTError {
        .invalidWeights(path: path, reason: "the file is \(size) bytes, too short for a torch checkpoint; it is truncated: \(resave)")
    }

    func shape(_ name: String) -> [Int]? { tensors[name]?.shape }

    func dtype(_ name: String) -> TorchDType? { tensors[name]?.dtype }

    /// A float tensor (f32, f16, bf16, f64) converted to a fresh float32 array.
    func floatArray(_ name: String) throws -> [Float] {
        guard let info = tensors[name] else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "missing tensor '\(printable(name))'; the checkpoint does not hold a complete model")
        }
        guard let kind = info.dtype.floatKind else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "tensor '\(printable(name))' is \(info.dtype.rawValue), not a float type; use a checkpoint saved in float32, float16 or bfloat16")
        }
        return decodeFloats(UnsafeRawBufferPointer(start: mapping + info.range.lowerBound, count: info.range.count), count: info.count, kind: kind)
    }

    /// Reads the zip's table of contents and `data.pkl`, and checks every tensor against its storage.
    static func parse(_ image: UnsafeRawBufferPointer, path: String) throws -> (tensors: [String: TensorInfo], order: [String]) {
        func fail(_ reason: String) -> SwiftBERTError { .invalidWeights(path: path, reason: reason) }
        guard ZipArchive.looksLikeZip(image) else {
            // The legacy format (torch < 1.6) is a bare pickle stream, starting with PROTO 2.
            if image.count >= 2, image[0] == 0x80, image[1] == 0x02 {
                throw fail("it is a legacy (torch < 1.6) checkpoint, which SwiftBERT does not read: load it with torch and \(resave)")
            }
            throw fail("it is not a zip-format torch checkpoint (nor safetensors); \(resave)")
        }
        let archive = try ZipArchive(image, path: path)
        // Every member sits in one folder named after the archive: <archive>/data.pkl, <archive>/data/<key>.
        let pickles = archive.names.filter { $0 == "data.pkl" || $0.hasSuffix("/data.pkl") && !$0.dropLast(9).contains("/") }
        guard pickles.count == 1, let pickleName = pickles.first, let pickleRange = archive.members[pickleName]?.data else {
            throw fail("the zip holds \(pickles.count) data.pkl members instead of 1; it is not a torch.save checkpoint: \(resave)")
        }
        let prefix = String(pickleName.dropLast("data.pkl".count))
        if let order = archive.members[prefix + "byteorder"]?.data {
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: image[order]), as: UTF8.self)
            guard text == "little" else {
                throw fail("its storages are \(printable(text))-endian; SwiftBERT reads little-endian checkpoints: load and \(resave) on a little-endian machine")
            }
        }
        let root = try TorchPickle.load(UnsafeRawBufferPointer(rebasing: image[pickleRange]), path: path)
        let entries = try stateDict(root, path: path)

        var tensors: [String: TensorInfo] = [:]
        var order: [String] = []
        var storageTypes: [String: TorchDType] = [:]
        for (name, tensor) in entries {
            let storage = tensor.storage
            func refuse(_ reason: String) -> SwiftBERTError { fail("tensor '\(printable(name))' \(reason); the file is damaged: \(resave)") }
            guard tensors[name] == nil else { throw fail("the state dict names tensor '\(printable(name))' twice; the file is damaged: \(resave)") }
            // One storage read as two element types would alias floats as integers.
            if let seen = storageTypes[storage.key], seen != storage.dtype {
                throw refuse("reads storage '\(printable(storage.key))' as \(storage.dtype.rawValue), another tensor as \(seen.rawValue)")
            }
            storageTypes[storage.key] = storage.dtype
            guard let member = archive.members[prefix + "data/" + storage.key]?.data else {
                throw refuse("lives in storage '\(printable(storage.key))', which the zip does not hold")
            }
            let elementSize = storage.dtype.byteSize
            let (storageBytes, storageOverflow) = storage.elementCount.multipliedReportingOverflow(by: elementSize)
            guard !storageOverflow, storageBytes <= member.count else {
                throw refuse("lives in storage '\(printable(storage.key))' of \(storage.elementCount) elements, but the file holds \(member.count) bytes of it")
            }
            guard tensor.shape.count == tensor.stride.count, tensor.shape.count <= 64 else {
                throw refuse("has \(tensor.shape.count) dimensions and \(tensor.stride.count) strides")
            }
            guard tensor.shape.allSatisfy({ $0 >= 0 }), tensor.offset >= 0 else {
                throw refuse("has a negative size \(shapeText(tensor.shape)) or offset \(tensor.offset)")
            }
            var count = 1, overflow = false
            for dimension in tensor.shape where !overflow { (count, overflow) = count.multipliedReportingOverflow(by: dimension) }
            guard !overflow else { throw refuse("has a shape \(shapeText(tensor.shape)) whose element count overflows") }
            // Row-major contiguous only: what state_dict() of a model holds. A dimension of size 1
            // may have any stride; an empty tensor reads nothing.
            var expected = 1
            for (dimension, stride) in zip(tensor.shape, tensor.stride).reversed() where count > 0 {
                guard dimension == 1 || stride == expected else {
                    throw fail("tensor '\(printable(name))' is not contiguous (shape \(shapeText(tensor.shape)), strides \(shapeText(tensor.stride))), which SwiftBERT does not read: save tensor.contiguous() instead")
                }
                expected *= dimension  // cannot overflow: at most count
            }
            let (end, endOverflow) = tensor.offset.addingReportingOverflow(count)
            guard !endOverflow, end <= storage.elementCount else {
                throw refuse("reads elements \(tensor.offset)..<\(endOverflow ? "overflow" : String(end)) of storage '\(printable(storage.key))', which has \(storage.elementCount)")
            }
            // In bytes: the storage fits in its member, so these fit in Int.
            let start = member.lowerBound + (count > 0 ? tensor.offset * elementSize : 0)
            tensors[name] = TensorInfo(dtype: storage.dtype, shape: tensor.shape, range: start..<(start + count * elementSize))
            order.append(name)
        }
        return (tensors, order)
    }

    /// The (name, tensor) pairs of the pickle's result: a dict of tensors, or one wrapped in a
    /// dict under "state_dict" or "model" (a training checkpoint).
    static func stateDict(_ root: TorchPickle.Value, path: String) throws -> [(String, TorchTensorReference)] {
        func fail(_ reason: String) -> SwiftBERTError { .invalidWeights(path: path, reason: reason) }
        guard case let .container(dict) = root, dict.isDict else {
            throw fail("data.pkl holds \(root.kindName), not a state dict; \(resave)")
        }
        for wrapper in ["state_dict", "model"] {
            if let inner = dict.pairs.last(where: { if case .string(wrapper) = $0.key { return true } else { return false } }),
               case let .container(innerDict) = inner.value, innerDict.isDict {
                return try stateDict(innerDict, path: path, within: wrapper)
            }
        }
        return try stateDict(dict, path: path, within: nil)
    }

    private static func stateDict(_ dict: TorchPickle.Container, path: String, within wrapper: String?) throws -> [(String, TorchTensorReference)] {
        var entries: [(String, TorchTensorReference)] = []
        for (key, value) in dict.pairs {
            guard case let .string(name) = key, case let .tensor(tensor) = value else {
                let described = if case let .string(name) = key { "'\(printable(name))'" } else { key.kindName }
                throw SwiftBERTError.invalidWeights(path: path, reason: "the checkpoint\(wrapper.map { "'s \"\($0)\" dict" } ?? "") maps \(described) to \(value.kindName), not a tensor; SwiftBERT reads state dicts of tensors: \(resave)")
            }
            entries.append((name, tensor))
        }
        return entries
    }
}
