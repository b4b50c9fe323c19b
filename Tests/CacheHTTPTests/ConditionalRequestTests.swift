import CacheHTTP
import XCTest

final class ConditionalRequestTests: XCTestCase {
    func testEvaluate() {
        let lm = "Sun, 06 Nov 1994 08:49:37 GMT"
        let before = "Sun, 06 Nov 1994 08:49:36 GMT"
        let after = "Sun, 06 Nov 1994 08:49:38 GMT"
        let strong = "\"v1\"", weak = "W/\"v1\""
        typealias Row = (method: String, request: [(String, String)], etag: String?, lastModified: String?,
                         status: Int, expected: PreconditionResult, line: UInt)
        let rows: [Row] = [
            ("GET", [], strong, lm, 200, .proceed, #line),
            // If-None-Match: weak comparison for GET/HEAD.
            ("GET", [("If-None-Match", strong)], strong, lm, 200, .notModified, #line),
            ("HEAD", [("If-None-Match", strong)], strong, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", weak)], strong, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", strong)], weak, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", "\"v2\"")], strong, lm, 200, .proceed, #line),
            ("GET", [("If-None-Match", "\"v0\", \"v1\"")], strong, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", "\"v0\""), ("If-None-Match", "\"v1\"")], strong, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", "\"a,b\", \"v1\"")], strong, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", "\"a,b\"")], "\"a,b\"", lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", "v1")], strong, lm, 200, .proceed, #line),          // not an entity-tag
            ("GET", [("If-None-Match", "W/v1")], strong, lm, 200, .proceed, #line),        // nor this
            ("GET", [("If-None-Match", weak)], weak, lm, 200, .notModified, #line),        // weak against weak
            ("GET", [("If-None-Match", "W/\"v0\", W/\"v1\"")], strong, lm, 200, .notModified, #line),
            ("GET", [("If-None-Match", "\"V1\"")], strong, lm, 200, .proceed, #line),      // opaque-tags are case-sensitive
            ("GET", [("If-None-Match", "\"v0\", *")], strong, lm, 200, .proceed, #line),   // `*` only alone
            ("GET", [("If-None-Match", "*")], strong, nil, 200, .notModified, #line),
            ("GET", [("If-None-Match", strong)], nil, lm, 200, .proceed, #line),
            ("PUT", [("If-None-Match", "*")], strong, lm, 200, .preconditionFailed, #line),
            ("DELETE", [("If-None-Match", weak)], strong, lm, 200, .preconditionFailed, #line),
            // If-Modified-Since.
            ("GET", [("If-Modified-Since", lm)], strong, lm, 200, .notModified, #line),
            ("GET", [("If-Modified-Since", after)], strong, lm, 200, .notModified, #line),
            ("GET", [("If-Modified-Since", before)], strong, lm, 200, .proceed, #line),
            ("GET", [("If-Modified-Since", "Sunday, 06-Nov-94 08:49:37 GMT")], nil, lm, 200, .notModified, #line),
            ("GET", [("If-Modified-Since", "yesterday")], strong, lm, 200, .proceed, #line),  // unparseable: ignored
            ("GET", [("If-Modified-Since", lm)], strong, nil, 200, .proceed, #line),       // nothing to compare
            ("GET", [("If-Modified-Since", lm)], strong, "garbage", 200, .proceed, #line),
            ("POST", [("If-Modified-Since", lm)], strong, lm, 200, .proceed, #line),       // only GET/HEAD
            ("GET", [("If-None-Match", "\"v2\""), ("If-Modified-Since", after)], strong, lm, 200, .proceed, #line),
            ("GET", [("If-None-Match", strong), ("If-Modified-Since", before)], strong, lm, 200, .notModified, #line),
            // If-Match: strong comparison.
            ("GET", [("If-Match", strong)], strong, lm, 200, .proceed, #line),
            ("GET", [("If-Match", weak)], strong, lm, 200, .preconditionFailed, #line),
            ("GET", [("If-Match", strong)], weak, lm, 200, .preconditionFailed, #line),
            ("GET", [("If-Match", "\"v2\"")], strong, lm, 200, .preconditionFailed, #line),
            ("GET", [("If-Match", "\"v2\", \"v1\"")], strong, lm, 200, .proceed, #line),
            ("GET", [("If-Match", "*")], nil, nil, 200, .proceed, #line),
            ("GET", [("If-Match", strong)], nil, lm, 200, .preconditionFailed, #line),
            ("GET", [("If-Match", strong), ("If-None-Match", strong)], strong, lm, 200, .notModified, #line),
            ("GET", [("If-Match", "\"v2\""), ("If-None-Match", strong)], strong, lm, 200, .preconditionFailed, #line),
            // If-Unmodified-Since, only without If-Match.
            ("GET", [("If-Unmodified-Since", before)], strong, lm, 200, .preconditionFailed, #line),
            ("GET", [("If-Unmodified-Since", lm)], strong, lm, 200, .proceed, #line),
            ("GET", [("If-Unmodified-Since", "nope")], strong, lm, 200, .proceed, #line),
            ("GET", [("If-Unmodified-Since", before)], strong, nil, 200, .proceed, #line),
            ("GET", [("If-Match", strong), ("If-Unmodified-Since", before)], strong, lm, 200, .proceed, #line),
            // Preconditions apply only to a 2xx answer.
            ("GET", [("If-None-Match", strong)], strong, lm, 404, .proceed, #line),
            ("GET", [("If-Match", "\"v2\"")], strong, lm, 301, .proceed, #line),
            ("GET", [("If-None-Match", strong)], strong, lm, 206, .notModified, #line),
        ]
        for r in rows {
            XCTAssertEqual(ConditionalRequest.evaluate(method: r.method, requestHeaders: HTTPHeaders(r.request),
                                                       status: r.status, etag: r.etag, lastModified: r.lastModified),
                           r.expected, "\(r.method) \(r.request) etag=\(r.etag ?? "nil")", line: r.line)
        }
    }

    func testEntityTag() {
        let cases: [(String, EntityTag?)] = [
            ("\"abc\"", EntityTag(opaque: "\"abc\"", isWeak: false)),
            (" W/\"abc\" ", EntityTag(opaque: "\"abc\"", isWeak: true)),
            ("\"\"", EntityTag(opaque: "\"\"", isWeak: false)),
            ("abc", nil), ("\"abc", nil), ("w/\"abc\"", nil), ("\"a\"b\"", nil), ("W/", nil), ("", nil),
        ]
        for (text, expected) in cases { XCTAssertEqual(EntityTag(text), expected, text) }
        let s = EntityTag(opaque: "\"x\"", isWeak: false), w = EntityTag(opaque: "\"x\"", isWeak: true)
        XCTAssertTrue(s.strongMatch(s))
        XCTAssertFalse(s.strongMatch(w))
        XCTAssertFalse(w.strongMatch(w))
        XCTAssertTrue(w.weakMatch(s))
        XCTAssertFalse(w.weakMatch(EntityTag(opaque: "\"y\"", isWeak: true)))
    }
}
