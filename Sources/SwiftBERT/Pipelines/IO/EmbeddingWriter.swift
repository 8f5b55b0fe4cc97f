import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How sentence vectors are written.
public enum EmbeddingFormat: String, CaseIterable, Sendable {
    /// One JSON object per line: {"index": i, "embedding": [...]}.
    case jsonl
    /// One JSON array of the same objects, written as it goes.
    case json
    /// NumPy .npy, an (N, D) little-endian float32 array.
    case npy
    /// One vector per line, values separated by tabs (the TensorFlow projector's vectors.tsv).
    case tsv
}

/// Writes vectors as they come, in one of the `EmbeddingFormat`s, holding at most one sink
/// buffer in memory. `finish()` completes the document (the closing bracket, the npy row count);
/// until it runs the output is incomplete.
public final class EmbeddingWriter {
    public let format: EmbeddingFormat
    public let sink: OutputSink
    public private(set) var count = 0
    private var dimension: Int?
    private var line: [UInt8] = []
    private var npy: NPYRows?

    /// `dimension` is checked against every vector; nil takes it from the first.
    public init(format: EmbeddingFormat, sink: OutputSink, dimension: Int? = nil) throws {
        (self.format, self.sink, self.dimension) = (format, sink, dimension)
        switch format {
        case .json: try sink.write("[")
        case .npy: npy = try NPYRows(sink: sink)
        case .jsonl, .tsv: break
        }
    }

    public func write(index: Int, vector: [Float]) throws {
        if let dimension, vector.count != dimension {
            throw BertError.invalidInput(reason: "vector \(index) has \(vector.count) values, the others \(dimension)")
        }
        dimension = vector.count
        line.removeAll(keepingCapacity: true)
        switch format {
        case .jsonl, .json:
            if format == .json { line += (count == 0 ? "\n" : ",\n").utf8 }
            line += #"{"index":"#.utf8
            line += String(index).utf8
            line += #","embedding":["#.utf8
            for (i, value) in vector.enumerated() {
                if i > 0 { line.append(UInt8(ascii: ",")) }
                appendJSONNumber(value, to: &line)
            }
            line += "]}".utf8
            if format == .jsonl { line.append(0x0A) }
            try sink.write(line)
        case .tsv:
            for (i, value) in vector.enumerated() {
                if i > 0 { line.append(0x09) }
                line += value.description.utf8
            }
            line.append(0x0A)
            try sink.write(line)
        case .npy:
            try npy!.append(vector)
        }
        count += 1
    }

    /// Completes the output and flushes it. Call once, after the last vector.
    public func finish() throws {
        switch format {
        case .json: try sink.write(count == 0 ? "]\n" : "\n]\n")
        case .npy: try npy!.finish(dimension: dimension ?? 0)
        case .jsonl, .tsv: break
        }
        try sink.flush()
    }
}

/// The rows of an .npy file whose count is known only at the end. A rewindable file gets a
/// fixed-size header first and has it rewritten with the final shape; a pipe cannot be rewound,
/// so rows go to an unlinked temporary file and are copied out behind the header at the end
/// (memory stays bounded either way).
final class NPYRows {
    let sink: OutputSink
    private var spill: OutputSink?
    private var spillFD: Int32 = -1
    private var rows = 0

