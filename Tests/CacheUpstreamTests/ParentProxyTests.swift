import XCTest
@testable import CacheHTTP
@testable import CacheUpstream

final class ParentProxyTests: XCTestCase {
    func testParsesOnlyHTTPProxyURLs() {
        XCTAssertEqual(ParentProxy.parse("http://proxy.example:3128"), ParentProxy(host: "proxy.example", port: 3128))
        XCTAssertEqual(ParentProxy.parse("http://[::1]:8080/")?.host, "::1")
        XCTAssertEqual(ParentProxy.parse("http://proxy.example")?.port, 80)
        for bad in ["https://proxy.example:3128", "http://proxy.example:3128/path", "http://u:p@proxy.example:1",
                    "proxy.example:3128", ""] {
            XCTAssertNil(ParentProxy.parse(bad), bad)
        }
    }

    func testDirectHostsCoverTheirSubdomainsOnly() {
        let parent = ParentProxy(host: "p", port: 1, directHosts: ["Intranet.example", ".lan", "[::1]"])
        XCTAssertFalse(parent.isUsed(for: "intranet.example"))
        XCTAssertFalse(parent.isUsed(for: "media.intranet.example"))
        XCTAssertFalse(parent.isUsed(for: "nas.lan"))
        XCTAssertFalse(parent.isUsed(for: "::1"))
        XCTAssertTrue(parent.isUsed(for: "notintranet.example"))
        XCTAssertTrue(parent.isUsed(for: "example.com"))
    }

    func testConnectRequestAndAnswer() {
        XCTAssertEqual(String(decoding: ParentProxy.connectRequest(host: "::1", port: 443), as: UTF8.self),
                       "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n")
        XCTAssertEqual(String(decoding: ParentProxy.connectRequest(host: "o", port: 8443, via: ["1.1 a", "1.1 b"]),
                              as: UTF8.self),
                       "CONNECT o:8443 HTTP/1.1\r\nHost: o:8443\r\nVia: 1.1 a\r\nVia: 1.1 b\r\n\r\n")
        XCTAssertNil(ParentProxy.connectAnswer(Array("HTTP/1.1 200 OK\r\n".utf8)), "incomplete")
        let answer = Array("HTTP/1.1 200 Connection established\r\nVia: x\r\n\r\n\u{16}".utf8)
        XCTAssertEqual(ParentProxy.connectAnswer(answer)?.status, 200)
        XCTAssertEqual(ParentProxy.connectAnswer(answer)?.headLength, answer.count - 1)
        XCTAssertEqual(ParentProxy.connectAnswer(Array("HTTP/1.1 407 Auth\r\n\r\n".utf8))?.status, 407)
        XCTAssertEqual(ParentProxy.connectAnswer(Array("garbage\r\n\r\n".utf8))?.status, 0)
    }

    func testHTTPRequestsThroughTheParentUseTheAbsoluteForm() throws {
        var configuration = UpstreamConfiguration()
        configuration.parentProxy = ParentProxy(host: "p", port: 1, directHosts: ["direct.example"])
        let viaParent = try XCTUnwrap(OriginURL.parse("http://media.example/a.ts?x=1"))
        let direct = try XCTUnwrap(OriginURL.parse("http://direct.example/a.ts"))
        let secure = try XCTUnwrap(OriginURL.parse("https://media.example/a.ts"))
        func line(_ url: OriginURL) -> String {
            let bytes = UpstreamHeaders.request(method: "GET", url: url, originalURL: url, headers: HTTPHeaders(),
                                                configuration: configuration)
            return String(decoding: bytes.prefix { $0 != 13 }, as: UTF8.self)
        }
        XCTAssertEqual(line(viaParent), "GET http://media.example/a.ts?x=1 HTTP/1.1")
        XCTAssertEqual(line(direct), "GET /a.ts HTTP/1.1")
        XCTAssertEqual(line(secure), "GET /a.ts HTTP/1.1", "inside the CONNECT tunnel: origin form")
    }
}
