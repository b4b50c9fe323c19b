import CacheHTTP
import CacheUpstream
import XCTest

final class UpstreamHeadersTests: XCTestCase {
    func testOnlyTheDefaultAndConfiguredClientFieldsAreForwarded() {
        let client = HTTPHeaders([("User-Agent", "P/1"), ("Accept", "*/*"), ("accept-language", "fr"), ("Referer", "r"),
                                  ("Cookie", "c"), ("Range", "bytes=0-"), ("Connection", "close"), ("X-Id", "1")])
        let forwarded = UpstreamHeaders.forwarded(from: client, extra: ["x-id", "range"])
        XCTAssertEqual(forwarded, HTTPHeaders([("User-Agent", "P/1"), ("Accept", "*/*"), ("accept-language", "fr"), ("X-Id", "1")]))
        let marked = HTTPHeaders([("X-Id", "1"), ("Accept", "*/*"), ("Connection", "keep-alive, x-id")])
        XCTAssertEqual(UpstreamHeaders.forwarded(from: marked, extra: ["x-id"]), HTTPHeaders([("Accept", "*/*")]),
                       "fields the client's Connection names are hop-by-hop")
    }

    func testConfiguredFieldsAreChecked() {
        XCTAssertNil(UpstreamHeaders.problem(name: "X-Token", value: "a b"))
        XCTAssertNotNil(UpstreamHeaders.problem(name: "Transfer-Encoding", value: "chunked"))
        XCTAssertNotNil(UpstreamHeaders.problem(name: "X Token", value: "a"))
        XCTAssertNotNil(UpstreamHeaders.problem(name: "", value: "a"))
        XCTAssertNotNil(UpstreamHeaders.problem(name: "X-A", value: "a\nb"))
    }

    func testRequestHeadOrderPrecedenceAndCredentials() {
        var configuration = UpstreamConfiguration()
        configuration.extraHeaders = [(name: "Authorization", value: "Bearer s"), (name: "Accept", value: "video/*")]
        let original = OriginURL.parse("http://a.example:8080/m?x=1")!
        let headers = HTTPHeaders([("Accept", "*/*"), ("Range", "bytes=0-99")])
        func head(_ url: OriginURL) -> String {
            String(decoding: UpstreamHeaders.request(method: "GET", url: url, originalURL: original, headers: headers,
                                                     configuration: configuration), as: UTF8.self)
        }
        XCTAssertEqual(head(original), "GET /m?x=1 HTTP/1.1\r\nHost: a.example:8080\r\nAuthorization: Bearer s\r\n"
                       + "Accept: video/*\r\nRange: bytes=0-99\r\nUser-Agent: HTTPCache/\(HTTPCacheVersion.text)\r\n"
                       + "Accept-Encoding: identity\r\nConnection: keep-alive\r\n\r\n")
        let elsewhere = OriginURL.parse("https://cdn.example/m")!
        XCTAssertFalse(head(elsewhere).contains("Authorization"))
        XCTAssertTrue(head(elsewhere).hasPrefix("GET /m HTTP/1.1\r\nHost: cdn.example\r\n"))
    }

    /// Players' CMCD goes on (proxy URLs too) unless `stripsCMCD`, which takes
    /// out the query argument and the four fields and nothing else.
    func testCMCDForwardedOrStripped() {
        let client = HTTPHeaders([("Accept", "*/*"), ("CMCD-Request", "bl=1"), ("cmcd-session", "sid=\"s\""),
                                  ("CMCD-Other", "x")])
        XCTAssertEqual(UpstreamHeaders.forwarded(from: client, extra: []),
                       HTTPHeaders([("Accept", "*/*"), ("CMCD-Request", "bl=1"), ("cmcd-session", "sid=\"s\"")]))
        var configuration = UpstreamConfiguration()
        let url = OriginURL.parse("http://a.example/s.ts?a=1&CMCD=bl%3D1&b=2")!
        func head() -> String {
            String(decoding: UpstreamHeaders.request(method: "GET", url: url, originalURL: url, headers: client,
                                                     configuration: configuration), as: UTF8.self)
        }
        XCTAssertTrue(head().hasPrefix("GET /s.ts?a=1&CMCD=bl%3D1&b=2 HTTP/1.1\r\n"))
        XCTAssertTrue(head().contains("\r\nCMCD-Request: bl=1\r\ncmcd-session: sid=\"s\"\r\n"))
        configuration.stripsCMCD = true
        XCTAssertTrue(head().hasPrefix("GET /s.ts?a=1&b=2 HTTP/1.1\r\n"), head())
        XCTAssertFalse(head().lowercased().contains("cmcd-request"))
        XCTAssertFalse(head().lowercased().contains("cmcd-session"))
        XCTAssertTrue(head().contains("\r\nCMCD-Other: x\r\n"), "not a CMCD field")
    }
}
