#if Server  // the package trait (Package.swift); without it this target is empty
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The reverse proxies whose `X-Forwarded-For` the server believes (`--trusted-proxies`): who a
/// request's client is, for its turn on the lanes (`FairLanes`). Behind nginx or a load balancer
/// every connection comes from the proxy, and its clients would share one turn.
///
/// The rule is nginx's real_ip module with `real_ip_recursive on`: only when the peer is trusted
/// is the header read, from the right (each proxy appends the address it received from), past
/// the addresses that are themselves trusted; the first untrusted one is the client. The entries
/// left of it are whatever that client sent, so they are never read: an untrusted peer cannot
/// take a fresh turn by writing the header, and a client behind the proxy cannot either. An
/// entry that is not an address stops the walk at the last address reached (the peer, when the
/// rightmost entry is already bad); an absent or empty header leaves the peer.
public struct TrustedProxies: Sendable, Equatable {
    let blocks: [Block]

    /// Trusts no one: the client is the peer's address, and the header is never read.
    public static let none = TrustedProxies(blocks: [])

    init(blocks: [Block]) { self.blocks = blocks }

    /// Parses `list`: IPv4 or IPv6 addresses and CIDR blocks, comma-separated
    /// (`127.0.0.1,10.0.0.0/8,::1`). Spaces around entries and empty entries are ignored; any
    /// other entry that is not an address or a block throws, naming it.
    public init(_ list: String) throws(TrustedProxiesError) {
        var blocks: [Block] = []
        for raw in list.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = raw.trimmingSpaces
            if entry.isEmpty { continue }
            blocks.append(try Block(entry))
        }
        self.blocks = blocks
    }

    public var isEmpty: Bool { blocks.isEmpty }

    func trusts(_ address: IPAddress) -> Bool { blocks.contains { $0.contains(address) } }

    /// Who sent a request: the peer's address, or, when the peer is trusted, the rightmost
    /// untrusted address of `forwardedFor` (the `X-Forwarded-For` lines in the order received,
    /// read as one comma-separated list). Addresses come back in one spelling (`1.2.3.4` for
    /// `1.2.3.4:5678` and `::ffff:1.2.3.4` too), so that one client is one turn.
    public func client(peer: String, forwardedFor lines: [String]) -> String {
        guard !blocks.isEmpty else { return peer }
        return clientAddress(peer: peer, forwardedFor: lines)?.description ?? peer
    }

    /// Whose turn on the lanes a request takes (`FairLanes`): its client's address, an IPv6
    /// client by its /64. A host is handed a whole /64, and would otherwise take a fresh turn
    /// with each address it picks inside it.
    public func turn(peer: String, forwardedFor lines: [String]) -> String {
        guard let address = clientAddress(peer: peer, forwardedFor: lines) else { return peer }
        return address.isIPv4 ? address.description : IPAddress(high: address.high, low: 0).description + "/64"
    }

    /// The client's address (`client`); nil when the peer is not an IP address (a Unix socket):
    /// nothing to trust.
    private func clientAddress(peer: String, forwardedFor lines: [String]) -> IPAddress? {
        guard let peerAddress = IPAddress(peer) else { return nil }
        var client = peerAddress
        walk: for line in lines.reversed() {
            for entry in line.split(separator: ",", omittingEmptySubsequences: false).reversed() {
                guard trusts(client) else { break walk }
                let hop = entry.trimmingSpaces
                if hop.isEmpty { continue }
                guard let address = IPAddress(hop: hop) else { break walk }
                client = address
            }
        }
        return client
    }
}

/// A `--trusted-proxies` entry that is neither an address nor a CIDR block.
public struct TrustedProxiesError: Error, Equatable, CustomStringConvertible {
    /// The entry as given.
    public let entry: String
    /// What is wrong with it.
    public let problem: String

    public var description: String {
        "--trusted-proxies: `\(entry)` \(problem); give IPv4 or IPv6 addresses or CIDR blocks, comma-separated, such as 127.0.0.1,10.0.0.0/8,::1"
    }
}

