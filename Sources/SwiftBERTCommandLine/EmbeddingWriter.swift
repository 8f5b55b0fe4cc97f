import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftBERT

/// How sentence vectors are written.
package enum EmbeddingFormat: String, CaseIterable, Sendable {
    /// One JSON object per line: {"index": i, "embedding": [...]}.
    case jsonl
    /// One JSON array of the same objects, written as it goes.
    case json
    /// NumPy .npy, an (N, D) little-endian float32 array (int8 or uint8 when quantised).
    case npy
    /// One vector per line, values separated by tabs (the TensorFlow projector's vectors.tsv).
    case tsv
}

/// Writes vectors as they come, in one of the `EmbeddingFormat`s, holding at most one sink
/// buffer in memory: floats, or quantised by `quantizer` (integers in the text formats, int8 or
/// uint8 npy). `finish()` completes the document (the closing bracket, the npy row count);
/// until it runs the output is incomplete.
package final class EmbeddingWriter {
    package let format: EmbeddingFormat
    package let sink: OutputSink
    /// Records in the output, those of a resumed run included.
    package private(set) var count = 0
    private var dimension: Int?
    private let quantizer: EmbeddingQuantizer?
    private var line: [UInt8] = []
    private var npy: NPYRows?

    /// `dimension` is checked against every vector; nil takes it from the first. A `quantizer`
    /// (not float32) fixes the dimension to its own.
    package init(format: EmbeddingFormat, sink: OutputSink, dimension: Int? = nil, quantizer: EmbeddingQuantizer? = nil) throws {
        (self.format, self.sink, self.quantizer) = (format, sink, quantizer?.type == .float32 ? nil : quantizer)
        self.dimension = self.quantizer?.dimension ?? dimension
        switch format {
        case .json: try sink.write("[")
        case .npy: npy = try NPYRows(sink: sink, type: self.quantizer?.type ?? .float32)
        case .jsonl, .tsv: break
        }
    }

    /// A writer that continues `sink` after `records` records already in it (see `resuming`).
    private init(format: EmbeddingFormat, continuing sink: OutputSink, records: Int, dimension: Int, quantizer: EmbeddingQuantizer?) {
        (self.format, self.sink, self.dimension, self.count, self.quantizer) = (format, sink, dimension, records, quantizer)
        if format == .npy { npy = NPYRows(continuing: sink, rows: records, type: quantizer?.type ?? .float32) }
    }

    /// Values per record as written: the dimension, or a quantised vector's width.
    private static func width(_ dimension: Int, _ quantizer: EmbeddingQuantizer?) -> Int {
        quantizer?.type.width(dimension: dimension) ?? dimension
    }

    /// Continues the output an interrupted run left at `path`: the complete records it holds are
    /// kept, anything after them (a half-written record from a hard kill, the closing bracket of
    /// json, the npy header's count) is cut or rewritten, and the writer appends from there.
    /// Returns the writer and the number of records kept, which is where the input resumes
    /// (`EmbeddingStream.resumeAfter`). A missing file is a fresh start (0 records).
    /// Throws `StreamError.mismatch` when the file is not this format or holds vectors of another
    /// dimension.
    package static func resuming(format: EmbeddingFormat, path: String, dimension: Int,
                                 quantizer given: EmbeddingQuantizer? = nil) throws -> (writer: EmbeddingWriter, records: Int) {
        let quantizer = given?.type == .float32 ? nil : given
        var info = stat()
        guard stat(path, &info) == 0 else {
            guard errno == ENOENT else { throw StreamError.cannotCreate(path: path, reason: errnoDescription(errno)) }
            return (try EmbeddingWriter(format: format, sink: OutputSink.open(path), dimension: dimension, quantizer: quantizer), 0)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw StreamError.cannotCreate(path: path, reason: "--resume needs a regular file to continue, and this is not one")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StreamError.unreadable(path: path, reason: errnoDescription(errno)) }
        defer { close(fd) }
        let (keep, records) = try ResumePoint.find(fd: fd, size: Int(info.st_size), format: format, width: width(dimension, quantizer),
                                                   type: quantizer?.type ?? .float32, path: path)
        // Nothing complete yet: start afresh, header included.
        if records == 0 { return (try EmbeddingWriter(format: format, sink: OutputSink.open(path), dimension: dimension, quantizer: quantizer), 0) }
        let sink = try OutputSink.reopen(path, keeping: Int64(keep))
        return (EmbeddingWriter(format: format, continuing: sink, records: records, dimension: dimension, quantizer: quantizer), records)
    }

    package func write(index: Int, vector: [Float]) throws {
        if let dimension, vector.count != dimension {
            throw SwiftBERTError.invalidInput(reason: "vector \(index) has \(vector.count) values, the others \(dimension)")
        }
        dimension = vector.count
        line.removeAll(keepingCapacity: true)
        // Quantised: integers in the text formats, the bytes themselves in npy.
        let integers = format == .npy ? nil : try quantizer?.values(vector)
        switch format {
        case .jsonl, .json:
            if format == .json { line += (count == 0 ? "\n" : ",\n").utf8 }
            line += #"{"index":"#.utf8
            line += String(index).utf8
            line += #","embedding":["#.utf8
            if let integers {
                for (i, value) in integers.enumerated() {
                    if i > 0 { line.append(UInt8(ascii: ",")) }
                    line += String(value).utf8
                }
            } else {
                for (i, value) in vector.enumerated() {
                    if i > 0 { line.append(UInt8(ascii: ",")) }
                    appendJSONNumber(value, to: &line)
                }
            }
            line += "]}".utf8
            if format == .jsonl { line.append(0x0A) }
            try sink.write(line)
        case .tsv:
            let values = integers.map { $0.map(String.init) } ?? vector.map(\.description)
            for (i, value) in values.enumerated() {
                if i > 0 { line.append(0x09) }
                line += value.utf8
            }
            line.append(0x0A)
            try sink.write(line)
        case .npy:
            if let quantizer { try npy!.append(bytes: quantizer.bytes(vector)) } else { try npy!.append(vector) }
        }
        count += 1
    }

    /// Completes the output and flushes it. Call once, after the last vector.
    package func finish() throws {
        switch format {
        case .json: try sink.write(count == 0 ? "]\n" : "\n]\n")
        case .npy: try npy!.finish(columns: Self.width(dimension ?? 0, quantizer))
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
    /// float32, or the quantised type whose bytes the rows hold.
    let type: EmbeddingType
    private var spill: OutputSink?
    private var spillFD: Int32 = -1
    private var rows = 0

    /// Rows appended to a file that already holds `rows` of them after a header (resuming).
    init(continuing sink: OutputSink, rows: Int, type: EmbeddingType) {
        (self.sink, self.rows, self.type) = (sink, rows, type)
    }

    init(sink: OutputSink, type: EmbeddingType) throws {
        (self.sink, self.type) = (sink, type)
        if sink.isRewindable {
            try sink.write(npyHeader(rows: 0, columns: 0, type: type))
        } else {
            let directory = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
            var template = Array("\(directory)/bert-npy-XXXXXX".utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else {
                throw SwiftBERTError.outputFailed(path: sink.name, reason: "npy to a pipe needs a temporary file in \(directory): \(errnoDescription(errno)); write to a file with --output instead")
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

    func append(bytes: [UInt8]) throws {
        try (spill ?? sink).write(bytes)
        rows += 1
    }

    func finish(columns: Int) throws {
        let header = npyHeader(rows: rows, columns: columns, type: type)
        guard let spill else { return try sink.overwrite(at: 0, with: header) }
        try spill.flush()
        try sink.write(header)
        lseek(spillFD, 0, SEEK_SET)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(spillFD, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw SwiftBERTError.outputFailed(path: spill.name, reason: errnoDescription(errno)) }
            if n == 0 { break }
            try chunk.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        try spill.close()
        self.spill = nil
    }
}

/// Where an interrupted output's complete records end, found in one pass over the file.
enum ResumePoint {
    /// (bytes to keep, records they hold).
    /// `width`: the values of a record (the dimension, or a quantised vector's); `type`: what npy holds.
    static func find(fd: Int32, size: Int, format: EmbeddingFormat, width dimension: Int, type: EmbeddingType, path: String) throws -> (Int, Int) {
        func notOurs(_ reason: String) -> Error {
            StreamError.mismatch(reason: "\(path) is not a \(format.rawValue) output of bert embed (\(reason)); resume with the same --format, or give another --output to start afresh")
        }
        func otherDimension(_ found: Int) -> Error {
            StreamError.mismatch(reason: type == .float32
                ? "\(path) holds \(found)-dimensional vectors but the model gives \(dimension); resume with the same model, or give another --output to start afresh"
                : "\(path) holds vectors of \(found) values but this run writes \(dimension) (\(type.rawValue)); resume with the same model and --embedding-type, or give another --output to start afresh")
        }
        if format == .npy {
            // Shorter than a header: a run stopped while writing it starts afresh, but a file
            // that does not begin as one is someone else's, not to be overwritten.
            let npyMagic: [UInt8] = [0x93] + Array("NUMPY".utf8)
            guard size >= npyHeaderSize else {
                var start = [UInt8](repeating: 0, count: min(size, npyMagic.count))
                guard pread(fd, &start, start.count, 0) == start.count else { throw StreamError.unreadable(path: path, reason: errnoDescription(errno)) }
                guard npyMagic.starts(with: start) else { throw notOurs("it does not start as an npy file") }
                return (0, 0)
            }
            var header = [UInt8](repeating: 0, count: npyHeaderSize)
            guard pread(fd, &header, npyHeaderSize, 0) == npyHeaderSize else { throw StreamError.unreadable(path: path, reason: errnoDescription(errno)) }
            let text = String(decoding: header[10...], as: UTF8.self)
            guard Array(header[0..<6]) == npyMagic, header[8] == UInt8(npyHeaderSize - 10),
                  text.contains("'descr': '\(npyDescriptor(type))'"), let shape = text.range(of: "'shape': ("),
                  let close = text[shape.upperBound...].firstIndex(of: ")") else {
                throw notOurs("no 128-byte \(type == .float32 ? "float32" : type.isSigned ? "int8" : "uint8") npy header: resume with the same --embedding-type")
            }
            let dims = text[shape.upperBound..<close].split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard dims.count == 2, let columns = dims[1] else { throw notOurs("the shape is not 2-D") }
            // A run that never finished left (0, 0); a finished or interrupted one, its dimension.
            guard columns == 0 || columns == dimension else { throw otherDimension(columns) }
            let rowBytes = (type == .float32 ? 4 : 1) * dimension
            let rows = (size - npyHeaderSize) / rowBytes
            return (npyHeaderSize + rows * rowBytes, rows)
        }
        // Text formats: one pass, counting complete records and their separators.
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0, records = 0, keep = 0
        var previous: UInt8 = 0x0A
        var separators = 0, lastSeparators = -1
        let recordStart: UInt8 = format == .tsv ? 0 : UInt8(ascii: "{")
        while offset < size {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(offset)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw StreamError.unreadable(path: path, reason: n < 0 ? errnoDescription(errno) : "the file shrank while it was read") }
            for i in 0..<n {
                let byte = buffer[i]
                switch format {
                case .jsonl, .tsv:
                    if previous == 0x0A, format == .jsonl, byte != recordStart {
                        throw notOurs("line \(records + 1) does not start with '{'")
                    }
                    if byte == UInt8(ascii: ","), format == .jsonl { separators += 1 }
                    if byte == 0x09, format == .tsv { separators += 1 }
                    if byte == 0x0A {
                        records += 1
                        keep = offset + i + 1
                        lastSeparators = separators
                        separators = 0
                    }
                case .json:
                    if offset + i == 0, byte != UInt8(ascii: "[") { throw notOurs("it does not start with '['") }
                    if byte == recordStart { separators = 0 }
                    if byte == UInt8(ascii: ",") { separators += 1 }
                    if byte == UInt8(ascii: "}"), previous == UInt8(ascii: "]") {
                        records += 1
                        keep = offset + i + 1
                        lastSeparators = separators
                    }
                case .npy:
                    break
                }
                previous = byte
            }
            offset += n
        }
        // {"index":i,"embedding":[v1,...,vD]} holds D commas; a tsv row D - 1 tabs.
        if lastSeparators >= 0 {
            let found = format == .tsv ? lastSeparators + 1 : lastSeparators
            guard found == dimension else { throw otherDimension(found) }
        }
        return (keep, records)
    }
}

/// Size of the .npy header we write: fixed, so it can be rewritten in place with any row count.
let npyHeaderSize = 128

/// numpy's name for the element type: little-endian float32, or a signed or unsigned byte.
func npyDescriptor(_ type: EmbeddingType) -> String {
    type == .float32 ? "<f4" : type.isSigned ? "|i1" : "|u1"
}

/// An .npy version 1.0 header for an (rows, columns) C-order float32 array (or int8, uint8),
/// padded to 128 bytes.
func npyHeader(rows: Int, columns: Int, type: EmbeddingType = .float32) -> [UInt8] {
    var dict = Array("{'descr': '\(npyDescriptor(type))', 'fortran_order': False, 'shape': (\(rows), \(columns)), }".utf8)
    let length = npyHeaderSize - 10
    dict += [UInt8](repeating: 0x20, count: length - dict.count - 1) + [0x0A]
    return [0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(length & 0xFF), UInt8(length >> 8)] + dict
}

/// Reads an (N, D) float32 .npy file row by row (the kind `EmbeddingWriter` writes, or numpy.save).
package final class NPYReader {
    package let path: String
    package let rows: Int
    package let columns: Int
    private let fd: Int32
    private var rowsRead = 0
    private var buffer: [Float]

    package init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw SwiftBERTError.fileNotFound(path: path, hint: "Write it with `bert embed --format npy --output \(path)`.") }
            throw StreamError.unreadable(path: path, reason: errnoDescription(errno))
        }
        func bad(_ reason: String) -> Error {
            SwiftBERTError.invalidInput(reason: "\(path) is not a float32 (N, D) .npy file: \(reason)")
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
    package func next() throws -> [Float]? {
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
        guard ok else { throw SwiftBERTError.invalidInput(reason: "\(path) ends after \(rowsRead) of its \(rows) rows") }
        rowsRead += 1
        return buffer
    }

    /// All remaining rows.
    package func readAll() throws -> [[Float]] {
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
