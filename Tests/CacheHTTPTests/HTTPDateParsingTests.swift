import CacheHTTP
import XCTest

final class HTTPDateParsingTests: XCTestCase {
    func testFormats() {
        let cases: [(String, Int?, UInt)] = [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777, #line),       // IMF-fixdate
            ("  Sun, 06 Nov 1994 08:49:37 GMT ", 784_111_777, #line),
            ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777, #line),      // RFC 850
            ("Sun Nov  6 08:49:37 1994", 784_111_777, #line),            // asctime
            ("Sun Nov 16 08:49:37 1994", 784_111_777 + 10 * 86_400, #line),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0, #line),
            ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400, #line),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799, #line),
            ("Wednesday, 01-Jan-25 00:00:00 GMT", 1_735_689_600, #line), // two-digit year < 70 → 20xx
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1, #line),
            // RFC 9111 §4.2: a cache matches dates case-insensitively.
            ("sun, 06 nov 1994 08:49:37 gmt", 784_111_777, #line),
            ("SUNDAY, 06-NOV-94 08:49:37 GMT", 784_111_777, #line),
            ("SUN NOV  6 08:49:37 1994", 784_111_777, #line),
            ("Sun, 06 Nov 1994 08:49:37 UTC", nil, #line),
            ("Sun, 06 Nov 1994 08:49:37", nil, #line),
            ("Sun, 30 Feb 1994 08:49:37 GMT", nil, #line),                // no such day
            ("Sun, 06 Foo 1994 08:49:37 GMT", nil, #line),
            ("Sun, 06 Nov 1994 24:00:00 GMT", nil, #line),
            ("Sun, 06 Nov 94 08:49:37 GMT", nil, #line),
            ("0", nil, #line),
            ("-1", nil, #line),
            ("", nil, #line),
            ("Sun, 06 Nov 1994 08:49:37 GMTX", nil, #line),
        ]
        for (text, expected, line) in cases {
            XCTAssertEqual(HTTPDate.epochSeconds(text), expected, text, line: line)
        }
    }

    func testRoundTripsFormatter() {
        for t in stride(from: 0, to: 4_000_000_000, by: 7_777_777) {
            XCTAssertEqual(HTTPDate.epochSeconds(HTTPDate.string(epochSeconds: t)), t)
        }
    }
}
