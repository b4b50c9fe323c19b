import Foundation
import XCTest

/// What the proxy answers to well-formed edge cases and to bad input.
final class ProtocolTests: XCTestCase {
    var fixture: ProxyFixture!
    var file: TestFile!

    override func setUpWithError() throws {
        fixture = try ProxyFixture()
        file = try fixture.file("p.bin", size: 100_000, seed: 21)
    }

    override func tearDown() {
        fixture?.stop()
        fixture = nil
    }

    func testHeadHasTheSameHeadAndNoBody() throws {
        let get = try fixture.get("p.bin", range: "bytes=10-19")
        let connection = try fixture.connect()
        let head = try connection.request(method: "HEAD", path: try fixture.proxyPath("p.bin"), headers: [("Range", "bytes=10-19")])
        XCTAssertEqual(head.status, 206)
        XCTAssertEqual(head.body, [])
        for name in ["Content-Length", "Content-Range", "Content-Type", "Accept-Ranges", "ETag", "Last-Modified"] {
            XCTAssertNotNil(head.header(name), name)
            XCTAssertEqual(head.header(name), get.header(name), name)
        }
        // The connection is still usable after a HEAD.
        let after = try connection.get(try fixture.proxyPath("p.bin"), range: "bytes=0-9")
        XCTAssertBytes(after.body, equal: file, range: 0..<10)
    }

    func testSuffixAndOpenRangesAndClamping() throws {
        let suffix = try fixture.get("p.bin", range: "bytes=-500")
        XCTAssertEqual(suffix.header("Content-Range"), "bytes 99500-99999/100000")
        XCTAssertBytes(suffix.body, equal: file, range: 99_500..<100_000)
        let beyond = try fixture.get("p.bin", range: "bytes=99990-200000")
        XCTAssertEqual(beyond.header("Content-Range"), "bytes 99990-99999/100000")
        XCTAssertBytes(beyond.body, equal: file, range: 99_990..<100_000)
        let longSuffix = try fixture.get("p.bin", range: "bytes=-900000")
        XCTAssertEqual(longSuffix.status, 206)
        XCTAssertBytes(longSuffix.body, equal: file)
    }

    func testUnsatisfiableRangeIs416() throws {
        _ = try fixture.get("p.bin", range: "bytes=0-0")
        let response = try fixture.get("p.bin", range: "bytes=100000-")
        XCTAssertEqual(response.status, 416)
        XCTAssertEqual(response.header("Content-Range"), "bytes */100000")
        let cold = try fixture.file("cold.bin", size: 1000)
        let coldResponse = try fixture.get("cold.bin", range: "bytes=5000-6000")
        XCTAssertEqual(coldResponse.status, 416, "unsatisfiable on a cold resource too")
        XCTAssertEqual(coldResponse.header("Content-Range"), "bytes */\(cold.size)")
    }

    func testInvalidOrMultipleRangesGetTheWholeBody() throws {
        for header in ["bytes=5-4", "items=0-1", "bytes=abc", "bytes=0-1,5-9"] {
            let response = try fixture.get("p.bin", range: header)
            XCTAssertEqual(response.status, 200, header)
            XCTAssertBytes(response.body, equal: file)
        }
    }

    func testIfRange() throws {
        let first = try fixture.get("p.bin", range: "bytes=0-9")
        let etag = try XCTUnwrap(first.header("ETag"))
        let lastModified = try XCTUnwrap(first.header("Last-Modified"))
        XCTAssertEqual(try fixture.get("p.bin", range: "bytes=0-9", headers: [("If-Range", etag)]).status, 206)
        XCTAssertEqual(try fixture.get("p.bin", range: "bytes=0-9", headers: [("If-Range", lastModified)]).status, 206)
        let stale = try fixture.get("p.bin", range: "bytes=0-9", headers: [("If-Range", "\"other\"")])
        XCTAssertEqual(stale.status, 200)
        XCTAssertBytes(stale.body, equal: file)
    }

    func testMethodNotAllowed() throws {
        let connection = try fixture.connect()
        let response = try connection.request(method: "POST", path: try fixture.proxyPath("p.bin"), body: Array("x".utf8))
        XCTAssertEqual(response.status, 405)
        XCTAssertEqual(response.header("Allow"), "GET, HEAD")
    }

    func testMalformedRequestsGetClearStatuses() throws {
        let cases: [(String, [UInt8], Int)] = [
            ("garbage", Array("HELLO\r\n\r\n".utf8), 400),
            ("bad version", Array("GET / HTTP/x\r\nHost: localhost\r\n\r\n".utf8), 400),
            ("space before colon", Array("GET /ping HTTP/1.1\r\nHost : a\r\n\r\n".utf8), 400),
            ("huge header", Array("GET /ping HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 17_000))\r\n\r\n".utf8), 431),
            ("long line", Array("GET /\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\n\r\n".utf8), 414),
            ("not a proxy URL", Array("GET /p/%%%/x HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), 400),
            ("ftp origin", Array("GET /p/ZnRwOi8vZXhhbXBsZS5jb20vYQ/a HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), 400),
        ]
        for (name, bytes, status) in cases {
            let connection = try fixture.connect()
            try connection.send(bytes)
            let response = try connection.readResponse()
            XCTAssertEqual(response.status, status, name)
        }
        // The server is still fine.
        XCTAssertEqual(try fixture.connect().get("/ping").status, 200)
    }

    func testKeepAliveAndHTTP10() throws {
        let connection = try fixture.connect()
        for index in 0..<5 {
            let response = try connection.get(try fixture.proxyPath("p.bin"), range: "bytes=\(index * 10)-\(index * 10 + 9)")
            XCTAssertBytes(response.body, equal: file, range: (index * 10)..<(index * 10 + 10))
        }
        let old = try fixture.connect()
        try old.send("GET \(try fixture.proxyPath("p.bin")) HTTP/1.0\r\n\r\n")
        let response = try old.readResponse()
        XCTAssertBytes(response.body, equal: file)
        XCTAssertTrue(old.peerClosed(within: 2), "HTTP/1.0 without keep-alive closes")
    }

    func testOriginErrorsPassThroughAndAreNotCached() throws {
        let missing = try fixture.get("nope.bin")
        XCTAssertEqual(missing.status, 404)
        _ = try fixture.get("nope.bin")
        XCTAssertEqual(fixture.originLog("nope.bin").count, 2, "a 404 is not cached")
        _ = try fixture.file("nope.bin", size: 10)
        XCTAssertEqual(try fixture.get("nope.bin").status, 200)
    }

    func testOriginDownIs502() throws {
        let port = try TestTools.freePort()
        let url = try fixture.server.proxyURL(for: "http://127.0.0.1:\(port)/x.mp4")
        let response = try RawHTTPClient.get(url: url)
        XCTAssertEqual(response.status, 502)
        XCTAssertTrue(response.bodyString.contains("connect"), response.bodyString)
    }

    func testIdleConnectionsTimeOut() throws {
        let fixture = try ProxyFixture { $0.clientIdleTimeout = 0.5 }
        defer { fixture.stop() }
        let idle = try fixture.connect()
        XCTAssertEqual(try idle.get("/ping").status, 200)
        XCTAssertFalse(idle.peerClosed(within: 0.1), "kept alive at first")
        XCTAssertTrue(idle.peerClosed(within: 3), "an idle keep-alive connection is closed")
        let silent = try fixture.connect()
        try silent.send("GET /ping HTTP/1.1\r\n")  // a head that never completes
        XCTAssertTrue(silent.peerClosed(within: 3), "an incomplete request head times out")
    }
}
