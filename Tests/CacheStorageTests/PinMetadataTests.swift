@testable import CacheStorage
import XCTest

final class PinMetadataTests: XCTestCase {
    func testPinRoundTripsAndOldFilesLoad() {
        var metadata = ResourceMetadata(url: "http://o.test/seg0.ts", totalLength: 10, ranges: RangeSet(), lastAccess: 5)
        metadata.pin = "http://o.test/master.m3u8"
        let text = metadata.encoded()
        XCTAssertTrue(text.contains("\npin http://o.test/master.m3u8\n"))
        XCTAssertEqual(ResourceMetadata(decoding: text), metadata)
        // A file written before pins existed: loads, unpinned.
        let old = "httpcache-meta 1\nurl http://o.test/a\nlength 10\nranges \naccess 5\n"
        let loaded = ResourceMetadata(decoding: old)
        XCTAssertNotNil(loaded)
        XCTAssertNil(loaded?.pin)
        // Unpinned metadata writes no pin line (older versions read it unchanged).
        metadata.pin = nil
        XCTAssertFalse(metadata.encoded().contains("pin"))
    }
}
