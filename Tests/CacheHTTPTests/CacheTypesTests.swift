import CacheHTTP
import XCTest

/// `--cache-types` and the Cache-Status field (RFC 9211), as tables.
final class CacheTypesTests: XCTestCase {
    func testParse() {
        let cases: [(String, CacheTypes?, UInt)] = [
            ("media", .media, #line), (" ALL ", .all, #line),
            ("text/html", .types(["text/html"]), #line),
            ("Text/HTML, image/*", .types(["text/html", "image/"]), #line),
            ("application/vnd.apple.mpegurl,video/*", .types(["application/vnd.apple.mpegurl", "video/"]), #line),
            ("", nil, #line), ("text", nil, #line), ("text/", nil, #line), ("*/*", nil, #line),
            ("text/html,", nil, #line), ("text/html;q=1", nil, #line), ("a/b/c", nil, #line),
        ]
        for (text, expected, line) in cases {
            XCTAssertEqual(CacheTypes.parse(text), expected, text, line: line)
        }
    }

    func testAllows() {
        let media: (String?) -> Bool = { $0 == nil || $0!.hasPrefix("video/") }
        let list = CacheTypes.types(["text/html", "image/"])
        let cases: [(CacheTypes, String?, Bool, UInt)] = [
            (.all, "application/json", true, #line), (.all, nil, true, #line),
            (.media, "video/mp4", true, #line), (.media, "text/html", false, #line), (.media, nil, true, #line),
            (list, "text/html; charset=utf-8", true, #line), (list, "TEXT/HTML", true, #line),
            (list, "image/png", true, #line), (list, "image/svg+xml", true, #line),
            (list, "text/plain", false, #line), (list, "imagery/png", false, #line), (list, nil, false, #line),
        ]
        for (types, type, expected, line) in cases {
            XCTAssertEqual(types.allows(type, media: media), expected, "\(types) \(type ?? "none")", line: line)
        }
    }

    func testCacheStatusValues() {
        let cases: [(CacheStatusField, String, UInt)] = [
            (CacheStatusField(hit: true, ttl: 120), "c; hit; ttl=120", #line),
            (CacheStatusField(hit: true, ttl: -5), "c; hit; ttl=-5", #line),
            (CacheStatusField(forward: .uriMiss, forwardStatus: 200, ttl: 60, stored: true),
             "c; fwd=uri-miss; fwd-status=200; ttl=60; stored", #line),
            (CacheStatusField(forward: .uriMiss, forwardStatus: 200, collapsed: true),
             "c; fwd=uri-miss; fwd-status=200; collapsed", #line),
            (CacheStatusField(forward: .varyMiss), "c; fwd=vary-miss", #line),
            (CacheStatusField(forward: .stale, forwardStatus: 304), "c; fwd=stale; fwd-status=304", #line),
            (CacheStatusField(forward: .partial), "c; fwd=partial", #line),
            (CacheStatusField(forward: .request), "c; fwd=request", #line),
            (CacheStatusField(forward: .method, forwardStatus: 201), "c; fwd=method; fwd-status=201", #line),
            (.bypass, "c; fwd=bypass", #line),
        ]
        for (field, expected, line) in cases {
            XCTAssertEqual(field.value(name: "c"), expected, line: line)
        }
        XCTAssertEqual(CacheStatusField(hit: true).word, "hit")
        XCTAssertEqual(CacheStatusField(forward: .varyMiss).word, "vary-miss")
    }

    func testCacheNamesAreTokens() {
        for name in ["httpcache", "edge-1", "ExampleCDN", "*", "a:b/c", "cache_1.x"] {
            XCTAssertTrue(CacheStatusField.isValidName(name), name)
        }
        for name in ["", "1cache", "two words", "a;b", "a,b", "\"q\"", "é"] {
            XCTAssertFalse(CacheStatusField.isValidName(name), name)
        }
    }

    func testInsertingAddsTheFieldBeforeTheBlankLineOnly() {
        let head = Array("HTTP/1.1 404 Not Found\r\nA: b\r\n\r\nbody\r\n\r\n".utf8)
        XCTAssertEqual(String(decoding: CacheStatusField.inserting("c; fwd=bypass", into: head), as: UTF8.self),
                       "HTTP/1.1 404 Not Found\r\nA: b\r\nCache-Status: c; fwd=bypass\r\n\r\nbody\r\n\r\n")
    }
}
