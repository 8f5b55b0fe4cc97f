import Foundation

/// A safetensors file, memory-mapped read-only. The header is parsed and every tensor's
/// byte range checked against the file before any tensor is handed out.
final class SafeTensorsFile: @unchecked Sendable {
    enum DType: String, Sendable, CaseIterable {
        case f32 = "F32", f16 = "F16", bf16 = "BF16", i8 = "I8", i32 = "I32", i64 = "I64", u8 = "U8"
        static var allNames: String { allCases.map(\.rawValue).joined(separator: ", ") }
        var byteSize: Int {
            switch self {
            case .f32, .i32: return 4
            case .f16, .bf16: return 2
            case .i8, .u8: return 1
            case .i64: return 8
            }
        }
    }

    struct TensorInfo: Sendable {
        let dtype: DType
        let shape: [Int]
        /// Byte range relative to the start of the data section.
        let range: Range<Int>
        /// Elements; the parser has checked that the product neither overflows nor exceeds the file.
        var count: Int { shape.reduce(1, *) }
    }

    let path: String
    let tensors: [String: TensorInfo]
    let metadata: [String: String]
    let fileSize: Int
    private let mapping: UnsafeMutableRawPointer
    /// Offset of the data section from the start of the file.
    let dataStart: Int
    /// False for an in-memory image (`init(image:path:)`).
    private let isFileMapping: Bool

    /// Largest header accepted, as the reference implementation (safetensors' MAX_HEADER_SIZE):
    /// a hostile length cannot make the parser read or allocate more than this.
    static let maxHeaderLength = 100_000_000

    convenience init(path: String) throws {
        // The header length needs 8 bytes.
        let (map, size) = try MemoryMapping.mapFile(path: path, minimumSize: 8, what: "the model.safetensors file of a converted model",
                                                    tooShort: { Self.tooShort(path: path, size: $0) })
        try self.init(mapping: map, size: size, path: path, isFileMapping: true)
    }

    /// A safetensors image held in memory (tests and fuzzing), copied into a private anonymous
    /// mapping and parsed by the same code as a file.
    convenience init(image: UnsafeRawBufferPointer, path: String) throws {
        let (map, size) = try MemoryMapping.mapCopy(of: image, path: path, minimumSize: 8,
                                                    tooShort: { Self.tooShort(path: path, size: $0) })
        try self.init(mapping: map, size: size, path: path, isFileMapping: false)
    }

    /// Takes over a mapping of `size` bytes and parses its header; unmaps it if that fails.
    /// The file path and the in-memory path (used by the fuzzer) are one code path from here.
    private init(mapping map: UnsafeMutableRawPointer, size: Int, path: String, isFileMapping: Bool) throws {
        let header: Header
        do { header = try Self.parseHeader(UnsafeRawBufferPointer(start: map, count: size), path: path) }
        catch { munmap(map, size); throw error }
        self.path = path
        self.tensors = header.tensors
        self.metadata = header.metadata
        self.fileSize = size
        self.mapping = map
        self.isFileMapping = isFileMapping
        self.dataStart = header.dataStart
    }

    /// What the header of a safetensors image says, every entry checked against the image's size.
    struct Header {
        var tensors: [String: TensorInfo]
        var metadata: [String: String]
        /// Offset of the data section from the start of the image.
        var dataStart: Int
    }

    static func tooShort(path: String, size: Int) -> SwiftBERTError {
        .invalidWeights(path: path, reason: "the file is \(size) bytes, too short for a safetensors header; it is truncated or not safetensors: convert the model again with `bert convert`")
    }

