import XCTest
import CacheStorage
@testable import CacheLoading

final class SlicePlannerTests: XCTestCase {
    /// The plan of the issue: 200-499 and 700-799 cached, 0-999 asked.
    func testThreeGapPlan() {
        let plan = SlicePlanner.plan(0..<1000, available: RangeSet([200..<500, 700..<800]), inFlight: [])
        XCTAssertEqual(plan, [.fetch(0..<200), .cached(200..<500), .fetch(500..<700), .cached(700..<800), .fetch(800..<1000)])
    }

    func testFullyCachedAndFullyMissing() {
        XCTAssertEqual(SlicePlanner.plan(10..<20, available: RangeSet([0..<100]), inFlight: []), [.cached(10..<20)])
        XCTAssertEqual(SlicePlanner.plan(10..<20, available: RangeSet(), inFlight: []), [.fetch(10..<20)])
        XCTAssertEqual(SlicePlanner.plan(10..<10, available: RangeSet(), inFlight: []), [])
    }

    func testMissingBytesBeingDownloadedAreAwaitedNotFetched() {
        // A download at position 100 heading to 600 covers 150..<600.
        let inFlight = [InFlight(id: 7, pending: 100..<600)]
        let plan = SlicePlanner.plan(150..<1000, available: RangeSet(), inFlight: inFlight)
        XCTAssertEqual(plan, [.await(150..<600, download: 7), .fetch(600..<1000)])
    }

    func testFetchStopsWhereAnotherDownloadTakesOver() {
        let inFlight = [InFlight(id: 1, pending: 400..<800)]
        let plan = SlicePlanner.plan(0..<1000, available: RangeSet(), inFlight: inFlight)
        XCTAssertEqual(plan, [.fetch(0..<400), .await(400..<800, download: 1), .fetch(800..<1000)])
    }

    func testFarAheadOfADownloadStartsOwnFetch() {
        // The download is at 0 and the reader wants 50 MB in: waiting would take too long.
        let inFlight = [InFlight(id: 1, pending: 0..<100_000_000)]
        let plan = SlicePlanner.plan(50_000_000..<50_001_000, available: RangeSet(), inFlight: inFlight, joinWindow: 1 << 20)
        XCTAssertEqual(plan, [.fetch(50_000_000..<50_001_000)])
        let near = SlicePlanner.plan(500_000..<501_000, available: RangeSet(), inFlight: inFlight, joinWindow: 1 << 20)
        XCTAssertEqual(near, [.await(500_000..<501_000, download: 1)])
    }

    func testStepsCoverTheRangeExactlyOnce() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var available = RangeSet()
            for _ in 0..<5 {
                let a = Int64.random(in: 0..<1000, using: &generator)
                available.insert(a..<min(1000, a + Int64.random(in: 1...200, using: &generator)))
            }
            let start = Int64.random(in: 0..<1000, using: &generator)
            let range = start..<Int64.random(in: start...1000, using: &generator)
            let plan = SlicePlanner.plan(range, available: available, inFlight: [InFlight(id: 1, pending: 300..<600)])
            var cursor = range.lowerBound
            for step in plan {
                XCTAssertEqual(step.range.lowerBound, cursor)
                XCTAssertFalse(step.range.isEmpty)
                if case .cached(let r) = step { XCTAssertTrue(available.covers(r)) } else {
                    XCTAssertTrue(available.intersection(step.range).isEmpty)
                }
                cursor = step.range.upperBound
            }
            XCTAssertEqual(cursor, range.upperBound)
        }
    }
}
