import CacheHTTP
import XCTest

/// Where a player's `nor`/`nrr` hint points: relative to the request's URL
/// (through a proxy URL: to the origin URL the proxy URL it names stands
/// for), on the request's origin only.
final class CMCDHintTests: XCTestCase {
    private let origin = OriginURL.parse("http://127.0.0.1:8080/show/v1/seg-1.ts?tok=a")!

    private func hint(_ payload: String, proxyTarget: String? = nil) -> CMCDHint? {
        CMCDHint(CMCD.parse(payload: payload), origin: origin, proxyTarget: proxyTarget)
    }

    func testNextObjectResolvedAgainstTheRequest() {
        XCTAssertEqual(hint("nor=\"seg-2.ts\"")?.url.string, "http://127.0.0.1:8080/show/v1/seg-2.ts")
        XCTAssertEqual(hint("nor=\"..%2Fv2%2Fseg-2.ts%3Ftok%3Db\"")?.url.string, "http://127.0.0.1:8080/show/v2/seg-2.ts?tok=b")
        XCTAssertEqual(hint("nor=\"/abs/seg.ts\"")?.url.string, "http://127.0.0.1:8080/abs/seg.ts")
        XCTAssertNil(hint("nor=\"seg-2.ts\"")?.range)
        XCTAssertEqual(hint("nor=\"seg-2.ts\",nrr=\"100-199\"")?.range, 100..<200)
    }

    func testRangeOfTheSameObject() {
        XCTAssertEqual(hint("nrr=\"0-1023\""), CMCDHint(url: origin, range: 0..<1024))
        XCTAssertNil(hint("nrr=\"9-3\""))
        XCTAssertNil(hint("nrr=\"-3\""))
        XCTAssertNil(hint("nrr=\"a-b\""))
    }

    func testNothingOnAnotherOriginOrWithoutAHint() {
        XCTAssertNil(hint("nor=\"http://127.0.0.2:8080/x.ts\""))
        XCTAssertNil(hint("nor=\"https://127.0.0.1:8080/x.ts\""))
        XCTAssertNil(hint("nor=\"//other.example/x.ts\""))
        XCTAssertNil(hint("bl=100,sid=\"s\""))
        XCTAssertNil(hint("nor=\"\""))
        XCTAssertNil(hint("nor=\"seg-1.ts?tok=a\""), "the object being fetched is no hint")
    }

    func testThroughProxyURLs() {
        let next = "http://127.0.0.1:8080/show/v1/seg-2.ts"
        let nextPath = ProxyURL.path(forOrigin: next)!
        // A reference to another proxy URL: the origin URL it carries.
        let own = ProxyURL.path(forOrigin: origin.string)!
        let relative = "../" + nextPath.split(separator: "/")[1] + "/seg-2.ts"
        XCTAssertEqual(hint("nor=\"\(relative)\"", proxyTarget: own + "?CMCD=x")?.url.string, next)
        XCTAssertEqual(hint("nor=\"\(nextPath)\"", proxyTarget: own)?.url.string, next)
        // Only the name changed in the request's own proxy URL: the origin's sibling.
        XCTAssertEqual(hint("nor=\"seg-2.ts\"", proxyTarget: own)?.url.string, next)
        // The base form resolves by itself.
        let base = ProxyURL.basePath(forOrigin: origin.string)!
        XCTAssertEqual(hint("nor=\"seg-2.ts\"", proxyTarget: base)?.url.string, next)
    }
}
