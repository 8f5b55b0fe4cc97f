import Foundation

/// Why `readBoundedFile` gave no data. Each caller words it for its own kind of file
/// (a config, a tokenizer), so the reasons here are plain facts.
enum BoundedFileError: Error, Equatable {
    /// Nothing at the path (ENOENT, ENOTDIR).
    case missing
    /// stat(2) failed for another reason (strerror's text).
    case inaccessible(reason: String)
    /// A folder, a device or a pipe.
    case notRegularFile
    /// Larger than the limit; `bytes` is the file's size.
    case tooLarge(bytes: Int)
    /// The read itself failed (one line).
    case unreadable(reason: String)
}

/// A small file read whole, refusing one larger than `limit` bytes (a config that is really a
/// weights file, or a device) before reading it. Throws BoundedFileError.
func readBoundedFile(_ url: URL, limit: Int) throws -> Data {
    var info = stat()
    guard stat(url.path, &info) == 0 else {
        if errno == ENOENT || errno == ENOTDIR { throw BoundedFileError.missing }
        throw BoundedFileError.inaccessible(reason: String(cString: strerror(errno)))
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else { throw BoundedFileError.notRegularFile }
    guard Int(info.st_size) <= limit else { throw BoundedFileError.tooLarge(bytes: Int(info.st_size)) }
    do { return try Data(contentsOf: url) }
    catch { throw BoundedFileError.unreadable(reason: singleLine(error.localizedDescription)) }
}

/// The same for a checkpoint's small JSON file (config.json, sentence-transformers' files):
/// SwiftBERTError.invalidConfig when it cannot be used, CocoaError.fileReadNoSuchFile when absent.
func readBoundedFile(_ url: URL, limit: Int, what: String) throws -> Data {
    do { return try readBoundedFile(url, limit: limit) }
    catch let failure as BoundedFileError {
        let reason: String
        switch failure {
        case .missing: throw CocoaError(.fileReadNoSuchFile)
        case let .inaccessible(why), let .unreadable(why): reason = "cannot be read (\(why)); check its permissions"
        case .notRegularFile: reason = "not a regular file; \(what) must be a JSON file"
        case let .tooLarge(bytes): reason = "\(bytes) bytes is far too large for \(what) (at most \(limit >> 20) MiB); give the model's own \(what)"
        }
        throw SwiftBERTError.invalidConfig(path: url.path, reason: reason)
    }
}