    /// Parses and validates the header and tensor table of a whole safetensors image (the mapped
    /// file). Nothing is read outside `image`, and nothing is allocated in proportion to a size
    /// the image claims rather than holds.
    static func parseHeader(_ image: UnsafeRawBufferPointer, path: String) throws -> Header {
        func fail(_ reason: String) -> SwiftBERTError { .invalidWeights(path: path, reason: reason) }
        let reconvert = "convert the model again with `bert convert`"
        let size = image.count
        guard size >= 8, let base = image.baseAddress else { throw tooShort(path: path, size: size) }
        let declared = base.loadUnaligned(as: UInt64.self).littleEndian
        guard declared <= UInt64(size - 8) else {
            throw fail("the header length \(declared) runs past the end of the \(size)-byte file; the file is truncated or not safetensors: \(reconvert)")
        }
        let headerLength = Int(declared)
        guard headerLength <= maxHeaderLength else {
            throw fail("the header is \(headerLength) bytes, more than the \(maxHeaderLength) safetensors allows; the file is damaged: \(reconvert)")
        }
        guard headerLength >= 2, base.load(fromByteOffset: 8, as: UInt8.self) == UInt8(ascii: "{") else {
            throw fail("the header is not a JSON object; the file is damaged or not safetensors: \(reconvert)")
        }
        let headerBytes = Data(bytes: base + 8, count: headerLength)
        let table: HeaderTable
        do {
            table = try JSONDecoder().decode(HeaderTable.self, from: headerBytes)
        } catch let error as HeaderTable.EntryError {
            throw fail("tensor '\(error.name)' has a malformed entry (\(error.reason)); the file is damaged: \(reconvert)")
        } catch {
            throw fail("the header is not valid JSON (\(describe(error))); the file is damaged or not safetensors: \(reconvert)")
        }
        let dataStart = 8 + headerLength
        let dataSize = size - dataStart
        var tensors: [String: TensorInfo] = [:]
        tensors.reserveCapacity(table.entries.count)
        for (name, entry) in table.entries {
            guard let dtype = DType(rawValue: entry.dtype) else {
                throw fail("tensor '\(printable(name))' has dtype \(printable(entry.dtype)), which SwiftBERT does not read (\(DType.allNames)); \(reconvert)")
            }
            guard entry.shape.allSatisfy({ $0 >= 0 }) else {
                throw fail("tensor '\(printable(name))' has a negative dimension in its shape \(shapeText(entry.shape)); the file is damaged: \(reconvert)")
            }
            var elements = 1, overflow = false
            for dimension in entry.shape where !overflow {
                (elements, overflow) = elements.multipliedReportingOverflow(by: dimension)
            }
            let (byteCount, byteOverflow) = elements.multipliedReportingOverflow(by: dtype.byteSize)
            guard entry.offsets.count == 2 else {
                throw fail("tensor '\(printable(name))' has \(entry.offsets.count) data offsets instead of 2; the file is damaged: \(reconvert)")
            }
            let (begin, end) = (entry.offsets[0], entry.offsets[1])
            guard begin >= 0, begin <= end, end <= dataSize else {
                throw fail("tensor '\(printable(name))' lies outside the file (data offsets [\(begin), \(end)], data section \(dataSize) bytes); the file is truncated or damaged: \(reconvert)")
            }
            guard !overflow, !byteOverflow, end - begin == byteCount else {
                throw fail("tensor '\(printable(name))' has \(end - begin) bytes for shape \(shapeText(entry.shape)) of \(dtype.rawValue); the file is damaged: \(reconvert)")
            }
            tensors[name] = TensorInfo(dtype: dtype, shape: entry.shape, range: begin..<end)
        }
        // Tensors must not overlap: a hostile file could alias one tensor into another.
        let sorted = tensors.filter { !$0.value.range.isEmpty }.sorted {
            ($0.value.range.lowerBound, $0.key) < ($1.value.range.lowerBound, $1.key)
        }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.value.range.upperBound > b.value.range.lowerBound {
            throw fail("tensors '\(printable(a.key))' and '\(printable(b.key))' overlap in the file; it is damaged: \(reconvert)")
        }
        return Header(tensors: tensors, metadata: table.metadata, dataStart: dataStart)
    }

    deinit { munmap(mapping, fileSize) }

    /// Lets the kernel drop the resident pages of a tensor the model has copied (repacked)
    /// and will not read again; a later read would fetch them from the file again. Only for
    /// file mappings: an in-memory image's pages hold the only copy of its bytes.
    func releasePages(of name: String) {
        guard isFileMapping, let info = tensors[name] else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (dataStart + info.range.lowerBound + page - 1) / page * page
        let end = (dataStart + info.range.upperBound) / page * page
        guard end > start else { return }
        madvise(mapping + start, end - start, Int32(MADV_DONTNEED))
    }