    init(sink: OutputSink) throws {
        self.sink = sink
        if sink.isRewindable {
            try sink.write(npyHeader(rows: 0, columns: 0))
        } else {
            let directory = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
            var template = Array("\(directory)/bert-npy-XXXXXX".utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else {
                throw BertError.outputFailed(path: sink.name, reason: "npy to a pipe needs a temporary file in \(directory): \(errnoDescription(errno)); write to a file with --output instead")
            }
            unlink(String(cString: template))
            spillFD = fd
            spill = OutputSink(fd: fd, name: "temporary file in \(directory)", owns: true)
        }
    }

    func append(_ vector: [Float]) throws {
        try vector.withUnsafeBytes { try (spill ?? sink).write($0) }
        rows += 1
    }

    func finish(dimension: Int) throws {
        let header = npyHeader(rows: rows, columns: dimension)
        guard let spill else { return try sink.overwrite(at: 0, with: header) }
        try spill.flush()
        try sink.write(header)
        lseek(spillFD, 0, SEEK_SET)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(spillFD, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw BertError.outputFailed(path: spill.name, reason: errnoDescription(errno)) }
            if n == 0 { break }
            try chunk.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        try spill.close()
        self.spill = nil
    }
}

/// Size of the .npy header we write: fixed, so it can be rewritten in place with any row count.
let npyHeaderSize = 128

/// An .npy version 1.0 header for an (rows, columns) C-order float32 array, padded to 128 bytes.
func npyHeader(rows: Int, columns: Int) -> [UInt8] {
    var dict = Array("{'descr': '<f4', 'fortran_order': False, 'shape': (\(rows), \(columns)), }".utf8)
    let length = npyHeaderSize - 10
    dict += [UInt8](repeating: 0x20, count: length - dict.count - 1) + [0x0A]
    return [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(length & 0xFF), UInt8(length >> 8)] + dict
}

/// Reads an (N, D) float32 .npy file row by row (the kind `EmbeddingWriter` writes, or numpy.save).
public final class NPYReader {
    public let path: String
    public let rows: Int
    public let columns: Int
    private let fd: Int32
    private var rowsRead = 0
    private var buffer: [Float]

    public init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw BertError.fileNotFound(path: path, hint: "Write it with `bert embed --format npy --output \(path)`.") }
            throw StreamError.unreadable(path: path, reason: errnoDescription(errno))
        }
        func bad(_ reason: String) -> Error {
            BertError.invalidInput(reason: "\(path) is not a float32 (N, D) .npy file: \(reason)")
        }
        var prefix = [UInt8](repeating: 0, count: 12)
        guard readFully(fd, &prefix, count: 12), prefix[0] == 0x93, Array(prefix[1..<6]) == Array("NUMPY".utf8) else {
            close(fd); throw bad("no NUMPY magic")
        }
        let major = prefix[6]
        let headerLength: Int, consumed: Int
        switch major {
        case 1: (headerLength, consumed) = (Int(prefix[8]) | Int(prefix[9]) << 8, 10)
        case 2, 3: (headerLength, consumed) = (Int(prefix[8]) | Int(prefix[9]) << 8 | Int(prefix[10]) << 16 | Int(prefix[11]) << 24, 12)
        default: close(fd); throw bad("format version \(major) is not supported")
        }
        var header = [UInt8](repeating: 0, count: headerLength)
        lseek(fd, off_t(consumed), SEEK_SET)
        guard headerLength < 1 << 20, readFully(fd, &header, count: headerLength) else { close(fd); throw bad("truncated header") }
        let dict = String(decoding: header, as: UTF8.self)
        guard dict.contains("'descr': '<f4'") || dict.contains("'descr':'<f4'") else { close(fd); throw bad("dtype is not little-endian float32") }
        guard !dict.contains("'fortran_order': True") else { close(fd); throw bad("Fortran order") }
        guard let shapeStart = dict.range(of: "'shape': ("), let shapeEnd = dict[shapeStart.upperBound...].firstIndex(of: ")") else {
            close(fd); throw bad("no shape")
        }
        let dims = dict[shapeStart.upperBound..<shapeEnd].split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard dims.count == 2 else { close(fd); throw bad("shape is not 2-D") }
        (rows, columns) = (dims[0], dims[1])
        buffer = [Float](repeating: 0, count: columns)
    }

    deinit { close(fd) }

    /// The next row, or nil after the last.
    public func next() throws -> [Float]? {
        guard rowsRead < rows else { return nil }
        let ok = buffer.withUnsafeMutableBytes { raw -> Bool in
            var done = 0
            while done < raw.count {
                let n = read(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                done += n
            }
            return true
        }
        guard ok else { throw BertError.invalidInput(reason: "\(path) ends after \(rowsRead) of its \(rows) rows") }
        rowsRead += 1
        return buffer
    }

    /// All remaining rows.
    public func readAll() throws -> [[Float]] {
        var all: [[Float]] = []
        while let row = try next() { all.append(row) }
        return all
    }
}

private func readFully(_ fd: Int32, _ bytes: inout [UInt8], count: Int) -> Bool {
    bytes.withUnsafeMutableBytes { raw in
        var done = 0
        while done < count {
            let n = read(fd, raw.baseAddress! + done, count - done)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }
}
