@testable import CacheHTTP
import XCTest

final class RequestHeadParserTests: XCTestCase {
    func testValidRequests() throws {
        let cases: [(String, method: String, target: String, version: HTTPVersion, keepAlive: Bool, fields: Int)] = [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "/", .http11, true, 1),
            ("HEAD /p/x/y?z=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", "HEAD", "/p/x/y?z=1", .http11, false, 2),
            ("GET /a HTTP/1.1\r\nConnection: Keep-Alive, Close\r\n\r\n", "GET", "/a", .http11, false, 1),
            ("GET /a HTTP/1.0\r\n\r\n", "GET", "/a", .http10, false, 0),
            ("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET", "/a", .http10, true, 1),
            ("GET /a HTTP/1.0\r\nconnection: TE, KEEP-ALIVE\r\n\r\n", "GET", "/a", .http10, true, 1),
            ("GET /a HTTP/1.2\r\n\r\n", "GET", "/a", HTTPVersion(major: 1, minor: 2), true, 0),
            ("GET / HTTP/1.1\nHost: a\n\n", "GET", "/", .http11, true, 1),             // bare LF
            ("GET / HTTP/1.1\r\nHost: a\n\r\n", "GET", "/", .http11, true, 1),         // mixed
            ("\r\nGET / HTTP/1.1\r\n\r\n", "GET", "/", .http11, true, 0),              // stray CRLF
            ("\r\n\nGET / HTTP/1.1\r\n\r\n", "GET", "/", .http11, true, 0),
            ("OPTIONS * HTTP/1.1\r\n\r\n", "OPTIONS", "*", .http11, true, 0),
            ("M-SEARCH http://a/b HTTP/1.1\r\n\r\n", "M-SEARCH", "http://a/b", .http11, true, 0),
        ]
        for c in cases {
            let result = try XCTUnwrap(parseRequest(c.0).get(), c.0)
            XCTAssertEqual(result.consumed, c.0.utf8.count, c.0)
            XCTAssertEqual(result.head.method, c.method, c.0)
            XCTAssertEqual(result.head.target, c.target, c.0)
            XCTAssertEqual(result.head.version, c.version, c.0)
            XCTAssertEqual(result.head.keepAlive, c.keepAlive, c.0)
            XCTAssertEqual(result.head.headers.count, c.fields, c.0)
        }
    }

    func testFieldValuesAreTrimmedAndKeptInOrder() throws {
        let req = "GET / HTTP/1.1\r\nHost:a\r\nRange: \t bytes=0-1 \t\r\nX-Empty:\r\nX-Empty2:   \r\n"
            + "X-Inner: a  b\r\nX-Latin: caf\u{E9}\r\n\r\n"
        let head = try XCTUnwrap(parseRequest(req).get()).head
        XCTAssertEqual(head.headers.map { $0.name }, ["Host", "Range", "X-Empty", "X-Empty2", "X-Inner", "X-Latin"])
        XCTAssertEqual(head.headers.map { $0.value }, ["a", "bytes=0-1", "", "", "a  b", "caf\u{E9}"])
    }

    func testEveryPrefixIsIncomplete() throws {
        let requests = [
            "GET /video.mp4 HTTP/1.1\r\nHost: example.com\r\nRange: bytes=0-\r\nConnection: keep-alive\r\n\r\n",
            "\r\nGET / HTTP/1.0\nA: b\n\n",
        ]
        for req in requests {
            let bytes = Array(req.utf8)
            for n in 0..<bytes.count {
                let r = bytes[..<n].withUnsafeBytes { RequestHeadParser.parse($0) }
                switch r {
                case .success(nil): break
                default: XCTFail("prefix \(n) of \(req.debugDescription): \(r)")
                }
            }
            let full = try XCTUnwrap(bytes.withUnsafeBytes { RequestHeadParser.parse($0) }.get())
            XCTAssertEqual(full.consumed, bytes.count)
        }
    }

    func testPipelinedRequests() throws {
        let first = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
        let second = "HEAD /2 HTTP/1.1\r\n\r\n"
        let third = "GET /3 HTTP/1.1\r\nHo"
        var bytes = Array((first + second + third).utf8)
        let one = try XCTUnwrap(bytes.withUnsafeBytes { RequestHeadParser.parse($0) }.get())
        XCTAssertEqual(one.head.target, "/1")
        XCTAssertEqual(one.consumed, first.utf8.count)
        bytes.removeFirst(one.consumed)
        let two = try XCTUnwrap(bytes.withUnsafeBytes { RequestHeadParser.parse($0) }.get())
        XCTAssertEqual(two.head.method, "HEAD")
        XCTAssertEqual(two.consumed, second.utf8.count)
        bytes.removeFirst(two.consumed)
        XCTAssertNil(try bytes.withUnsafeBytes { RequestHeadParser.parse($0) }.get())
    }

    func testBadRequests() {
        let long = String(repeating: "a", count: 9 * 1024)
        let bigValue = String(repeating: "v", count: 17 * 1024)
        let manyFields = (0..<101).map { "X-\($0): \($0)\r\n" }.joined()
        let hundredFields = (0..<100).map { "X-\($0): \($0)\r\n" }.joined()
        let cases: [(String, Int)] = [
            // 400
            ("GET / HTTP/1.1\r\nHost: a\r\n continued\r\n\r\n", 400),       // obs-fold
            ("GET / HTTP/1.1\r\n\tHost: a\r\n\r\n", 400),                    // first line folded
            ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),                     // space before colon
            ("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHo\rst: a\r\n\r\n", 400),                    // bare CR in name
            ("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),                   // bare CR in value
            ("GET / HTTP/1.1\r\r\n\r\n", 400),                               // bare CR in request line
            ("GET / HTTP/1.1\r\nHost: a\r\n\rX\r\n\r\n", 400),               // line starting with bare CR
            ("GET / HTTP/1.1\r\nHost: a\u{0}b\r\n\r\n", 400),                // NUL
            ("GET / HTTP/1.1\r\nHost: a\u{7F}\r\n\r\n", 400),                // DEL
            ("GET / HTTP/1.1\r\nX: \u{1B}[0m\r\n\r\n", 400),                 // ESC
            ("GET / HTTP/1.1\r\nH(st: a\r\n\r\n", 400),                      // bad token char
            ("GET / HTTP/1.1\r\n: a\r\n\r\n", 400),                          // empty name
            ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
            ("/ HTTP/1.1\r\n\r\n", 400),                                     // missing method
            (" / HTTP/1.1\r\n\r\n", 400),
            ("G(T / HTTP/1.1\r\n\r\n", 400),                                 // bad method
            ("GET HTTP/1.1\r\n\r\n", 400),                                   // missing target
            ("GET  HTTP/1.1\r\n\r\n", 400),
            ("GET /a b HTTP/1.1\r\n\r\n", 400),                              // space in target
            ("GET /a\u{1}b HTTP/1.1\r\n\r\n", 400),                          // control in target
            ("GET /caf\u{E9} HTTP/1.1\r\n\r\n", 400),                        // raw non-ASCII target
            ("GET  / HTTP/1.1\r\n\r\n", 400),                                // double space
            ("GET / HTTP/1.1 \r\n\r\n", 400),
            ("GET /\r\n\r\n", 400),                                          // HTTP/0.9 style
            ("GET / http/1.1\r\n\r\n", 400),
            ("GET / HTTP/1\r\n\r\n", 400),
            ("GET / HTTP/1.10\r\n\r\n", 400),
            ("GET / HTTP/11\r\n\r\n", 400),
            ("GET / HTTPS/1.1\r\n\r\n", 400),
            ("\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400),                     // too many empty lines
            ("\n\n\nGET / HTTP/1.1\r\n\r\n", 400),
            ("\r\r\nGET / HTTP/1.1\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n", 400),
            // 414
            ("GET /\(long) HTTP/1.1\r\n\r\n", 414),
            ("GET /\(long)", 414),                                           // fails before line end
            // 431
            ("GET / HTTP/1.1\r\nX-Big: \(bigValue)\r\n\r\n", 431),
            ("GET / HTTP/1.1\r\nX-Big: \(bigValue)", 431),                   // fails before line end
            ("GET / HTTP/1.1\r\n\(manyFields)\r\n", 431),
            ("GET / HTTP/1.1\r\n\(manyFields)", 431),                        // fails before the end
            // 505
            ("GET / HTTP/2.0\r\n\r\n", 505),
            ("GET / HTTP/0.9\r\n\r\n", 505),
            ("GET / HTTP/3.0\r\nHost: a\r\n\r\n", 505),
        ]
        for (req, status) in cases {
            let r = parseRequest(req)
            XCTAssertEqual(r.error?.status, status, "\(req.prefix(80).debugDescription): \(r)")
        }
        // Limits are inclusive bounds: exactly 100 fields is fine.
        XCTAssertNotNil(try? parseRequest("GET / HTTP/1.1\r\n\(hundredFields)\r\n").get())
    }

    /// Every byte value at every offset of a long value and target, so the
    /// word-at-a-time checks are exercised at each lane.
    func testEveryByteAtEveryPosition() throws {
        let value = Array("0123456789abcdefghijklmnopqrstuv".utf8)
        for byte in 0...255 {
            let b = UInt8(byte)
            let valueOK = b == 0x09 || (b >= 0x20 && b != 0x7F)
            let targetOK = b >= 0x21 && b <= 0x7E
            for pos in 0..<value.count {
                var v = value
                v[pos] = b
                let field = Array("GET / HTTP/1.1\r\nX: a".utf8) + v + Array("z\r\n\r\n".utf8)
                let r = field.withUnsafeBytes { RequestHeadParser.parse($0) }
                if byte == 0x0A {
                    // LF ends the line early; the rest is a field without colon.
                    XCTAssertEqual(r.error?.status, 400)
                } else if valueOK {
                    let head = try XCTUnwrap(r.get()?.head, "byte \(byte) at \(pos)")
                    if b < 0x80 {
                        XCTAssertEqual(head.headers["x"], "a" + String(decoding: v, as: UTF8.self) + "z")
                    } else {
                        XCTAssertNotNil(head.headers["x"]) // obs-text: kept, decoded leniently
                    }
                } else {
                    XCTAssertEqual(r.error?.status, 400, "byte \(byte) at \(pos)")
                }
                let line = Array("GET /".utf8) + v + Array(" HTTP/1.1\r\n\r\n".utf8)
                let t = line.withUnsafeBytes { RequestHeadParser.parse($0) }
                if targetOK {
                    XCTAssertEqual(try XCTUnwrap(t.get()?.head).target.utf8.count, v.count + 1, "byte \(byte) at \(pos)")
                } else {
                    XCTAssertEqual(t.error?.status, 400, "byte \(byte) at \(pos)")
                }
            }
        }
    }

    func testLimitBoundaries() throws {
        let limits = HeadLimits(maxRequestLine: 20, maxHeaderBytes: 30, maxHeaderCount: 2)
        // Request line of exactly 20 bytes passes, 21 fails, incomplete or not.
        let line20 = "GET /" + String(repeating: "a", count: 6) + " HTTP/1.1"
        XCTAssertEqual(line20.utf8.count, 20)
        XCTAssertNotNil(try parseRequest(line20 + "\r\n\r\n", limits: limits).get())
        XCTAssertNil(try parseRequest(line20 + "\r", limits: limits).get())
        XCTAssertEqual(parseRequest("GET /aaaaaaa HTTP/1.1\r\n\r\n", limits: limits).error, .uriTooLong)
        XCTAssertEqual(parseRequest("GET /aaaaaaa HTTP/1.1", limits: limits).error, .uriTooLong)
        // Field section of exactly 30 bytes (including the final CRLF) passes.
        let fields30 = "A: " + String(repeating: "b", count: 23) + "\r\n\r\n"
        XCTAssertEqual(fields30.utf8.count, 30)
        XCTAssertNotNil(try parseRequest("GET / HTTP/1.1\r\n" + fields30, limits: limits).get())
        XCTAssertEqual(parseRequest("GET / HTTP/1.1\r\nA: b" + fields30, limits: limits).error, .headersTooLarge)
        XCTAssertEqual(parseRequest("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n", limits: limits).error,
                       .headersTooLarge)
    }

    func testErrorStatusesAndReasons() {
        XCTAssertEqual(HeadParseError.badRequest("x").status, 400)
        XCTAssertEqual(HeadParseError.uriTooLong.status, 414)
        XCTAssertEqual(HeadParseError.headersTooLarge.status, 431)
        XCTAssertEqual(HeadParseError.versionNotSupported.status, 505)
        XCTAssertEqual(parseRequest("GET / HTTP/1.1\r\nHost : a\r\n\r\n").error, .badRequest("whitespace before colon"))
        XCTAssertEqual(parseRequest("GET / HTTP/1.1\r\n folded\r\n\r\n").error, .badRequest("obsolete line folding"))
        XCTAssertEqual(parseRequest("GET / HTTP/1.1\r\nA: \rb\r\n\r\n").error, .badRequest("bare CR"))
    }
}
