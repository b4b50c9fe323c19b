import CacheHTTP
import XCTest

final class IntermediaryTests: XCTestCase {
    func testRemovingHopByHop() {
        let cases: [(input: [(String, String)], kept: [String], line: UInt)] = [
            ([("Content-Type", "video/mp4"), ("Connection", "keep-alive"), ("Keep-Alive", "timeout=5")],
             ["Content-Type"], #line),
            ([("TE", "trailers"), ("Trailer", "X"), ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"),
              ("Proxy-Connection", "keep-alive"), ("Proxy-Authenticate", "Basic"), ("Proxy-Authorization", "x"),
              ("ETag", "\"1\"")], ["ETag"], #line),
            ([("Connection", "close, X-Foo"), ("x-foo", "1"), ("X-Bar", "2")], ["X-Bar"], #line),
            ([("Connection", " X-A ,X-B"), ("connection", "x-c"), ("X-A", ""), ("X-B", ""), ("X-C", ""), ("X-D", "")],
             ["X-D"], #line),
            ([("Proxy-Connection", "X-Old"), ("X-Old", "1"), ("Via", "1.1 a")], ["Via"], #line),
            ([("Connection", "Content-Length, ,"), ("Content-Length", "5"), ("Age", "3")], ["Age"], #line),
            ([("Set-Cookie", "a"), ("Set-Cookie", "b")], ["Set-Cookie", "Set-Cookie"], #line),  // duplicates kept
            ([], [], #line),
        ]
        for c in cases {
            let out = Intermediary.removingHopByHop(HTTPHeaders(c.input))
            XCTAssertEqual(out.map(\.name), c.kept, "\(c.input)", line: c.line)
        }
    }

    func testVia() {
        let p = Intermediary.pseudonym(id: 0xDEAD_BEEF)
        XCTAssertEqual(p, "httpcache-deadbeef")
        XCTAssertEqual(Intermediary.pseudonym(id: 1), "httpcache-00000001")
        let h = Intermediary.appendingVia(HTTPHeaders([("Via", "1.0 fred, 1.1 p.example.net")]), pseudonym: p)
        XCTAssertEqual(h.values("Via"), ["1.0 fred, 1.1 p.example.net", "1.1 httpcache-deadbeef"])
        let old = Intermediary.appendingVia(HTTPHeaders(), receivedWith: .http10, pseudonym: p)
        XCTAssertEqual(old.values("Via"), ["1.0 httpcache-deadbeef"])
    }

    func testLoopDetection() {
        let p = "httpcache-deadbeef"
        let cases: [(via: [String], loop: Bool, line: UInt)] = [
            ([], false, #line),
            (["1.1 httpcache-deadbeef"], true, #line),
            (["1.0 fred, 1.1 HTTPCACHE-DEADBEEF (HTTPCache)"], true, #line),
            (["1.1 a", "HTTP/1.1 httpcache-deadbeef"], true, #line),
            (["1.1 httpcache-deadbeee"], false, #line),                   // another instance
            (["1.1 httpcache-deadbeef-2"], false, #line),
            (["1.1 other (via httpcache-deadbeef, really)"], false, #line),  // inside a comment
            (["httpcache-deadbeef"], false, #line),                       // that is the protocol, not received-by
            ([" 1.1\thttpcache-deadbeef:8080"], false, #line),
        ]
        for c in cases {
            XCTAssertEqual(Intermediary.isLoop(HTTPHeaders(c.via.map { ("Via", $0) }), pseudonym: p), c.loop,
                           "\(c.via)", line: c.line)
        }
        XCTAssertFalse(Intermediary.isLoop(HTTPHeaders([("Via", "1.1 x")]), pseudonym: ""))
    }

    func testValidateHost() {
        typealias R = Result<HostAuthority?, HostError>
        let cases: [(hosts: [String], version: HTTPVersion, expected: R, line: UInt)] = [
            (["example.com"], .http11, .success(HostAuthority(host: "example.com", port: nil)), #line),
            (["Example.COM:8080"], .http11, .success(HostAuthority(host: "example.com", port: 8080)), #line),
            ([" 127.0.0.1:80 "], .http11, .success(HostAuthority(host: "127.0.0.1", port: 80)), #line),
            (["[::1]:8080"], .http11, .success(HostAuthority(host: "[::1]", port: 8080)), #line),
            (["[2001:db8::7]"], .http11, .success(HostAuthority(host: "[2001:db8::7]", port: nil)), #line),
            (["localhost:"], .http11, .success(HostAuthority(host: "localhost", port: nil)), #line),
            (["a%2Db.example"], .http11, .success(HostAuthority(host: "a%2db.example", port: nil)), #line),
            ([], .http10, .success(nil), #line),
            ([], .http11, .failure(.missing), #line),
            (["a.example", "b.example"], .http11, .failure(.multiple), #line),
            (["a.example", "a.example"], .http10, .failure(.multiple), #line),
            ([""], .http11, .failure(.empty), #line),
            (["  "], .http11, .failure(.empty), #line),
            (["exa mple.com"], .http11, .failure(.invalid), #line),
            (["example.com/path"], .http11, .failure(.invalid), #line),
            (["user@example.com"], .http11, .failure(.invalid), #line),
            (["example.com:65536"], .http11, .failure(.invalid), #line),
            (["example.com:80a"], .http11, .failure(.invalid), #line),
            (["example.com:8080:1"], .http11, .failure(.invalid), #line),
            ([":8080"], .http11, .failure(.invalid), #line),
            (["[::1"], .http11, .failure(.invalid), #line),
            (["[]"], .http11, .failure(.invalid), #line),
            (["[::1]x"], .http11, .failure(.invalid), #line),
            (["[zz::1]"], .http11, .failure(.invalid), #line),
            (["a%2"], .http11, .failure(.invalid), #line),
            (["a%zz"], .http11, .failure(.invalid), #line),
        ]
        for c in cases {
            let request = HTTPRequestHead(method: "GET", target: "/", version: c.version,
                                          headers: HTTPHeaders(c.hosts.map { ("Host", $0) }))
            XCTAssertEqual(Intermediary.validateHost(request), c.expected, "\(c.hosts)", line: c.line)
        }
    }
}
