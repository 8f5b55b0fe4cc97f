import Foundation
import XCTest
#if Server
@testable import SwiftBERTServer
#endif

/// `--trusted-proxies`: which peers' X-Forwarded-For names the client whose turn a request takes
/// on the lanes (`FairLanes`), and which client it names (nginx's real_ip rule, recursive).
final class TrustedProxiesTests: XCTestCase {
    #if Server
    func proxies(_ list: String) throws -> TrustedProxies { try TrustedProxies(list) }

    /// Addresses and blocks of both families; a block's host bits are dropped; an IPv4 address
    /// and its IPv4-mapped IPv6 spelling are the same address.
    func testTheMatcherTakesAddressesAndBlocksOfBothFamilies() throws {
        let trusted = try proxies(" 127.0.0.1, 10.0.0.0/8 ,192.168.7.9/24,::1, fd00::/8,2001:db8::/127,,")
        XCTAssertEqual(trusted.blocks.count, 6)
        func trusts(_ address: String) throws -> Bool { trusted.trusts(try XCTUnwrap(IPAddress(address), address)) }
        for address in ["127.0.0.1", "10.0.0.0", "10.255.255.255", "10.1.2.3", "192.168.7.0", "192.168.7.255", "::1",
                        "fd00::1", "fdff:ffff::", "2001:db8::", "2001:db8::1", "::ffff:10.9.8.7", "::FFFF:127.0.0.1", "0:0:0:0:0:ffff:7f00:1"] {
            XCTAssertTrue(try trusts(address), address)
        }
        for address in ["127.0.0.2", "11.0.0.0", "9.255.255.255", "192.168.8.1", "::2", "fe00::1", "2001:db8::2",
                        "::ffff:11.0.0.1", "::10.0.0.1", "1.2.3.4"] {
            XCTAssertFalse(try trusts(address), address)
        }
        // /0 of each family: every address of that family, none of the other (as in nginx).
        let everyIPv4 = try proxies("0.0.0.0/0"), everyIPv6 = try proxies("::/0")
        XCTAssertTrue(everyIPv4.trusts(try XCTUnwrap(IPAddress("203.0.113.9"))))
        XCTAssertTrue(everyIPv4.trusts(try XCTUnwrap(IPAddress("::ffff:203.0.113.9"))))
        XCTAssertFalse(everyIPv4.trusts(try XCTUnwrap(IPAddress("2001:db8::9"))))
        XCTAssertTrue(everyIPv6.trusts(try XCTUnwrap(IPAddress("2001:db8::9"))))
        XCTAssertFalse(everyIPv6.trusts(try XCTUnwrap(IPAddress("203.0.113.9"))))
        // An IPv6 block around the mapped range trusts those IPv4 addresses.
        XCTAssertTrue(try proxies("::ffff:10.0.0.0/104").trusts(try XCTUnwrap(IPAddress("10.3.2.1"))))
        XCTAssertTrue(try proxies("").isEmpty)
        XCTAssertTrue(try proxies(" , ").isEmpty)
        // One spelling per address: the client's name in FairLanes.
        XCTAssertEqual(IPAddress("::ffff:1.2.3.4")?.description, "1.2.3.4")
        XCTAssertEqual(IPAddress("2001:DB8:0:0:0:0:0:1")?.description, "2001:db8::1")
        XCTAssertEqual(IPAddress("::1")?.description, "::1")
    }

