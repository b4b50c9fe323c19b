import CacheHTTP
import XCTest

/// RFC 9111 §4.3.3: what a revalidation's answer does to the stored response.
final class RevalidationOutcomeTests: XCTestCase {
    func testOutcomes() {
        let cases: [(stored: Int, received: Int, anyStatus: Bool, expected: RevalidationOutcome, line: UInt)] = [
            (200, 304, true, .notModified, #line),
            (404, 304, true, .notModified, #line),
            (200, 200, true, .compare, #line),
            (200, 206, false, .compare, #line),            // a 206 speaks of a 200
            (200, 416, true, .compare, #line),             // so does a 416 to the 1-byte range
            (404, 404, true, .compare, #line),
            (500, 500, true, .compare, #line),             // a stored 500 confirmed by a 500
            (404, 200, true, .replace, #line),             // the live-segment case
            (404, 206, true, .replace, #line),
            (203, 200, true, .replace, #line),
            (204, 206, true, .replace, #line),
            (301, 200, true, .replace, #line),
            (500, 206, true, .replace, #line),
            (200, 404, true, .replace, #line),
            (404, 410, true, .replace, #line),
            (200, 404, false, .error, #line),              // proxy URLs keep their 200
            (200, 503, true, .error, #line),               // a 5xx: stale-if-error may apply
            (404, 502, true, .error, #line),
        ]
        for c in cases {
            XCTAssertEqual(Revalidation.outcome(storedStatus: c.stored, responseStatus: c.received,
                                                storesAnyStatus: c.anyStatus), c.expected, line: c.line)
        }
    }
}
