import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftBERT

/// A buffered writer on a file descriptor that reports every failure as a typed error: a closed
/// pipe (EPIPE) as `StreamError.outputClosed`, anything else (disk full, I/O error) as
/// `SwiftBERTError.outputFailed`. Processes that write to pipes should ignore SIGPIPE
/// (`signal(SIGPIPE, SIG_IGN)`), otherwise the kernel kills them before EPIPE is seen.
package final class OutputSink {
    /// "stdout" or the file's path, for messages.
    package let name: String
    let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    private var isClosed = false
    private let capacity = 1 << 16
    /// Offset of the first byte this sink wrote, for `overwrite(at:)`.
    private let origin: Int64
    /// Bytes handed to `write` so far.
    package private(set) var bytesWritten: Int64 = 0

    /// Standard output.
    package static func standardOutput() -> OutputSink { OutputSink(fd: STDOUT_FILENO, name: "stdout", owns: false) }

    /// A file, created or truncated; "-" is standard output.
    package static func open(_ path: String) throws -> OutputSink {
        if path == "-" { return standardOutput() }
        let fd = posixOpen(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StreamError.cannotCreate(path: path, reason: errnoDescription(errno)) }
        return OutputSink(fd: fd, name: path, owns: true)
    }

    /// An existing regular file cut to its first `length` bytes and written on from there: the
    /// output of an interrupted run, continued. Its start stays rewritable (the npy header).
    static func reopen(_ path: String, keeping length: Int64) throws -> OutputSink {
        let fd = posixOpen(path, O_WRONLY | O_CLOEXEC, 0)
        guard fd >= 0 else { throw StreamError.cannotCreate(path: path, reason: errnoDescription(errno)) }
        guard ftruncate(fd, off_t(length)) == 0 else {
            let code = errno
            _ = posixClose(fd)
            throw SwiftBERTError.outputFailed(path: path, reason: "cannot cut it to its complete records: \(errnoDescription(code))")
        }
        let sink = OutputSink(fd: fd, name: path, owns: true)
        lseek(fd, off_t(length), SEEK_SET)
        sink.bytesWritten = length
        return sink
    }

    init(fd: Int32, name: String, owns: Bool) {
        (self.fd, self.name, self.ownsDescriptor) = (fd, name, owns)
        origin = Int64(lseek(fd, 0, SEEK_CUR))
        buffer.reserveCapacity(capacity)
    }

    deinit {
        try? flush()
        if ownsDescriptor, !isClosed { _ = posixClose(fd) }
    }

    /// True for a regular file not opened for appending: its start can be rewritten after the
    /// fact (the npy header's row count). Pipes, terminals and `>>` are not.
    package var isRewindable: Bool {
        guard origin >= 0, regularFileSize(fd) != nil else { return false }
        return fcntl(fd, F_GETFL) & O_APPEND == 0
    }

    package func write(_ string: String) throws {
        var string = string
        try string.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    package func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    package func write(_ bytes: UnsafeRawBufferPointer) throws {
        bytesWritten += Int64(bytes.count)
        if buffer.count + bytes.count > capacity { try flush() }
        if bytes.count >= capacity { return try writeFully(bytes) }
        buffer.append(contentsOf: bytes)
    }

    /// Hands buffered bytes to the kernel.
    package func flush() throws {
        guard !buffer.isEmpty else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        try buffer.withUnsafeBytes { try writeFully($0) }
    }

    /// Replaces bytes at `offset` from this sink's first byte, leaving the write position alone.
    package func overwrite(at offset: Int64, with bytes: [UInt8]) throws {
        guard isRewindable else {
            throw SwiftBERTError.outputFailed(path: name, reason: "cannot rewrite the start of a pipe or appended file")
        }
        try flush()
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(origin + offset)) }
        guard written == bytes.count else { throw failure(written < 0 ? errno : EIO) }
    }

    /// Flushes, and closes a file this sink opened; fsync is left to the caller.
    package func close() throws {
        guard !isClosed else { return }
        try flush()
        isClosed = true
        if ownsDescriptor, posixClose(fd) != 0 { throw failure(errno) }
    }

    private func writeFully(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = posixWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw failure(code)
            }
            done += n
        }
    }

    private func failure(_ code: Int32) -> Error {
        if code == EPIPE { return StreamError.outputClosed(path: name) }
        let hint = code == ENOSPC || code == EDQUOT ? "; free some space or write elsewhere" : ""
        return SwiftBERTError.outputFailed(path: name, reason: errnoDescription(code) + hint)
    }
}

/// Line-at-a-time messages on standard error, unbuffered, never failing (stderr is the last resort).
package func writeStandardError(_ message: String) {
    var message = message
    message.withUTF8 { bytes in
        var done = 0
        while done < bytes.count {
            let n = write(STDERR_FILENO, bytes.baseAddress! + done, bytes.count - done)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return }
            done += n
        }
    }
}

// The C calls under names that OutputSink's own `open`/`close`/`write` members do not shadow.
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func posixClose(_ fd: Int32) -> Int32 { close(fd) }
private func posixWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