    /// A bad entry throws an error naming it and the form expected: what `bert serve` prints
    /// before it exits 64.
    func testBadEntriesAreRefusedByName() {
        let cases: [(list: String, entry: String, says: String)] = [
            ("127.0.0.1,localhost", "localhost", "not an IPv4 or IPv6 address"),
            ("10.0.0.0/33", "10.0.0.0/33", "0 to 32"),
            ("::1/129", "::1/129", "0 to 128"),
            ("10.0.0.0/", "10.0.0.0/", "0 to 32"),
            ("10.0.0.0/-1", "10.0.0.0/-1", "0 to 32"),
            ("10.0.0.0/8/8", "10.0.0.0/8/8", "0 to 32"),
            ("/8", "/8", "before its /"),
            ("10.0.0", "10.0.0", "not an IPv4 or IPv6 address"),
            ("256.1.1.1", "256.1.1.1", "not an IPv4 or IPv6 address"),
            ("1.2.3.4:80", "1.2.3.4:80", "not an IPv4 or IPv6 address"),
            ("[::1]", "[::1]", "not an IPv4 or IPv6 address"),
            ("fe80::1%eth0", "fe80::1%eth0", "not an IPv4 or IPv6 address"),
            ("1::2::3", "1::2::3", "not an IPv4 or IPv6 address"),
            ("10.0.0.0 /8", "10.0.0.0 /8", "not an IPv4 or IPv6 address"),
        ]
        for (list, entry, says) in cases {
            XCTAssertThrowsError(try TrustedProxies(list), list) { error in
                guard let error = error as? TrustedProxiesError else { return XCTFail("\(list): \(error)") }
                XCTAssertEqual(error.entry, entry, list)
                XCTAssertTrue(error.description.contains("`\(entry)`"), error.description)
                XCTAssertTrue(error.description.contains(says), error.description)
                XCTAssertTrue(error.description.contains("such as 127.0.0.1,10.0.0.0/8,::1"), error.description)
            }
        }
    }