/// An IPv4 or IPv6 address as 128 bits; IPv4 in its IPv4-mapped form (::ffff:a.b.c.d), so that
/// one comparison serves both and a mapped peer (a dual-stack socket's) matches IPv4 blocks.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) { self.high = high; self.low = low }

    /// `text` as inet_pton reads it: a dotted quad, or IPv6 (with an IPv4 tail or not); no
    /// port, brackets or zone.
    init?<Text: StringProtocol>(_ text: Text) {
        // The longest IPv6 spelling is 45 characters; anything else cannot be an address, and a
        // NUL would end the C string early.
        guard !text.isEmpty, text.utf8.count <= 45,
              text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") || isHexDigit($0) }) else { return nil }
        if text.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(text), &address) == 1 else { return nil }
            let bytes = withUnsafeBytes(of: address) { Array($0) }
            high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        } else {
            var address = in_addr()
            guard inet_pton(AF_INET, String(text), &address) == 1 else { return nil }
            high = 0
            low = 0xffff_0000_0000 | UInt64(UInt32(bigEndian: address.s_addr))
        }
    }

    /// An entry of X-Forwarded-For: an address, or one with a port as some proxies write it
    /// (`1.2.3.4:5678`, `[2001:db8::1]:443`, `[2001:db8::1]`).
    init?(hop: Substring) {
        if hop.hasPrefix("[") {
            guard let close = hop.firstIndex(of: "]") else { return nil }
            let rest = hop[hop.index(after: close)...]
            guard rest.isEmpty || Self.isPort(rest) else { return nil }
            self.init(hop[hop.index(after: hop.startIndex)..<close])
        } else if let colon = hop.firstIndex(of: ":"), hop[hop.index(after: colon)...].firstIndex(of: ":") == nil {
            guard Self.isPort(hop[colon...]) else { return nil }  // IPv4 and a port: one colon
            self.init(hop[..<colon])
        } else {
            self.init(hop)
        }
    }

    /// `:` and 1 to 5 digits.
    private static func isPort(_ text: Substring) -> Bool {
        text.first == ":" && (2...6).contains(text.count) && text.dropFirst().allSatisfy(\.isASCIIDigit)
    }

    var isIPv4: Bool { high == 0 && low >> 32 == 0xffff }

    var description: String {
        if isIPv4 { return "\(low >> 24 & 0xff).\(low >> 16 & 0xff).\(low >> 8 & 0xff).\(low & 0xff)" }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { bytes in
            for i in 0..<8 {
                bytes[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * i))
                bytes[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * i))
            }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return "" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address and the length of its prefix, in the 128-bit space of `IPAddress` (an IPv4 /8 is
/// a /104 there).
struct Block: Sendable, Equatable {
    let network: IPAddress
    let length: Int

    init(_ entry: Substring) throws(TrustedProxiesError) {
        let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else {
            throw TrustedProxiesError(entry: String(entry), problem: "is not an IPv4 or IPv6 address\(parts.count == 2 ? " before its /" : "") (host names are not resolved)")
        }
        var length = 128
        if parts.count == 2 {
            let widest = address.isIPv4 && !parts[0].contains(":") ? 32 : 128
            guard !parts[1].isEmpty, parts[1].count <= 3, parts[1].allSatisfy(\.isASCIIDigit), let given = Int(parts[1]), given <= widest else {
                throw TrustedProxiesError(entry: String(entry), problem: "has a prefix length that is not a whole number from 0 to \(widest)")
            }
            length = widest == 32 ? 96 + given : given
        }
        // Host bits past the prefix are dropped, as nginx does: 10.1.2.3/8 is 10.0.0.0/8.
        let mask = Self.mask(length)
        network = IPAddress(high: address.high & mask.high, low: address.low & mask.low)
        self.length = length
    }

    static func mask(_ length: Int) -> (high: UInt64, low: UInt64) {
        (high: length >= 64 ? .max : length == 0 ? 0 : UInt64.max << (64 - length),
         low: length >= 128 ? .max : length <= 64 ? 0 : UInt64.max << (128 - length))
    }

    func contains(_ address: IPAddress) -> Bool {
        // A block wider than the IPv4-mapped range (::/0, ::/64) speaks of IPv6: as in nginx, it
        // does not trust every IPv4 address too.
        if address.isIPv4 && length < 96 { return false }
        let mask = Self.mask(length)
        return address.high & mask.high == network.high && address.low & mask.low == network.low
    }
}

private func isHexDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isWholeNumber }
}

private extension StringProtocol {
    /// Without the spaces and tabs around it (HTTP's optional whitespace).
    var trimmingSpaces: SubSequence {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map { index(after: $0) } ?? start
        return self[start..<Swift.max(start, end)]
    }
}
#endif
