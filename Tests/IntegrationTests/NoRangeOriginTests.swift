import Foundation
import HTTPCache
import XCTest

/// An origin that ignores Range (nginx with `max_ranges 0`: every answer is
/// a 200 with the whole body). A cached prefix and a request far past it:
/// the only way to those bytes is a download from the start, which the
/// request must wait for instead of starting ever new ones.
final class NoRangeOriginTests: XCTestCase {
    func testBytesFarPastTheCachedPrefixComeFromOneWholeDownload() throws {
        let fixture = try ReaderFixture(extraServerConfig: "max_ranges 0;")
        try fixture.cache.serve()
        let file = try fixture.file("whole.bin", size: 8_000_000, seed: 51)
        let url = try fixture.cache.proxyURL(for: fixture.origin.url("/whole.bin"))
        // A player reads the first bytes and goes away: a prefix stays cached.
        let head = try RawHTTPClient.get(url: url, range: "bytes=0-99999", timeout: 20)
        XCTAssertEqual(head.status, 206)
        XCTAssertEqual(head.body, Array(file.bytes[0..<100_000]))
        // Then a range far past what was cached.
        let far = try RawHTTPClient.get(url: url, range: "bytes=6000000-6099999", timeout: 20)
        XCTAssertEqual(far.status, 206)
        XCTAssertEqual(far.body, Array(file.bytes[6_000_000..<6_100_000]))
        let whole = try RawHTTPClient.get(url: url, timeout: 20)
        XCTAssertEqual(whole.body, file.bytes)
        let requests = fixture.origin.accessLog().filter { $0.uri == "/whole.bin" }
        XCTAssertTrue(requests.allSatisfy { $0.status == 200 }, "the origin ignored every Range")
        XCTAssertLessThanOrEqual(requests.count, 4, "origin requests: \(requests.count)")
    }
}
