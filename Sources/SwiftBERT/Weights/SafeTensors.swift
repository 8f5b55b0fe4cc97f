import Foundation

/// A safetensors file, memory-mapped read-only. The header is parsed and every tensor's
/// byte range checked against the file before any tensor is handed out.
public final class SafeTensorsFile: @unchecked Sendable {
    public enum DType: String, Sendable {
        case f32 = "F32", f16 = "F16", bf16 = "BF16", i8 = "I8", i32 = "I32", i64 = "I64", u8 = "U8"
        public var byteSize: Int {
            switch self {
            case .f32, .i32: return 4
            case .f16, .bf16: return 2
            case .i8, .u8: return 1
            case .i64: return 8
            }
        }
    }

    public struct TensorInfo: Sendable {
        public let dtype: DType
        public let shape: [Int]
        /// Byte range relative to the start of the data section.
        public let range: Range<Int>
        public var count: Int { shape.reduce(1, *) }
    }

    public let path: String
    public let tensors: [String: TensorInfo]
    public let metadata: [String: String]
    public let fileSize: Int
    private let mapping: UnsafeMutableRawPointer
    private let dataStart: Int

    public init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw BertError.fileNotFound(path: path, hint: "Convert a checkpoint with `bert convert` or run the set-up command.")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw BertError.invalidWeights(path: path, reason: "cannot stat the file") }
        let size = Int(st.st_size)
        guard size >= 8 else { throw BertError.invalidWeights(path: path, reason: "file is \(size) bytes, shorter than the 8-byte header length") }
        guard let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else {
            throw BertError.invalidWeights(path: path, reason: "mmap failed (errno \(errno))")
        }
        // Unmap on any validation failure below.
        var ok = false
        defer { if !ok { munmap(map, size) } }

        let headerLength = Int(clamping: map.loadUnaligned(as: UInt64.self).littleEndian)
        guard headerLength <= size - 8 else {
            throw BertError.invalidWeights(path: path, reason: "header length \(headerLength) runs past the end of the \(size)-byte file (truncated?)")
        }
        let headerBytes = Data(bytes: map + 8, count: headerLength)
        guard let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any] else {
            throw BertError.invalidWeights(path: path, reason: "header is not a JSON object")
        }
        let dataStart = 8 + headerLength
        let dataSize = size - dataStart
        var tensors: [String: TensorInfo] = [:]
        var metadata: [String: String] = [:]
        for (name, value) in header {
            if name == "__metadata__" {
                for (k, v) in value as? [String: Any] ?? [:] { metadata[k] = v as? String ?? "\(v)" }
                continue
            }
            guard let entry = value as? [String: Any],
                  let dtypeName = entry["dtype"] as? String,
                  let shape = (entry["shape"] as? [Any])?.compactMap({ ($0 as? NSNumber)?.intValue }),
                  let offsets = (entry["data_offsets"] as? [Any])?.compactMap({ ($0 as? NSNumber)?.intValue }),
                  offsets.count == 2, shape.count == (entry["shape"] as? [Any])?.count
            else { throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' has a malformed entry") }
            guard let dtype = DType(rawValue: dtypeName) else {
                throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' has unsupported dtype \(dtypeName)")
            }
            guard shape.allSatisfy({ $0 >= 0 && $0 < 1 << 40 }) else {
                throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' has an invalid shape \(shape)")
            }
            let (count, overflow) = shape.reduce((1, false)) { acc, d in
                let r = acc.0.multipliedReportingOverflow(by: d); return (r.partialValue, acc.1 || r.overflow)
            }
            guard !overflow, offsets[0] >= 0, offsets[0] <= offsets[1], offsets[1] <= dataSize else {
                throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' lies outside the file (offsets \(offsets), data section \(dataSize) bytes; truncated?)")
            }
            guard offsets[1] - offsets[0] == count * dtype.byteSize else {
                throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' has \(offsets[1] - offsets[0]) bytes for shape \(shape) of \(dtypeName)")
            }
            tensors[name] = TensorInfo(dtype: dtype, shape: shape, range: offsets[0]..<offsets[1])
        }
        // Tensors must not overlap: a hostile file could alias one tensor into another.
        let sorted = tensors.sorted { $0.value.range.lowerBound < $1.value.range.lowerBound }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.value.range.upperBound > b.value.range.lowerBound {
            throw BertError.invalidWeights(path: path, reason: "tensors '\(a.key)' and '\(b.key)' overlap")
        }
        self.tensors = tensors
        self.metadata = metadata
        self.fileSize = size
        self.mapping = map
        self.dataStart = dataStart
        ok = true
    }

    deinit { munmap(mapping, fileSize) }

    /// Raw bytes of a tensor, after checking its dtype and (optionally) shape.
    public func bytes(_ name: String, dtype: DType, shape: [Int]? = nil) throws -> UnsafeRawBufferPointer {
        guard let info = tensors[name] else {
            throw BertError.invalidWeights(path: path, reason: "missing tensor '\(name)'")
        }
        guard info.dtype == dtype else {
            throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' is \(info.dtype.rawValue), expected \(dtype.rawValue)")
        }
        if let shape, shape != info.shape {
            throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' has shape \(info.shape), expected \(shape) from config.json")
        }
        return UnsafeRawBufferPointer(start: mapping + dataStart + info.range.lowerBound, count: info.range.count)
    }

    /// A float32 tensor as a pointer into the mapping (no copy).
    public func floats(_ name: String, shape: [Int]? = nil) throws -> UnsafeBufferPointer<Float> {
        let raw = try bytes(name, dtype: .f32, shape: shape)
        // safetensors does not promise alignment; every file we write is 64-byte aligned.
        guard Int(bitPattern: raw.baseAddress) % MemoryLayout<Float>.alignment == 0 else {
            throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' is not 4-byte aligned; re-convert the model with `bert convert`")
        }
        return raw.bindMemory(to: Float.self)
    }

    /// Any float tensor (F32, F16, BF16) converted to a fresh float32 array; used by the converter.
    public func floatArray(_ name: String) throws -> [Float] {
        guard let info = tensors[name] else { throw BertError.invalidWeights(path: path, reason: "missing tensor '\(name)'") }
        let raw = try bytes(name, dtype: info.dtype)
        switch info.dtype {
        case .f32: return (0..<info.count).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
        case .f16: return (0..<info.count).map { Float(Float16(bitPattern: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) }
        case .bf16: return (0..<info.count).map { Float(bitPattern: UInt32(raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self)) << 16) }
        default: throw BertError.invalidWeights(path: path, reason: "tensor '\(name)' is \(info.dtype.rawValue), not a float type")
        }
    }
}

