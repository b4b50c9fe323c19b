import CacheHTTP
@testable import CacheProxy
import CacheStorage
import XCTest

final class AccessPolicyTests: XCTestCase {
    typealias Policy = AccessPolicy

    func testDecisionTable() {
        let rows: [(String, Policy.Facts, Policy.Mode, Policy.Verdict)] = [
            ("loopback Host", .init(route: .proxy, peerIsLoopback: true, host: .loopback), .loopback, .allow),
            ("localhost Host", .init(route: .other, peerIsLoopback: true, host: .loopback), .loopback, .allow),
            ("no Host (HTTP/1.0)", .init(route: .proxy, peerIsLoopback: true, host: nil), .loopback, .allow),
            ("rebinding", .init(route: .proxy, peerIsLoopback: true, host: .other), .loopback, .misdirected),
            ("rebinding admin", .init(route: .admin, peerIsLoopback: true, host: .other), .loopback, .misdirected),
            ("LAN any Host", .init(route: .proxy, peerIsLoopback: false, host: .address, signature: .valid), .lan, .allow),
            ("LAN unsigned", .init(route: .proxy, peerIsLoopback: false, host: .other, signature: .missing), .lan,
             .forbidden("this proxy serves signed proxy URLs only (mint them with `httpcache url --cache-dir`)")),
            ("LAN tampered", .init(route: .proxy, peerIsLoopback: true, host: .other, signature: .invalid), .lan,
             .forbidden("the proxy URL's signature does not match its origin URL")),
            ("LAN admin remote", .init(route: .admin, peerIsLoopback: false, host: .address), .lan,
             .forbidden("cache administration is served to loopback clients only")),
            ("LAN admin local", .init(route: .admin, peerIsLoopback: true, host: .loopback), .lan, .allow),
            ("LAN admin by address", .init(route: .admin, peerIsLoopback: true, host: .address), .lan, .allow),
            ("LAN stats remote", .init(route: .stats, peerIsLoopback: false, host: .address), .lan,
             .forbidden("statistics are served to loopback clients only")),
            ("LAN stats rebound name", .init(route: .stats, peerIsLoopback: true, host: .other), .lan, .misdirected),
            ("LAN ping remote", .init(route: .other, peerIsLoopback: false, host: .other), .lan, .allow),
            ("allowed origin", .init(route: .proxy, peerIsLoopback: true, host: .loopback, originAllowed: true),
             .loopback, .allow),
            ("other origin", .init(route: .proxy, peerIsLoopback: true, host: .loopback, originAllowed: false),
             .loopback, .forbidden("the origin is not among the allowed origins")),
            ("forward, other origin", .init(route: .forward, peerIsLoopback: true, host: nil, originAllowed: false),
             .loopback, .forbidden("the origin is not among the allowed origins")),
            ("reverse, foreign Host", .init(route: .reverse, peerIsLoopback: true, host: .other), .loopback, .misdirected),
            ("reverse, server name", .init(route: .reverse, peerIsLoopback: true, host: .serverName), .loopback, .allow),
            ("reverse, loopback", .init(route: .reverse, peerIsLoopback: true, host: .loopback), .loopback, .allow),
            ("reverse, address, loopback mode", .init(route: .reverse, peerIsLoopback: true, host: .address), .loopback,
             .misdirected),
            ("reverse, address, LAN", .init(route: .reverse, peerIsLoopback: false, host: .address), .lan, .allow),
            ("reverse, name, LAN", .init(route: .reverse, peerIsLoopback: false, host: .other), .lan, .misdirected),
            ("tunnel, loopback", .init(route: .tunnel, peerIsLoopback: true, host: nil), .loopback, .allow),
            ("tunnel, LAN mode", .init(route: .tunnel, peerIsLoopback: true, host: nil), .lan,
             .forbidden("tunnels (CONNECT) are refused in LAN mode")),
            ("tunnel, remote", .init(route: .tunnel, peerIsLoopback: false, host: nil), .loopback,
             .forbidden("tunnels (CONNECT) are for loopback clients only")),
            ("tunnel, other origin", .init(route: .tunnel, peerIsLoopback: true, host: nil, originAllowed: false),
             .loopback, .forbidden("the origin is not among the allowed origins")),
        ]
        for (name, facts, mode, expected) in rows {
            XCTAssertEqual(Policy.decide(facts, mode: mode), expected, name)
        }
    }

