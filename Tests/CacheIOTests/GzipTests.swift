import CacheIO
import Foundation
import XCTest

final class GzipTests: XCTestCase {
    func testRoundTripAndBadInput() throws {
        var generator = SystemRandomNumberGenerator()
        let text = Array((0..<200_000).map { _ in UInt8.random(in: 0x41...0x44, using: &generator) })
        let encoded = try XCTUnwrap(Gzip.encode(text))
        XCTAssertTrue(Gzip.isGzip(encoded))
        XCTAssertLessThan(encoded.count, text.count)
        XCTAssertEqual(Gzip.decode(encoded, cap: 1 << 20), text)
        XCTAssertEqual(Gzip.decode(try XCTUnwrap(Gzip.encode([])), cap: 16), [])
        XCTAssertNil(Gzip.decode(encoded, cap: text.count - 1), "past the cap")
        XCTAssertNil(Gzip.decode(Array(encoded.prefix(encoded.count / 2)), cap: 1 << 20), "truncated")
        var corrupt = encoded
        corrupt[encoded.count / 2] ^= 0xFF
        XCTAssertNil(Gzip.decode(corrupt, cap: 1 << 20), "corrupt (the CRC or the stream)")
        XCTAssertFalse(Gzip.isGzip(Array("#EXTM3U\n".utf8)))
        XCTAssertNil(Gzip.decode(Array("#EXTM3U\n".utf8), cap: 1 << 20))
    }
}
