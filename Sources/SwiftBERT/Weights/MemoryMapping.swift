import Foundation

/// Read-only memory mappings of weights files, shared by the safetensors and the torch readers:
/// the file is mapped whole and tensors are handed out as pointers into it, never copied.
enum MemoryMapping {
    /// Maps a regular file of at least `minimumSize` bytes read-only. `tooShort` makes the error for
    /// a smaller file; `what` says in messages what the caller expected (e.g. "the model.safetensors
    /// file of a converted model").
    static func mapFile(path: String, minimumSize: Int, what: String,
                        tooShort: (Int) -> SwiftBERTError) throws -> (pointer: UnsafeMutableRawPointer, size: Int) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT {
                throw SwiftBERTError.fileNotFound(path: path, hint: "Convert a checkpoint with `bert convert` or run the set-up command.")
            }
            throw SwiftBERTError.invalidWeights(path: path, reason: "cannot be opened (\(String(cString: strerror(code)))); check its permissions")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SwiftBERTError.invalidWeights(path: path, reason: "cannot stat the file; check that it is readable") }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "not a regular file; give \(what)")
        }
        let size = Int(st.st_size)
        // Checked before mapping: mmap of an empty file fails.
        guard size >= max(minimumSize, 1) else { throw tooShort(size) }
        guard let map = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "mmap failed (\(String(cString: strerror(errno)))); check free memory and ulimit -v")
        }
        return (map, size)
    }

    /// Copies an in-memory image (tests and fuzzing) into a private anonymous mapping, so that it
    /// is parsed and released by the same code as a mapped file.
    static func mapCopy(of image: UnsafeRawBufferPointer, path: String, minimumSize: Int,
                        tooShort: (Int) -> SwiftBERTError) throws -> (pointer: UnsafeMutableRawPointer, size: Int) {
        let size = image.count
        guard size >= max(minimumSize, 1), let source = image.baseAddress else { throw tooShort(size) }
        guard let map = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), map != MAP_FAILED else {
            throw SwiftBERTError.invalidWeights(path: path, reason: "mmap failed (\(String(cString: strerror(errno)))); check free memory")
        }
        map.copyMemory(from: source, byteCount: size)
        return (map, size)
    }
}

/// How a float tensor's elements are stored; `decodeFloats` widens them to float32.
enum StoredFloatKind: Sendable {
    case f32, f16, bf16, f64
    var byteSize: Int {
        switch self {
        case .f32: return 4
        case .f16, .bf16: return 2
        case .f64: return 8
        }
    }
}

/// `count` little-endian floats of `kind` at any alignment, as float32 (f64 rounded to nearest).
func decodeFloats(_ raw: UnsafeRawBufferPointer, count: Int, kind: StoredFloatKind) -> [Float] {
    switch kind {
    case .f32: return (0..<count).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) }
    case .f16: return (0..<count).map { Float(Float16(bitPattern: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) }
    case .bf16: return (0..<count).map { Float(bitPattern: UInt32(raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self)) << 16) }
    case .f64: return (0..<count).map { Float(raw.loadUnaligned(fromByteOffset: $0 * 8, as: Double.self)) }
    }
}