    /// A trusted peer: the client is the rightmost untrusted address of X-Forwarded-For, past
    /// trusted hops; the entries left of it (the client's own writing) are not read.
    func testATrustedPeersHeaderNamesTheRightmostUntrustedHop() throws {
        let trusted = try proxies("127.0.0.1,10.0.0.0/8")
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7"]), "203.0.113.7")
        // The client forged an address at the left: the proxies appended the real one after it.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["1.1.1.1, 203.0.113.7"]), "203.0.113.7")
        // Trusted hops on the right are skipped.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["198.51.100.1, 203.0.113.7, 10.1.1.1, 10.2.2.2"]), "203.0.113.7")
        // A client that writes a trusted address cannot pass for a proxy: the walk stops at the
        // first untrusted hop, whatever lies left of it.
        XCTAssertEqual(trusted.client(peer: "10.0.0.1", forwardedFor: ["10.9.9.9, 198.51.100.23"]), "198.51.100.23")
        // Every hop trusted: the leftmost, the origin as far as the proxies know.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["10.3.3.3, 10.4.4.4"]), "10.3.3.3")
        // Several header lines are one list, in order.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["198.51.100.1", "203.0.113.7, 10.1.1.1", "10.2.2.2"]), "203.0.113.7")
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7", "10.1.1.1", ""]), "203.0.113.7")
        // Ports and brackets some proxies write; one spelling per client.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7:53211"]), "203.0.113.7")
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["[2001:db8::7]:443"]), "2001:db8::7")
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["[2001:DB8::7]"]), "2001:db8::7")
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["::ffff:203.0.113.7"]), "203.0.113.7")
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["\t203.0.113.7 ,, 10.1.1.1 "]), "203.0.113.7")
    }

    /// An untrusted peer's header is ignored whatever it says: a client cannot take a fresh
    /// turn per request by writing one.
    func testAnUntrustedPeersHeaderIsIgnored() throws {
        let trusted = try proxies("127.0.0.1,10.0.0.0/8")
        for header in [["203.0.113.7"], ["127.0.0.1"], ["10.0.0.1"], ["203.0.113.7, 10.0.0.1"], ["garbage"]] {
            XCTAssertEqual(trusted.client(peer: "198.51.100.23", forwardedFor: header), "198.51.100.23", "\(header)")
        }
        // None trusted (the default): the peer as the channel gives it, the header never read.
        XCTAssertEqual(TrustedProxies.none.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7"]), "127.0.0.1")
        XCTAssertEqual(TrustedProxies.none.client(peer: "::1", forwardedFor: ["203.0.113.7"]), "::1")
        // A peer that is not an IP address (a Unix socket) trusts nothing either.
        XCTAssertEqual(trusted.client(peer: "", forwardedFor: ["203.0.113.7"]), "")
    }

    /// Absent, empty or malformed: the walk stops at an entry that is not an address, and the
    /// client is the last address it reached; the peer when the rightmost entry is already bad.
    func testAnAbsentEmptyOrMalformedHeaderLeavesTheLastAddressReached() throws {
        let trusted = try proxies("127.0.0.1,10.0.0.0/8")
        for header in [[], [""], [" , ,"], ["unknown"], ["203.0.113.7 garbage"], ["203.0.113.7, _hidden"], ["203.0.113.7:port"],
                       ["1.2.3.4:99999999"], ["[2001:db8::7"], ["2001:db8::7%eth0"], ["203.0.113.7\u{0}"], ["٣.٣.٣.٣"],
                       [String(repeating: "1", count: 100_000)]] {
            XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: header), "127.0.0.1", "\(header.map { $0.prefix(40) })")
        }
        // The bad entry was written by the trusted hop right of it: that hop is the client.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7, unknown, 10.1.1.1"]), "10.1.1.1")
        // A bad entry left of the client is the client's own writing, and not read.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["unknown, 203.0.113.7"]), "203.0.113.7")
    }

    /// IPv6 peers and IPv4-mapped peers (a dual-stack socket's) against blocks of both families.
    func testIPv6AndMappedPeers() throws {
        let trusted = try proxies("::1,10.0.0.0/8,2001:db8:1::/48")
        XCTAssertEqual(trusted.client(peer: "::1", forwardedFor: ["203.0.113.7"]), "203.0.113.7")
        XCTAssertEqual(trusted.client(peer: "2001:db8:1:2::5", forwardedFor: ["2001:db8:ffff::9, 2001:db8:1::1"]), "2001:db8:ffff::9")
        XCTAssertEqual(trusted.client(peer: "::ffff:10.0.0.2", forwardedFor: ["203.0.113.7"]), "203.0.113.7")
        XCTAssertEqual(trusted.client(peer: "2001:db8:2::1", forwardedFor: ["203.0.113.7"]), "2001:db8:2::1")
        XCTAssertEqual(trusted.client(peer: "::ffff:192.0.2.1", forwardedFor: ["203.0.113.7"]), "192.0.2.1")
        // 127.0.0.1 is not ::1.
        XCTAssertEqual(trusted.client(peer: "127.0.0.1", forwardedFor: ["203.0.113.7"]), "127.0.0.1")
    }

    /// A turn on the lanes is an IPv4 client, or an IPv6 client's /64: addresses a host picks
    /// inside its /64 share one turn, with or without trusted proxies.
    func testAnIPv6ClientTakesOneTurnPerSlash64() throws {
        for proxies in [TrustedProxies.none, try proxies("127.0.0.1")] {
            XCTAssertEqual(proxies.turn(peer: "2001:db8:1:2::5", forwardedFor: []), "2001:db8:1:2::/64")
            XCTAssertEqual(proxies.turn(peer: "2001:db8:1:2:ffff:1:2:3", forwardedFor: []), "2001:db8:1:2::/64")
            XCTAssertEqual(proxies.turn(peer: "2001:db8:1:3::5", forwardedFor: []), "2001:db8:1:3::/64")
            XCTAssertEqual(proxies.turn(peer: "::1", forwardedFor: []), "::/64")
            XCTAssertEqual(proxies.turn(peer: "203.0.113.7", forwardedFor: []), "203.0.113.7")
            XCTAssertEqual(proxies.turn(peer: "", forwardedFor: []), "")
        }
        // Behind a trusted proxy, the forwarded client's /64.
        let trusted = try proxies("127.0.0.1")
        XCTAssertEqual(trusted.turn(peer: "127.0.0.1", forwardedFor: ["2001:db8:9:9:aaaa::1"]), "2001:db8:9:9::/64")
        XCTAssertEqual(trusted.turn(peer: "127.0.0.1", forwardedFor: ["203.0.113.7"]), "203.0.113.7")
        XCTAssertEqual(trusted.turn(peer: "127.0.0.1", forwardedFor: ["::ffff:203.0.113.7"]), "203.0.113.7")
        XCTAssertEqual(TrustedProxies.none.turn(peer: "127.0.0.1", forwardedFor: ["2001:db8:9:9:aaaa::1"]), "127.0.0.1")
    }
    #endif
}
