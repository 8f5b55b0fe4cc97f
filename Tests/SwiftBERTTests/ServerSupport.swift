import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking HTTP/1.1 client over a loopback socket: one request per connection
/// (Connection: close), so tests control bytes, headers and concurrency exactly.
struct HTTPReply {
    let status: Int
    let headers: [String: String]
    let body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    func json() throws -> Any { try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }
}

enum HTTPClientError: Error, CustomStringConvertible {
    case connect(Int32), send(Int32), malformed(String)
    var description: String {
        switch self {
        case let .connect(e): return "connect failed: \(String(cString: strerror(e)))"
        case let .send(e): return "send failed: \(String(cString: strerror(e)))"
        case let .malformed(s): return "malformed reply: \(s)"
        }
    }
}

/// A TCP socket connected to 127.0.0.1:`port`, whose reads give up after `timeout` seconds; the
/// caller closes it. `source`, another loopback address (127.0.0.2, …), makes it another client
/// to the server.
func connectLoopback(port: Int, timeout: Double, from source: String? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HTTPClientError.connect(errno) }
    var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { let failure = errno; close(fd); throw HTTPClientError.connect(failure) }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { let failure = errno; close(fd); throw HTTPClientError.connect(failure) }
    return fd
}

func httpRequest(port: Int, method: String, path: String, body: Data? = nil, headers: [String: String] = [:],
                 timeout: Double = 120, from source: String? = nil) throws -> HTTPReply {
    let fd = try connectLoopback(port: port, timeout: timeout, from: source)
    defer { close(fd) }

    var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    var allHeaders = headers
    if let body { allHeaders["Content-Length"] = allHeaders["Content-Length"] ?? String(body.count) }
    if body != nil, allHeaders["Content-Type"] == nil { allHeaders["Content-Type"] = "application/json" }
    for (name, value) in allHeaders.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
    head += "\r\n"
    var outgoing = Data(head.utf8)
    if let body { outgoing.append(body) }
    var sendFailure: Int32?
    outgoing.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            if n <= 0 { sendFailure = errno; return }
            offset += n
        }
    }
    // A server may answer (413) and close before the whole body is sent: read the reply anyway.
    var incoming = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        incoming.append(buffer, count: n)
    }
    guard let split = incoming.range(of: Data("\r\n\r\n".utf8)) else {
        if let sendFailure { throw HTTPClientError.send(sendFailure) }
        throw HTTPClientError.malformed("no header end in \(incoming.count) bytes")
    }
    let lines = String(decoding: incoming[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
    let statusParts = lines[0].split(separator: " ")
    guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw HTTPClientError.malformed(lines[0]) }
    var replyHeaders: [String: String] = [:]
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        replyHeaders[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    var body = Data(incoming[split.upperBound...])
    if replyHeaders["transfer-encoding"]?.lowercased() == "chunked" { body = try dechunk(body) }
    return HTTPReply(status: status, headers: replyHeaders, body: body)
}

private func dechunk(_ data: Data) throws -> Data {
    var out = Data()
    var rest = data[...]
    while let lineEnd = rest.range(of: Data("\r\n".utf8)) {
        let sizeText = String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";")[0]
        guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw HTTPClientError.malformed("chunk size") }
        if size == 0 { break }
        let start = lineEnd.upperBound
        out.append(rest[start..<start + size])
        rest = rest[(start + size + 2)...]
    }
    return out
}

func jsonBody(_ object: Any) -> Data {
    try! JSONSerialization.data(withJSONObject: object)
}

/// A running `bert serve` on a free loopback port, stopped (SIGKILL) at deinit unless already ended.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    private(set) var port = 0
    private let errorPipe = Pipe()
    private let lock = NSLock()
    private var errorText = ""

    var standardError: String { lock.lock(); defer { lock.unlock() }; return errorText }

    init(bert: String, arguments: [String], environment: [String: String] = [:], waitForHealth: Bool = true) throws {
        process.executableURL = URL(fileURLWithPath: bert)
        process.arguments = ["serve", "--port", "0"] + arguments
        var env = ProcessInfo.processInfo.environment
        env["SWIFTBERT_HOME"] = repositoryRoot.path
        env.removeValue(forKey: "SWIFTBERT_API_KEY")
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errorPipe
        process.standardInput = FileHandle.nullDevice
        errorPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock(); self.errorText += String(decoding: data, as: UTF8.self); self.lock.unlock()
        }
        try process.run()
        let deadline = Date().addingTimeInterval(120)
        while port == 0 {
            if let range = standardError.range(of: #"listening on http://[^:]+:(\d+)"#, options: .regularExpression) {
                port = Int(standardError[range].split(separator: ":").last!)!
                break
            }
            guard process.isRunning, Date() < deadline else {
                throw HTTPClientError.malformed("bert serve did not start listening: \(standardError)")
            }
            usleep(20_000)
        }
        if waitForHealth { try waitUntilHealthy(deadline: deadline) }
    }

    func waitUntilHealthy(deadline: Date = Date().addingTimeInterval(120)) throws {
        while Date() < deadline {
            if let reply = try? httpRequest(port: port, method: "GET", path: "/health"), reply.status == 200 { return }
            guard process.isRunning else { break }
            usleep(50_000)
        }
        throw HTTPClientError.malformed("bert serve never became healthy: \(standardError)")
    }

    func post(_ path: String, _ object: Any, headers: [String: String] = [:]) throws -> HTTPReply {
        try httpRequest(port: port, method: "POST", path: path, body: jsonBody(object), headers: headers)
    }

    func get(_ path: String, headers: [String: String] = [:]) throws -> HTTPReply {
        try httpRequest(port: port, method: "GET", path: path, headers: headers)
    }

    /// SIGTERM, then the exit status (nil if it did not exit within `timeout` seconds).
    func terminate(timeout: Double = 60) -> Int32? {
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        errorPipe.fileHandleForReading.readabilityHandler = nil
    }
}

/// Runs `count` copies of `body` on their own threads at once; returns their results in order.
func concurrently<T>(_ count: Int, _ body: @escaping (Int) -> T) -> [T] {
    // Each thread writes its own slot, under the lock.
    nonisolated(unsafe) var results = [T?](repeating: nil, count: count)
    nonisolated(unsafe) let body = body
    let lock = NSLock()
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            let value = body(i)
            lock.lock(); results[i] = value; lock.unlock()
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
    return results.map { $0! }
}
