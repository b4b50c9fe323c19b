import CacheHTTP
@testable import CacheProxy
import XCTest

/// The Host facts a connection remembers must be those the request would get
/// on its own, whatever came before on the connection.
final class HostFactsTests: XCTestCase {
    private func request(_ hosts: [String], version: HTTPVersion = .http11) -> HTTPRequestHead {
        HTTPRequestHead(method: "GET", target: "/p/x", version: version,
                        headers: HTTPHeaders(hosts.map { ("Host", $0) }))
    }

    func testRememberedFactsEqualFreshOnesOverASequence() {
        let sequence: [[String]] = [
            ["127.0.0.1:8080"], ["127.0.0.1:8080"],                 // repeated: reused
            ["127.0.0.1:8080", "127.0.0.1:8080"],                    // same first value, two fields: refused
            ["127.0.0.1:8080"],                                      // single again: fine again
            ["attacker.example"], ["attacker.example"],              // foreign
            ["localhost:1"], [], ["bad host"], ["bad host"], ["[::1]:9"],
        ]
        var memo = HostFacts.Memo()
        for hosts in sequence {
            let head = request(hosts)
            XCTAssertEqual(memo.facts(for: head), HostFacts(head), "\(hosts)")
        }
        var fresh = HostFacts.Memo()
        XCTAssertEqual(fresh.facts(for: request(["127.0.0.1:8080", "127.0.0.1:8080"])).error, .multiple)
        XCTAssertEqual(fresh.facts(for: request(["127.0.0.1:8080"])).error, nil)
        XCTAssertEqual(fresh.facts(for: request([])).error, .missing)
        XCTAssertEqual(fresh.facts(for: request([], version: .http10)).error, nil, "HTTP/1.0 may omit Host")
        XCTAssertFalse(fresh.facts(for: request(["attacker.example"])).isLoopback)
    }
}
