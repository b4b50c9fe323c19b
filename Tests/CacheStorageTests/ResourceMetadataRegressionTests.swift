import XCTest
@testable import CacheStorage

/// Inputs found by the metadata fuzz target (Fuzz/Targets/metadata.swift).
final class ResourceMetadataRegressionTests: XCTestCase {
    /// The decoder split lines at Characters, and "\r\n" is one Character: a
    /// value ending in CR swallowed the next line, so the file did not load.
    func testValueEndingInCarriageReturnRoundTrips() throws {
        let metadata = ResourceMetadata(url: "hh\r", etag: "\"a\"\r", ranges: RangeSet([0..<5]), lastAccess: 7)
        let decoded = try XCTUnwrap(ResourceMetadata(decoding: metadata.encoded()))
        XCTAssertEqual(Array(decoded.url.utf8), Array("hh\r".utf8))
        XCTAssertEqual(decoded.etag.map { Array($0.utf8) }, Array("\"a\"\r".utf8))
        XCTAssertEqual(decoded.ranges, RangeSet([0..<5]))
    }

    /// A space followed by a combining mark is one Character too: a value
    /// starting with a mark (an origin's ETag may) hid its key and was dropped.
    func testValueStartingWithCombiningMarkRoundTrips() throws {
        let metadata = ResourceMetadata(url: "http://h/x", contentType: "\u{301}video/mp4", etag: "\u{301}",
                                        lastModified: "\u{20DD}x", lastAccess: 1)
        let decoded = try XCTUnwrap(ResourceMetadata(decoding: metadata.encoded()))
        XCTAssertEqual(decoded.contentType.map { Array($0.utf8) }, Array("\u{301}video/mp4".utf8))
        XCTAssertEqual(decoded.etag.map { Array($0.utf8) }, Array("\u{301}".utf8))
        XCTAssertEqual(decoded.lastModified.map { Array($0.utf8) }, Array("\u{20DD}x".utf8))
    }
}