    func testHostKindsAndDestinations() throws {
        let destinations = try DestinationPolicy.parse(["cdn.example", "127.0.0.1:8080", "[::1]:9"]).get()
        let policy = Policy(mode: .loopback, signer: nil, destinations: destinations, serverNames: ["Media.Example"])
        func kind(_ host: String) -> Policy.HostKind? {
            policy.hostKind(HostFacts(HTTPRequestHead(method: "GET", target: "/", headers: HTTPHeaders([("Host", host)]))))
        }
        XCTAssertEqual(kind("localhost:8080"), .loopback)
        XCTAssertEqual(kind("media.example:443"), .serverName)
        XCTAssertEqual(kind("MEDIA.EXAMPLE."), .serverName)
        XCTAssertEqual(kind("192.168.1.9:80"), .address)
        XCTAssertEqual(kind("[fe80::1]:80"), .address)
        XCTAssertEqual(kind("attacker.example"), .other)
        for (url, allowed) in [("http://cdn.example/a", true), ("https://CDN.example:8443/a", true),
                               ("http://127.0.0.1:8080/x", true), ("http://127.0.0.1:8081/x", false),
                               ("http://127.0.0.2:8080/x", false), ("http://[::1]:9/", true), ("http://[::1]:10/", false),
                               ("http://cdn.example.evil/", false)] {
            XCTAssertEqual(destinations.allows(try XCTUnwrap(OriginURL.parse(url))), allowed, url)
        }
        for bad in ["", "a b", "http://x", "host:0", "host:99999", "[::1", "x/y"] {
            XCTAssertNil(try? DestinationPolicy.parse([bad]).get(), bad)
        }
        XCTAssertTrue(DestinationPolicy.any.allows(try XCTUnwrap(OriginURL.parse("http://anything/"))))
        for url in ["http://anything/", "http://127.0.0.1:8080/", "http://[::1]:9/"] {
            XCTAssertFalse(DestinationPolicy.nothing.allows(try XCTUnwrap(OriginURL.parse(url))), "fails closed: \(url)")
        }
    }

