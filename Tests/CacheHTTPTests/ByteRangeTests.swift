@testable import CacheHTTP
import XCTest

final class ByteRangeTests: XCTestCase {
    func testRangeHeaderParser() {
        let max = Int64.max
        let cases: [(String, [ByteRangeSpec]?)] = [
            ("bytes=0-499", [.closed(first: 0, last: 499)]),
            ("bytes=500-", [.from(first: 500)]),
            ("bytes=-500", [.suffix(length: 500)]),
            ("bytes=-0", [.suffix(length: 0)]),
            ("bytes=0-0", [.closed(first: 0, last: 0)]),
            ("BYTES=0-1", [.closed(first: 0, last: 1)]),
            ("Bytes=007-010", [.closed(first: 7, last: 10)]),
            ("bytes=0-1,4-5", [.closed(first: 0, last: 1), .closed(first: 4, last: 5)]),
            ("bytes=0-1 , 4-5,\t-3", [.closed(first: 0, last: 1), .closed(first: 4, last: 5), .suffix(length: 3)]),
            ("bytes=0-1,,2-3", [.closed(first: 0, last: 1), .closed(first: 2, last: 3)]),
            ("bytes=,0-1", [.closed(first: 0, last: 1)]),
            ("bytes=0-1,", [.closed(first: 0, last: 1)]),
            ("bytes=0-1, ", [.closed(first: 0, last: 1)]),
            ("bytes=0-0,0-0", [.closed(first: 0, last: 0), .closed(first: 0, last: 0)]),
            ("bytes=99999999999999999999-", [.from(first: max)]),
            ("bytes=0-99999999999999999999", [.closed(first: 0, last: max)]),
            ("bytes=-99999999999999999999", [.suffix(length: max)]),
            ("bytes=9223372036854775807-9223372036854775807", [.closed(first: max, last: max)]),
            ("bytes= 0-1", nil),
            ("bytes =0-1", nil),
            ("bytes=0-1 ", nil),
            ("bytes=0 -1", nil),
            ("bytes=0- 1", nil),
            ("bytes=5-4", nil),
            ("items=0-1", nil),
            ("byte=0-1", nil),
            ("bytes", nil),
            ("bytes=", nil),
            ("bytes=,", nil),
            ("bytes=, ,", nil),
            ("", nil),
            ("bytes=abc", nil),
            ("bytes=-", nil),
            ("bytes=--1", nil),
            ("bytes=1-2-3", nil),
            ("bytes=+1-2", nil),
            ("bytes=1-+2", nil),
            ("bytes=-1-2", nil),
            ("bytes=0x10-20", nil),
            ("bytes=1-2;3-4", nil),
            ("bytes=0-1,abc", nil),
            ("bytes=\u{661}-2", nil),  // non-ASCII digit
            ("bytes=99999999999999999999-1", nil), // saturated first > last
        ]
        for (value, expected) in cases {
            XCTAssertEqual(RangeHeaderParser.parse(value), expected, value.debugDescription)
        }
    }

    func testResolve() {
        let cases: [(ByteRangeSpec, Int64, Range<Int64>?)] = [
            (.closed(first: 0, last: 499), 1000, 0..<500),
            (.closed(first: 0, last: 0), 1000, 0..<1),
            (.closed(first: 500, last: 5000), 1000, 500..<1000),     // clamped
            (.closed(first: 999, last: 999), 1000, 999..<1000),
            (.closed(first: 1000, last: 1000), 1000, nil),           // first == length
            (.closed(first: 0, last: .max), 1000, 0..<1000),
            (.closed(first: .max, last: .max), 1000, nil),
            (.closed(first: 0, last: 10), 0, nil),                   // empty representation
            (.from(first: 0), 1000, 0..<1000),
            (.from(first: 999), 1000, 999..<1000),
            (.from(first: 1000), 1000, nil),
            (.from(first: 0), 0, nil),
            (.suffix(length: 500), 1000, 500..<1000),
            (.suffix(length: 1000), 1000, 0..<1000),
            (.suffix(length: 5000), 1000, 0..<1000),                 // longer than length: whole
            (.suffix(length: .max), 1000, 0..<1000),
            (.suffix(length: 1), 1, 0..<1),
            (.suffix(length: 0), 1000, nil),
            (.suffix(length: 5), 0, nil),
            (.closed(first: 0, last: .max), .max, 0..<Int64.max),
        ]
        for (spec, length, expected) in cases {
            XCTAssertEqual(spec.resolve(length: length), expected, "\(spec) of \(length)")
        }
    }

    func testContentRangeParse() {
        let cases: [(String, ContentRange?)] = [
            ("bytes 0-499/1234", ContentRange(range: 0..<500, total: 1234)),
            ("bytes 0-0/1", ContentRange(range: 0..<1, total: 1)),
            ("bytes 1233-1233/1234", ContentRange(range: 1233..<1234, total: 1234)),
            ("bytes 0-499/*", ContentRange(range: 0..<500, total: nil)),
            ("bytes */1234", ContentRange(range: nil, total: 1234)),
            ("bytes */0", ContentRange(range: nil, total: 0)),
            ("BYTES 0-1/2", ContentRange(range: 0..<2, total: 2)),
            ("bytes 9223372036854775806-9223372036854775806/9223372036854775807",
             ContentRange(range: 9_223_372_036_854_775_806..<Int64.max, total: .max)),
            ("bytes */*", nil),
            ("bytes 5-4/10", nil),          // last < first
            ("bytes 0-10/10", nil),         // last >= total
            ("bytes 0-499/0", nil),
            ("bytes 0-499", nil),
            ("bytes 0-/10", nil),
            ("bytes -5/10", nil),
            ("bytes=0-1/2", nil),
            ("bytes  0-1/2", nil),
            ("bytes 0-1/2 ", nil),
            ("bytes 0 -1/2", nil),
            ("items 0-1/2", nil),
            ("bytes 0-1/2x", nil),
            ("bytes 0-99999999999999999999/*", nil), // overflow is an error here
            ("bytes 0-9223372036854775807/*", nil),
            ("", nil),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(ContentRange.parse(value), expected, value.debugDescription)
        }
    }

    func testContentRangeFormat() {
        let cases: [(ContentRange, String)] = [
            (ContentRange(range: 0..<500, total: 1234), "bytes 0-499/1234"),
            (ContentRange(range: 0..<1, total: 1), "bytes 0-0/1"),
            (ContentRange(range: 10..<20, total: nil), "bytes 10-19/*"),
            (ContentRange(range: nil, total: 1234), "bytes */1234"),
            (ContentRange(range: 1_000_000_000_000..<1_000_000_000_001, total: 9_000_000_000_000),
             "bytes 1000000000000-1000000000000/9000000000000"),
        ]
        for (cr, text) in cases {
            XCTAssertEqual(cr.headerValue, text)
            XCTAssertEqual(ContentRange.parse(text), cr)
        }
    }
}
