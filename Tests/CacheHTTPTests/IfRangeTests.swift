import CacheHTTP
import XCTest

final class IfRangeTests: XCTestCase {
    func testAllowsRange() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let cases: [(ifRange: String, etag: String?, lastModified: String?, allowed: Bool)] = [
            ("\"abc\"", "\"abc\"", nil, true),                 // strong match
            ("  \"abc\" ", "\"abc\"", nil, true),              // OWS trimmed
            ("\"abc\"", "\"abd\"", date, false),
            ("\"abc\"", "W/\"abc\"", nil, false),              // weak stored tag
            ("W/\"abc\"", "\"abc\"", nil, false),              // weak If-Range tag
            ("W/\"abc\"", "W/\"abc\"", nil, false),
            ("\"abc\"", nil, date, false),                     // no ETag to compare
            ("\"abc", "\"abc", nil, false),                    // malformed tag
            ("\"\"", "\"\"", nil, true),                       // empty opaque-tag is valid
            (date, nil, date, true),                           // date match
            (date, "\"abc\"", date, true),
            (" \(date) ", nil, date, true),
            (date, nil, "Sun, 06 Nov 1994 08:49:38 GMT", false), // mismatch
            ("Sunday, 06-Nov-94 08:49:37 GMT", nil, date, false),  // other format, not equal
            (date, "\"abc\"", nil, false),                     // no Last-Modified
            (date, nil, nil, false),
            ("", nil, "", false),
        ]
        for c in cases {
            XCTAssertEqual(IfRange.allowsRange(c.ifRange, etag: c.etag, lastModified: c.lastModified), c.allowed,
                           "\(c)")
        }
    }
}