    /// Raw bytes of a tensor, after checking its dtype and (optionally) shape.
    func bytes(_ name: String, dtype: DType, shape: [Int]? = nil) throws -> UnsafeRawBufferPointer {
        guard let info = tensors[name] else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "missing tensor '\(printable(name))'; the file does not hold a complete model: convert the checkpoint again with `bert convert`")
        }
        guard info.dtype == dtype else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "tensor '\(printable(name))' is \(info.dtype.rawValue), expected \(dtype.rawValue); convert the checkpoint again with `bert convert`")
        }
        if let shape, shape != info.shape {
            throw SwiftBERTError.invalidWeights(path: path, reason: "tensor '\(printable(name))' has shape \(shapeText(info.shape)), but config.json implies \(shapeText(shape)); the config and the weights do not belong together: convert the checkpoint again with `bert convert`")
        }
        return UnsafeRawBufferPointer(start: mapping + dataStart + info.range.lowerBound, count: info.range.count)
    }

    /// A float32 tensor as a pointer into the mapping (no copy).
    func floats(_ name: String, shape: [Int]? = nil) throws -> UnsafeBufferPointer<Float> {
        let raw = try bytes(name, dtype: .f32, shape: shape)
        // safetensors does not promise alignment; every file we write keeps each tensor aligned to
        // its element size (`SafeTensorsWriter`), which is all a float pointer needs.
        guard Int(bitPattern: raw.baseAddress) % MemoryLayout<Float>.alignment == 0 else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "tensor '\(printable(name))' is not 4-byte aligned; convert the model again with `bert convert`")
        }
        return raw.bindMemory(to: Float.self)
    }

    /// The first float32 tensor (in name order) holding a NaN or an infinity, with the index of
    /// the first such element; nil when all are finite. One vectorised pass over the tensors'
    /// bytes (see docs/robustness.md for its cost at load).
    func firstNonFiniteValue() -> (tensor: String, index: Int, value: Float)? {
        for name in tensors.keys.sorted() where tensors[name]!.dtype == .f32 {
            let info = tensors[name]!
            let words = (mapping + dataStart + info.range.lowerBound).assumingMemoryBound(to: UInt8.self)
            if let index = firstNonFiniteFloat(UnsafeRawPointer(words), count: info.count) {
                let value = UnsafeRawPointer(words).loadUnaligned(fromByteOffset: index * 4, as: Float.self)
                return (name, index, value)
            }
        }
        return nil
    }

    /// Throws `invalidWeights` naming the first tensor that holds a NaN or an infinity.
    func checkFinite() throws {
        guard let bad = firstNonFiniteValue() else { return }
        throw SwiftBERTError.invalidWeights(path: path, reason: "tensor '\(printable(bad.tensor))' holds \(bad.value) at element \(bad.index); the checkpoint is corrupt (a diverged training run or a damaged file): use an intact checkpoint and convert it again")
    }

    /// Any float tensor (F32, F16, BF16) converted to a fresh float32 array; used by the converter.
    func floatArray(_ name: String) throws -> [Float] {
        guard let info = tensors[name] else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "missing tensor '\(printable(name))'; convert the checkpoint again with `bert convert`")
        }
        let raw = try bytes(name, dtype: info.dtype)
        let kind: StoredFloatKind
        switch info.dtype {
        case .f32: kind = .f32
        case .f16: kind = .f16
        case .bf16: kind = .bf16
        default: throw SwiftBERTError.invalidWeights(path: path, reason: "tensor '\(printable(name))' is \(info.dtype.rawValue), not a float type; use a checkpoint saved in float32, float16 or bfloat16")
        }
        return decodeFloats(raw, count: info.count, kind: kind)
    }
}

