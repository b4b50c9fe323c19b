@testable import CacheLoading
import XCTest

final class ErrorRecordsTests: XCTestCase {
    func testBoundedUnderAFlood() {
        var records = ErrorRecords(limit: 1000)
        for i in 0..<100_000 {
            records.record("404", for: "http://o/\(i)")
            XCTAssertLessThanOrEqual(records.count, 1000)
        }
        XCTAssertEqual(records.message(for: "http://o/99999"), "404", "the newest is kept")
        XCTAssertNil(records.message(for: "http://o/0"), "the oldest is gone")
    }

    func testRecentlyReadEntrySurvives() {
        var records = ErrorRecords(limit: 10)
        records.record("kept", for: "a")
        for i in 0..<100 {
            XCTAssertEqual(records.message(for: "a"), "kept", "read at \(i)")
            records.record("x", for: "\(i)")
        }
        records.remove("a")
        XCTAssertNil(records.message(for: "a"))
    }
}
