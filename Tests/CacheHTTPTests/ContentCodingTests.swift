import XCTest
@testable import CacheHTTP

final class ContentCodingTests: XCTestCase {
    func testAcceptance() {
        let cases: [(accept: [String], coding: String, accepted: Bool, line: UInt)] = [
            ([], "identity", true, #line),
            ([], "gzip", false, #line),                 // no Accept-Encoding: identity only (conservative)
            (["gzip"], "gzip", true, #line),
            (["GZIP"], "gzip", true, #line),
            (["x-gzip"], "gzip", true, #line),
            (["br, gzip;q=0"], "gzip", false, #line),
            (["gzip;q=0.5"], "gzip", true, #line),
            (["*"], "br", true, #line),
            (["*;q=0"], "br", false, #line),
            (["*;q=0", "br"], "br", true, #line),       // the named coding wins over *
            (["gzip"], "gzip, br", false, #line),       // every coding applied must be accepted
            (["gzip", "br"], "gzip, br", true, #line),
            (["deflate"], "identity, ", true, #line),
        ]
        for c in cases {
            let headers = HTTPHeaders(c.accept.map { ("Accept-Encoding", $0) })
            XCTAssertEqual(ContentCoding.accepts(headers, coding: c.coding), c.accepted, "\(c.accept) \(c.coding)",
                           line: c.line)
        }
    }
}