/// Index of the first NaN or infinity among `count` float32 values (any alignment), or nil.
/// Blocks are screened with an integer max of the exponent bits, which vectorises; only a
/// block that holds one is searched element by element.
func firstNonFiniteFloat(_ values: UnsafeRawPointer, count: Int) -> Int? {
    let exponent: UInt32 = 0x7F80_0000
    let block = 4096
    var start = 0
    while start < count {
        let n = min(block, count - start)
        var largest: UInt32 = 0
        let base = values + start * 4
        for i in 0..<n { largest = max(largest, base.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self) & exponent) }
        if largest == exponent {
            for i in 0..<n where base.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self) & exponent == exponent {
                return start + i
            }
        }
        start += n
    }
    return nil
}

/// A shape for a message: short even when a hostile file gives a million dimensions.
func shapeText(_ shape: [Int]) -> String {
    shape.count <= 8 ? "\(shape)" : "[" + shape.prefix(8).map(String.init).joined(separator: ", ") + ", … (\(shape.count) dimensions)]"
}

/// A safetensors header as JSON: tensor entries by name, and the optional "__metadata__" map.
/// Numbers are decoded as exact integers (1.5, 1e300 or true are errors, not rounded).
struct HeaderTable: Decodable {
    struct Entry: Decodable {
        var dtype: String
        var shape: [Int]
        var offsets: [Int]
        enum CodingKeys: String, CodingKey { case dtype, shape, offsets = "data_offsets" }
    }
    /// A malformed entry, named.
    struct EntryError: Error {
        var name: String
        var reason: String
    }
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    var entries: [String: Entry] = [:]
    var metadata: [String: String] = [:]

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        for key in container.allKeys {
            if key.stringValue == "__metadata__" {
                // The format says string to string; other values are dropped rather than refused.
                let values = (try? container.decode([String: JSONValue].self, forKey: key)) ?? [:]
                for (name, value) in values { if let text = value.string { metadata[name] = text } }
                continue
            }
            do {
                entries[key.stringValue] = try container.decode(Entry.self, forKey: key)
            } catch {
                throw EntryError(name: printable(key.stringValue), reason: describe(error))
            }
        }
    }
}

/// Writes a safetensors file the official reader accepts: the tensors back to back, with no
/// gap between them (safetensors refuses gaps), in order of element size (8, 4, 2, then 1 byte)
/// and then name. The header is padded with spaces, as the format allows, so the data section
/// starts 64-byte aligned; together with that order every tensor starts on a multiple of its
/// element size, so float32 tensors can be mapped and read in place, without a copy.
struct SafeTensorsWriter {
    struct Entry {
        let name: String
        let dtype: SafeTensorsFile.DType
        let shape: [Int]
        let data: Data
        init(name: String, dtype: SafeTensorsFile.DType, shape: [Int], data: Data) {
            self.name = name; self.dtype = dtype; self.shape = shape; self.data = data
        }
        init(name: String, shape: [Int], floats: [Float]) {
            self.init(name: name, dtype: .f32, shape: shape, data: floats.withUnsafeBytes { Data($0) })
        }
    }

    static func write(_ entries: [Entry], metadata: [String: String] = [:], to path: String) throws {
        let alignment = 64
        var header: [String: Any] = ["__metadata__": metadata]
        var offset = 0
        let ordered = entries.sorted { ($1.dtype.byteSize, $0.name) < ($0.dtype.byteSize, $1.name) }
        for entry in ordered {
            header[entry.name] = ["dtype": entry.dtype.rawValue, "shape": entry.shape, "data_offsets": [offset, offset + entry.data.count]] as [String: Any]
            offset += entry.data.count
        }
        var json = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        // Pad the header with spaces so the data section starts 64-byte aligned.
        let padded = (8 + json.count + alignment - 1) / alignment * alignment - 8
        json.append(contentsOf: [UInt8](repeating: 0x20, count: padded - json.count))
        var out = Data(capacity: 8 + json.count + offset)
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(json)
        for entry in ordered { out.append(entry.data) }
        try SwiftBERTError.writing(path) { try out.write(to: URL(fileURLWithPath: path), options: .atomic) }
    }
}
