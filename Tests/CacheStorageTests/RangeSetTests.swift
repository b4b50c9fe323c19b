import XCTest
@testable import CacheStorage

final class RangeSetTests: XCTestCase {
    func testInsertMergesOverlappingAndAdjacentRanges() {
        var set = RangeSet()
        set.insert(10..<20)
        set.insert(30..<40)
        XCTAssertEqual(set.ranges, [10..<20, 30..<40])
        set.insert(20..<25)  // adjacent: merges
        XCTAssertEqual(set.ranges, [10..<25, 30..<40])
        set.insert(5..<35)  // swallows both
        XCTAssertEqual(set.ranges, [5..<40])
        set.insert(0..<0)  // empty: ignored
        XCTAssertEqual(set.ranges, [5..<40])
        set.insert(50..<60)
        set.insert(0..<1)
        XCTAssertEqual(set.ranges, [0..<1, 5..<40, 50..<60])
        XCTAssertEqual(set.byteCount, 1 + 35 + 10)
    }

    func testRemoveSplitsRanges() {
        var set = RangeSet([0..<100])
        set.remove(10..<20)
        XCTAssertEqual(set.ranges, [0..<10, 20..<100])
        set.remove(0..<15)
        XCTAssertEqual(set.ranges, [20..<100])
        set.clip(to: 50)
        XCTAssertEqual(set.ranges, [20..<50])
        set.remove(0..<1000)
        XCTAssertTrue(set.isEmpty)
    }

    func testLookups() {
        let set = RangeSet([200..<500, 700..<800])
        XCTAssertEqual(set.run(containing: 200), 200..<500)
        XCTAssertEqual(set.run(containing: 499), 200..<500)
        XCTAssertNil(set.run(containing: 500))
        XCTAssertNil(set.run(containing: 199))
        XCTAssertTrue(set.covers(700..<800))
        XCTAssertFalse(set.covers(450..<750))
        XCTAssertEqual(set.gaps(in: 0..<1000), [0..<200, 500..<700, 800..<1000])
        XCTAssertEqual(set.intersection(300..<750), [300..<500, 700..<750])
        XCTAssertEqual(set.gaps(in: 250..<450), [])
    }

    func testTextRoundTrip() {
        let set = RangeSet([0..<200, 500..<700])
        XCTAssertEqual(set.description, "0-199,500-699")
        XCTAssertEqual(RangeSet(parsing: "0-199,500-699"), set)
        XCTAssertEqual(RangeSet(parsing: ""), RangeSet())
        for bad in ["5-4", "a-b", "1-", "-1", "1-2,", "1--2"] {
            XCTAssertNil(RangeSet(parsing: Substring(bad)), bad)
        }
    }

    /// Random operations checked against a plain Bool array.
    func testAgainstModel() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var set = RangeSet()
            var model = [Bool](repeating: false, count: 300)
            for _ in 0..<40 {
                let a = Int.random(in: 0..<300, using: &generator)
                let b = Int.random(in: a...300, using: &generator)
                if Bool.random(using: &generator) {
                    set.insert(Int64(a)..<Int64(b))
                    for i in a..<b { model[i] = true }
                } else {
                    set.remove(Int64(a)..<Int64(b))
                    for i in a..<b { model[i] = false }
                }
                for i in 0..<300 { XCTAssertEqual(set.contains(Int64(i)), model[i]) }
                for (x, y) in zip(set.ranges, set.ranges.dropFirst()) { XCTAssertLessThan(x.upperBound, y.lowerBound) }
            }
        }
    }
}
