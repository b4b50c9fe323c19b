import CacheHTTP
import XCTest

final class ResponseHeadTests: XCTestCase {
    func testParseStatusLines() throws {
        let cases: [(String, status: Int, reason: String, version: HTTPVersion, keepAlive: Bool)] = [
            ("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1/2\r\n\r\n", 206, "Partial Content", .http11, true),
            ("HTTP/1.1 200 \r\n\r\n", 200, "", .http11, true),
            ("HTTP/1.1 200\r\n\r\n", 200, "", .http11, true),
            ("HTTP/1.1 404 Not  Found here\r\nConnection: close\r\n\r\n", 404, "Not  Found here", .http11, false),
            ("HTTP/1.0 200 OK\r\n\r\n", 200, "OK", .http10, false),
            ("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", 200, "OK", .http10, true),
            ("HTTP/1.1 599 Whatever\n\n", 599, "Whatever", .http11, true),
        ]
        for c in cases {
            let r = try XCTUnwrap(parseResponse(c.0).get(), c.0)
            XCTAssertEqual(r.consumed, c.0.utf8.count, c.0)
            XCTAssertEqual(r.head.status, c.status, c.0)
            XCTAssertEqual(r.head.reason, c.reason, c.0)
            XCTAssertEqual(r.head.version, c.version, c.0)
            XCTAssertEqual(r.head.keepAlive, c.keepAlive, c.0)
        }
        let body = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
        let r = try XCTUnwrap(parseResponse(body).get())
        XCTAssertEqual(r.consumed, body.utf8.count - 3)
        XCTAssertEqual(r.head.headers["content-length"], "3")
    }

    func testIncompleteAndBadResponses() throws {
        let full = "HTTP/1.1 200 OK\r\nA: b\r\n\r\n"
        let bytes = Array(full.utf8)
        for n in 0..<bytes.count {
            let r = bytes[..<n].withUnsafeBytes { ResponseHeadParser.parse($0) }
            guard case .success(nil) = r else { return XCTFail("prefix \(n): \(r)") }
        }
        let bad: [(String, Int)] = [
            ("HTTP/1.1 20 OK\r\n\r\n", 400),
            ("HTTP/1.1 2000 OK\r\n\r\n", 400),
            ("HTTP/1.1 abc OK\r\n\r\n", 400),
            ("HTTP/1.1 099 X\r\n\r\n", 400),
            ("HTTP/1.1  200 OK\r\n\r\n", 400),
            ("HTTP/1.1 200 O\u{1}K\r\n\r\n", 400),
            ("HTTP/1.1 200 OK\r\nA : b\r\n\r\n", 400),
            ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            ("ICY 200 OK\r\n\r\n", 400),
            ("HTTP/2.0 200 OK\r\n\r\n", 505),
            ("HTTP/1.1 200 " + String(repeating: "x", count: 9000) + "\r\n\r\n", 414),
        ]
        for (resp, status) in bad {
            XCTAssertEqual(parseResponse(resp).error?.status, status, resp.prefix(60).debugDescription)
        }
    }

    /// RFC 9112 §6.3 ¶3: Transfer-Encoding overrides Content-Length; the
    /// received Content-Length goes, and the connection is not reused.
    func testTransferEncodingWithContentLengthIsFramedByTransferEncoding() throws {
        for text in ["HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1, 2\r\n\r\n"] {
            let r = try XCTUnwrap(parseResponse(text).get(), text)
            XCTAssertNil(r.head.headers["content-length"], text)
            XCTAssertEqual(r.head.headers["transfer-encoding"], "chunked", text)
            XCTAssertFalse(r.head.keepAlive, text)
        }
    }

    func testSerialize() {
        var h = HTTPHeaders()
        h.add("Content-Range", "bytes 0-499/1234")
        h.add("Content-Length", "500")
        let head = HTTPResponseHead(status: 206, headers: h)
        XCTAssertEqual(head.reason, "Partial Content")
        XCTAssertEqual(String(decoding: head.serialized(), as: UTF8.self),
                       "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-499/1234\r\nContent-Length: 500\r\n\r\n")
        XCTAssertEqual(String(decoding: HTTPResponseHead(version: .http10, status: 204, reason: "").serialized(), as: UTF8.self),
                       "HTTP/1.0 204 \r\n\r\n")
        XCTAssertEqual(String(decoding: HTTPResponseHead(status: 416).serialized(), as: UTF8.self),
                       "HTTP/1.1 416 Range Not Satisfiable\r\n\r\n")
    }

    func testRoundTripThroughParser() throws {
        let head = HTTPResponseHead(status: 302, headers: HTTPHeaders([("Location", "/x"), ("Content-Length", "0")]))
        let parsed = try XCTUnwrap(head.serialized().withUnsafeBytes { ResponseHeadParser.parse($0) }.get())
        XCTAssertEqual(parsed.head.status, 302)
        XCTAssertEqual(parsed.head.reason, "Found")
        XCTAssertEqual(parsed.head.headers, head.headers)
    }

    func testReasonPhrases() {
        let expected: [Int: String] = [
            200: "OK", 204: "No Content", 206: "Partial Content", 301: "Moved Permanently", 302: "Found",
            303: "See Other", 304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
            400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 411: "Length Required", 413: "Content Too Large", 414: "URI Too Long",
            416: "Range Not Satisfiable", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
            299: "Success", 499: "Client Error", 42: "",
        ]
        for (code, reason) in expected { XCTAssertEqual(HTTPStatus.reason(code), reason, "\(code)") }
    }
}
