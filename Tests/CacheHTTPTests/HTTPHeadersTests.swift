import CacheHTTP
import XCTest

final class HTTPHeadersTests: XCTestCase {
    func testLookupIsCaseInsensitiveAndOrdered() {
        var h = HTTPHeaders()
        h.add("Content-Type", "video/mp4")
        h.add("Set-Cookie", "a=1")
        h.add("set-cookie", "b=2")
        XCTAssertEqual(h.count, 3)
        XCTAssertEqual(h["content-type"], "video/mp4")
        XCTAssertEqual(h["SET-COOKIE"], "a=1")
        XCTAssertEqual(h.values("Set-Cookie"), ["a=1", "b=2"])
        XCTAssertTrue(h.contains("CONTENT-TYPE"))
        XCTAssertFalse(h.contains("Content-Length"))
        XCTAssertNil(h["Content-Length"])
        XCTAssertEqual(h.map { $0.name }, ["Content-Type", "Set-Cookie", "set-cookie"])
    }

    func testRemoveAndReplace() {
        var h = HTTPHeaders([("A", "1"), ("b", "2"), ("a", "3"), ("C", "4")])
        h.remove("A")
        XCTAssertEqual(h.map { $0.name }, ["b", "C"])
        h.replace("c", "5")
        XCTAssertEqual(h.values("C"), ["5"])
        XCTAssertEqual(h.map { $0.value }, ["2", "5"])
        h.remove("missing")
        XCTAssertEqual(h.count, 2)
    }

    func testHasToken() {
        let h = HTTPHeaders([("Connection", "keep-alive,  Upgrade "), ("connection", "\tTE")])
        for token in ["keep-alive", "KEEP-ALIVE", "upgrade", "te"] {
            XCTAssertTrue(h.hasToken(token, in: "Connection"), token)
        }
        for token in ["close", "keep", "alive", "", "keep-alive, Upgrade"] {
            XCTAssertFalse(h.hasToken(token, in: "Connection"), token)
        }
        XCTAssertFalse(h.hasToken("te", in: "Upgrade"))
        XCTAssertTrue(HTTPHeaders([("X", "a,,b")]).hasToken("b", in: "x"))
        XCTAssertFalse(HTTPHeaders([("X", "a,,b,")]).hasToken("", in: "x"))
    }

    func testEquality() {
        XCTAssertEqual(HTTPHeaders([("A", "1")]), HTTPHeaders([("a", "1")]))
        XCTAssertNotEqual(HTTPHeaders([("A", "1")]), HTTPHeaders([("A", "2")]))
        XCTAssertNotEqual(HTTPHeaders([("A", "1"), ("B", "2")]), HTTPHeaders([("B", "2"), ("A", "1")]))
        XCTAssertEqual(HTTPHeaders(), HTTPHeaders([]))
    }
}
