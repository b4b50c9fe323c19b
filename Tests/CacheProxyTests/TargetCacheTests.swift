import CacheHTTP
import XCTest
@testable import CacheProxy

/// The per-loop memo of targets: a forward or reverse target is mapped to
/// its origin URL and store key once, and the reverse mapping follows the
/// configured origin (a reload that changes it starts the memo over).
final class TargetCacheTests: XCTestCase {
    func testTransparentTargetsAreMappedOnceAndFollowTheReverseOrigin() throws {
        var cache = TargetCache()
        var hashed: [String] = []
        let key: (String) -> String = { hashed.append($0); return "key:" + $0 }
        let first = try XCTUnwrap(OriginURL.parse("http://origin.test:8080"))
        let second = try XCTUnwrap(OriginURL.parse("https://other.test"))

        let entry = try XCTUnwrap(cache.transparentEntry(for: "/a/b.ts?x=1", reverseOrigin: first, storeKey: key))
        XCTAssertEqual(entry.urlString, "http://origin.test:8080/a/b.ts?x=1")
        XCTAssertEqual(entry.storeKey, "key:http://origin.test:8080/a/b.ts?x=1")
        XCTAssertEqual(cache.transparentEntry(for: "/a/b.ts?x=1", reverseOrigin: first, storeKey: key)?.storeKey,
                       entry.storeKey)
        XCTAssertEqual(hashed.count, 1, "hashed once")

        let moved = try XCTUnwrap(cache.transparentEntry(for: "/a/b.ts?x=1", reverseOrigin: second, storeKey: key))
        XCTAssertEqual(moved.urlString, "https://other.test/a/b.ts?x=1", "another origin: another URL")
        XCTAssertEqual(hashed.count, 2)

        // A forward-proxy target names its URL; an origin-form one without a reverse origin names none.
        let forward = try XCTUnwrap(cache.transparentEntry(for: "http://media.test/seg.ts", reverseOrigin: nil, storeKey: key))
        XCTAssertEqual(forward.urlString, "http://media.test/seg.ts")
        XCTAssertNil(cache.transparentEntry(for: "/seg.ts", reverseOrigin: nil, storeKey: key))
        XCTAssertNil(cache.transparentEntry(for: "ftp://media.test/seg.ts", reverseOrigin: nil, storeKey: key))
    }

    func testTheMemoIsBounded() {
        var cache = TargetCache()
        var hashes = 0
        let origin = OriginURL.parse("http://origin.test")
        for i in 0..<(TargetCache.limit + 10) {
            _ = cache.transparentEntry(for: "/\(i)", reverseOrigin: origin) { hashes += 1; return $0 }
        }
        // Started over when full: the first target is hashed again.
        _ = cache.transparentEntry(for: "/0", reverseOrigin: origin) { hashes += 1; return $0 }
        XCTAssertEqual(hashes, TargetCache.limit + 11)
    }
}
