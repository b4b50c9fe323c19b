import CacheHTTP
import XCTest

final class HTTPDateTests: XCTestCase {
    func testKnownValues() {
        let cases: [(Int, String)] = [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),   // leap day, century leap year
            (1_234_567_890, "Fri, 13 Feb 2009 23:31:30 GMT"),
            (1_700_000_000, "Tue, 14 Nov 2023 22:13:20 GMT"),
            (2_147_483_647, "Tue, 19 Jan 2038 03:14:07 GMT"),
            (4_107_542_399, "Sun, 28 Feb 2100 23:59:59 GMT"),  // 2100 is not a leap year
            (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (-1, "Thu, 01 Jan 1970 00:00:00 GMT"),              // clamped
        ]
        for (t, s) in cases { XCTAssertEqual(HTTPDate.string(epochSeconds: t), s, "\(t)") }
    }

    /// Cross-checks every day for ~200 years against a naive day counter.
    func testAgainstNaiveCalendar() {
        let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        var y = 1970, m = 1, d = 1
        for day in 0..<(200 * 366) {
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
            let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
            let dd = d < 10 ? "0\(d)" : "\(d)"
            let expected = "\(days[day % 7]), \(dd) \(months[m - 1]) \(y) 12:34:56 GMT"
            XCTAssertEqual(HTTPDate.string(epochSeconds: day * 86_400 + 45_296), expected)
            d += 1
            if d > lengths[m - 1] { d = 1; m += 1 }
            if m > 12 { m = 1; y += 1 }
        }
    }
}