    func testLoopbackHosts() {
        for host in ["localhost", "LOCALHOST:80", "localhost.", "a.localhost", "127.0.0.1", "127.1.2.3:9",
                     "[::1]", "[::1]:8080", "::1", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]:1"] {
            XCTAssertTrue(LoopbackHost.contains(host), host)
        }
        for host in ["attacker.example", "localhost.attacker.example", "127.0.0.1.nip.io", "128.0.0.1", "0.0.0.0",
                     "192.168.1.1:80", "[::2]", "[::1", "localhost:x", "[::ffff:10.0.0.1]", "", "127.0.0.256"] {
            XCTAssertFalse(LoopbackHost.contains(host), host)
        }
    }

    func testSignatureRoundTripAndTampering() throws {
        let signer = URLSigner(key: Array(repeating: 7, count: 32))
        let origin = "https://cdn.example/a/movie.mp4?token=x"
        let signature = signer.signature(forOrigin: origin)
        XCTAssertEqual(signature.utf8.count, URLSigner.signatureLength)
        XCTAssertTrue(signer.isValid(signature: signature.utf8, forOrigin: origin))
        XCTAssertFalse(signer.isValid(signature: signature.utf8, forOrigin: origin + "&y"), "swapped origin")
        var changed = Array(signature.utf8)
        changed[5] = changed[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertFalse(signer.isValid(signature: changed, forOrigin: origin), "one character changed")
        XCTAssertFalse(URLSigner(key: Array(repeating: 8, count: 32)).isValid(signature: signature.utf8, forOrigin: origin),
                       "another key")
        let path = try XCTUnwrap(ProxyURL.path(forOrigin: origin, signature: signature))
        XCTAssertEqual(ProxyURL.signature(fromTarget: path).map(String.init), signature)
        XCTAssertEqual(ProxyURL.origin(fromTarget: path), origin, "the signed form decodes the same origin")
        XCTAssertNil(ProxyURL.signature(fromTarget: try XCTUnwrap(ProxyURL.path(forOrigin: origin))))
    }

    /// Base-form URLs in LAN mode: signed over their base, so any tail
    /// under it (a filled-in template) passes and nothing else does.
    func testSignedBaseFormURLs() throws {
        let signer = URLSigner(key: Array(repeating: 7, count: 32))
        let policy = AccessPolicy(mode: .lan, signer: signer)
        let manifest = try XCTUnwrap(OriginURL.parse("http://o.test/v/m.mpd"))
        let path = try XCTUnwrap(policy.signedBasePath(forOrigin: "http://o.test/v/$Number$.m4s", template: true,
                                                       inManifest: manifest))
        XCTAssertNil(policy.signedBasePath(forOrigin: "http://elsewhere.test/x", template: false, inManifest: manifest),
                     "another origin than the manifest's is not signed")
        func verdict(_ target: String) -> AccessPolicy.Verdict {
            let head = HTTPRequestHead(method: "GET", target: target, version: .http11, headers: HTTPHeaders([("Host", "10.0.0.2:9000")]))
            return policy.verdict(for: head, peerIsLoopback: false)
        }
        XCTAssertEqual(verdict(path.replacingOccurrences(of: "$Number$", with: "12")), .allow)
        XCTAssertEqual(verdict(path.replacingOccurrences(of: "$Number$.m4s", with: "other/file?x=1")), .allow)
        XCTAssertEqual(verdict(path.replacingOccurrences(of: "$Number$.m4s", with: "../secret")).status, 403)
        let unsigned = try XCTUnwrap(ProxyURL.basePath(forOrigin: "http://o.test/v/1.m4s"))
        XCTAssertEqual(verdict(unsigned).status, 403)
        var other: [UInt8] = Array("/t/".utf8)
        Base64URL.encode("http://o.test/w/".utf8, into: &other)
        let tilde = try XCTUnwrap(path.firstIndex(of: "~"))
        XCTAssertEqual(verdict(String(decoding: other, as: UTF8.self) + path[tilde...]).status, 403, "another base")
    }

    func testConstantTimeEqual() {
        XCTAssertTrue(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ConstantTime.equal([1, 2], [1, 2, 3]))
    }

    /// PURGE: the admin Host check (421 for a rebinding name), then a
    /// loopback peer naming a loopback host, or the admin token.
    func testPurgeNeedsLoopbackOrTheAdminToken() {
        let token = "0123456789abcdef"
        func verdict(_ host: Policy.HostKind?, absolute: Bool = false, mode: Policy.Mode = .loopback, peer: Bool = true,
                     _ sent: String? = nil) -> Policy.Verdict {
            Policy.purgeVerdict(host: host, absoluteForm: absolute, mode: mode, peerIsLoopback: peer, token: sent,
                                adminToken: token)
        }
        XCTAssertEqual(verdict(.loopback), .allow)
        XCTAssertEqual(verdict(nil), .allow)
        XCTAssertEqual(verdict(.loopback, peer: false, token), .allow)
        let refused = Policy.Verdict.forbidden("PURGE is for loopback clients or the admin token")
        XCTAssertEqual(verdict(.loopback, peer: false), refused)
        XCTAssertEqual(verdict(.loopback, peer: false, "0123456789abcdee"), refused)
        XCTAssertEqual(verdict(.loopback, peer: false, ""), refused)
        XCTAssertEqual(refused.status, 403)
        // A rebinding name: 421 even with the token; a public name: the token, from any peer.
        XCTAssertEqual(verdict(.other), .misdirected)
        XCTAssertEqual(verdict(.other, token), .misdirected)
        XCTAssertEqual(verdict(.address), .misdirected)
        XCTAssertEqual(verdict(.serverName), .misdirected)
        XCTAssertEqual(verdict(.serverName, token), .allow)
        XCTAssertEqual(verdict(.address, mode: .lan).status, 403)
        XCTAssertEqual(verdict(.address, mode: .lan, peer: false, token), .allow)
        // Absolute form (forward mode): Host names the origin.
        XCTAssertEqual(verdict(.other, absolute: true), .allow)
        XCTAssertEqual(verdict(.other, absolute: true, peer: false), refused)
    }
}
