import XCTest
@testable import CacheStorage

final class ResourceMetadataTests: XCTestCase {
    func testRoundTrip() {
        let metadata = ResourceMetadata(url: "http://example.com/a b?x=1&y=%20", totalLength: 1000,
                                        contentType: "video/mp4", etag: "\"abc\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                        ranges: RangeSet([0..<200, 500..<1000]), lastAccess: 1_763_700_000)
        XCTAssertEqual(ResourceMetadata(decoding: metadata.encoded()), metadata)
        XCTAssertFalse(metadata.isComplete)
        var complete = metadata
        complete.ranges.insert(200..<500)
        XCTAssertTrue(complete.isComplete)
    }

    func testRejectsIncompleteOrInconsistentFiles() {
        let good = ResourceMetadata(url: "http://h/x", totalLength: 10, ranges: RangeSet([0..<5]), lastAccess: 1).encoded()
        XCTAssertNotNil(ResourceMetadata(decoding: good))
        XCTAssertNil(ResourceMetadata(decoding: ""))
        XCTAssertNil(ResourceMetadata(decoding: "something else\nurl http://h/x\n"))
        // Truncated before the ranges line: a torn write must not load.
        XCTAssertNil(ResourceMetadata(decoding: String(good.prefix(40))))
        // Ranges beyond the length are a lie.
        XCTAssertNil(ResourceMetadata(decoding: good.replacingOccurrences(of: "ranges 0-4", with: "ranges 0-10")))
    }

    /// The decoder reads bytes: numbers as `Int64(String)` reads them, a
    /// "/" byte in a data file name wherever it stands, and the same
    /// values whether it is given the stored bytes or a String.
    func testDecodesBytesAsTheTextReadsThem() throws {
        let base = "httpcache-meta 1\nurl http://h/x\nlength 10\nranges 0-4\naccess 7\n"
        let plain = try XCTUnwrap(ResourceMetadata(decoding: base))
        XCTAssertEqual(ResourceMetadata(decoding: Array(base.utf8)), plain)
        XCTAssertEqual(plain.totalLength, 10)
        XCTAssertEqual(plain.ranges, RangeSet([0..<5]))
        XCTAssertEqual(plain.lastAccess, 7)
        // Signs and sizes as Int64(String): "+" is read, "-" alone and overflow are not.
        XCTAssertEqual(ResourceMetadata(decoding: base.replacingOccurrences(of: "access 7", with: "access +7"))?.lastAccess, 7)
        XCTAssertEqual(ResourceMetadata(decoding: base.replacingOccurrences(of: "access 7", with: "access -7"))?.lastAccess, -7)
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "access 7", with: "access -")))
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "access 7", with: "access 9223372036854775808")))
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "length 10", with: "length -1")))
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "length 10", with: "length 1 0")))
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "ranges 0-4", with: "ranges 0-4,")))
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "ranges 0-4", with: "ranges -1-4")))
        XCTAssertNil(ResourceMetadata(decoding: base.replacingOccurrences(of: "ranges 0-4", with: "ranges 4-0")))
        XCTAssertEqual(ResourceMetadata(decoding: base.replacingOccurrences(of: "ranges 0-4", with: "ranges 0-1,3-4"))?.ranges,
                       RangeSet([0..<2, 3..<5]))
        // A data file name never leaves its folder, even with "/" hidden in a grapheme (a combining mark after it).
        XCTAssertNil(ResourceMetadata(decoding: base + "file ../x\n"))
        XCTAssertNil(ResourceMetadata(decoding: base + "file ./\u{301}x\n"))
        XCTAssertNil(ResourceMetadata(decoding: base + "file meta\n"))
        XCTAssertEqual(ResourceMetadata(decoding: base + "file data-3\n")?.dataName, "data-3")
        // A value ending in CR, or starting with a combining mark, reads back byte for byte.
        var odd = plain
        odd.etag = "\"e\"\r"
        odd.contentType = "\u{301}video/mp4"
        XCTAssertEqual(ResourceMetadata(decoding: Array(odd.encoded().utf8)), odd)
        // Invalid UTF-8 is repaired as String(decoding:as:) repairs it; unknown keys are skipped.
        let bytes = Array((base + "etag \"").utf8) + [0xFF, 0x22, 0x0A] + Array("future-key 1\n".utf8)
        XCTAssertEqual(ResourceMetadata(decoding: bytes)?.etag, "\"\u{FFFD}\"")
    }
}
