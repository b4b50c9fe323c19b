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
}