/// Writes a safetensors file with every tensor 64-byte aligned, so readers can map it without copying.
public struct SafeTensorsWriter {
    public struct Entry {
        public let name: String
        public let dtype: SafeTensorsFile.DType
        public let shape: [Int]
        public let data: Data
        public init(name: String, dtype: SafeTensorsFile.DType, shape: [Int], data: Data) {
            self.name = name; self.dtype = dtype; self.shape = shape; self.data = data
        }
        public init(name: String, shape: [Int], floats: [Float]) {
            self.init(name: name, dtype: .f32, shape: shape, data: floats.withUnsafeBytes { Data($0) })
        }
    }

    public static func write(_ entries: [Entry], metadata: [String: String] = [:], to path: String) throws {
        let alignment = 64
        var header: [String: Any] = ["__metadata__": metadata]
        var offset = 0
        var layout: [(Entry, Int)] = []
        for entry in entries.sorted(by: { $0.name < $1.name }) {
            offset = (offset + alignment - 1) / alignment * alignment
            header[entry.name] = ["dtype": entry.dtype.rawValue, "shape": entry.shape, "data_offsets": [offset, offset + entry.data.count]] as [String: Any]
            layout.append((entry, offset))
            offset += entry.data.count
        }
        var json = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        // Pad the header with spaces so the data section starts 64-byte aligned.
        let padded = (8 + json.count + alignment - 1) / alignment * alignment - 8
        json.append(contentsOf: [UInt8](repeating: 0x20, count: padded - json.count))
        var out = Data(capacity: 8 + json.count + offset)
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(json)
        let base = out.count
        for (entry, start) in layout {
            out.append(contentsOf: [UInt8](repeating: 0, count: base + start - out.count))
            out.append(entry.data)
        }
        do { try out.write(to: URL(fileURLWithPath: path), options: .atomic) }
        catch { throw BertError.outputFailed(path: path, reason: error.localizedDescription) }
    }
}
