import CacheHTTP
@testable import CacheProxy
import CacheStorage
import XCTest

final class AccessPolicyTests: XCTestCase {
    typealias Policy = AccessPolicy

    func testDecisionTable() {
        let none: Set<String> = []
        let rows: [(String, Policy.Facts, Policy.Mode, Set<String>, Policy.Verdict)] = [
            ("loopback Host", .init(route: .proxy, peerIsLoopback: true, host: "127.0.0.1:8080"), .loopback, none, .allow),
            ("localhost Host", .init(route: .other, peerIsLoopback: true, host: "localhost:1"), .loopback, none, .allow),
            ("no Host (HTTP/1.0)", .init(route: .proxy, peerIsLoopback: true, host: nil), .loopback, none, .allow),
            ("rebinding", .init(route: .proxy, peerIsLoopback: true, host: "attacker.example"), .loopback, none, .misdirected),
            ("rebinding admin", .init(route: .admin, peerIsLoopback: true, host: "attacker.example:80"), .loopback, none, .misdirected),
            ("LAN any Host", .init(route: .proxy, peerIsLoopback: false, host: "192.168.1.9:80", signature: .valid), .lan, none, .allow),
            ("LAN unsigned", .init(route: .proxy, peerIsLoopback: false, host: "h", signature: .missing), .lan,
             none, .forbidden("this proxy serves signed proxy URLs only (mint them with `httpcache url --cache-dir`)")),
            ("LAN tampered", .init(route: .proxy, peerIsLoopback: true, host: "h", signature: .invalid), .lan,
             none, .forbidden("the proxy URL's signature does not match its origin URL")),
            ("LAN admin remote", .init(route: .admin, peerIsLoopback: false, host: "h"), .lan,
             none, .forbidden("cache administration is served to loopback clients only")),
            ("LAN admin local", .init(route: .admin, peerIsLoopback: true, host: "h"), .lan, none, .allow),
            ("LAN stats remote", .init(route: .stats, peerIsLoopback: false, host: "h"), .lan,
             none, .forbidden("statistics are served to loopback clients only")),
            ("LAN ping remote", .init(route: .other, peerIsLoopback: false, host: "h"), .lan, none, .allow),
            ("allowed origin", .init(route: .proxy, peerIsLoopback: true, host: "localhost", originHost: "cdn.example"),
             .loopback, ["cdn.example"], .allow),
            ("other origin", .init(route: .proxy, peerIsLoopback: true, host: "localhost", originHost: "evil.example"),
             .loopback, ["cdn.example"], .forbidden("the origin is not among the allowed origins")),
        ]
        for (name, facts, mode, allowed, expected) in rows {
            XCTAssertEqual(Policy.decide(facts, mode: mode, allowedOrigins: allowed), expected, name)
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

    func testConstantTimeEqual() {
        XCTAssertTrue(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ConstantTime.equal([1, 2], [1, 2, 3]))
    }
}
