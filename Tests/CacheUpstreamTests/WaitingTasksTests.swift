@testable import CacheUpstream
import XCTest

/// Requests waiting for an origin connection go earliest deadline first: a
/// player's CMCD `dl` puts the one closest to stalling at the front; one
/// without a deadline is due `defaultDelay` after it came, and ties keep
/// their order of arrival.
final class WaitingTasksTests: XCTestCase {
    func testTheRequestClosestToStallingGoesFirst() {
        var queue = WaitingQueue<String>()
        queue.append("no-dl-early", now: 1_000)                 // due 11 000
        queue.append("dl-8s", now: 2_000, deadline: 8_000)      // due 10 000
        queue.append("dl-500ms", now: 3_000, deadline: 500)     // due 3 500
        queue.append("no-dl-late", now: 4_000)                  // due 14 000
        queue.append("dl-12s", now: 5_000, deadline: 12_000)    // due 17 000
        queue.append("tie", now: 10_500, deadline: 500)         // due 11 000, after the earlier arrival
        var order: [String] = []
        while let first = queue.first {
            order.append(first)
            queue.removeFirst()
        }
        XCTAssertEqual(order, ["dl-500ms", "dl-8s", "no-dl-early", "tie", "no-dl-late", "dl-12s"])
        XCTAssertTrue(queue.isEmpty)
    }

    func testWithoutDeadlinesItIsFirstInFirstOut() {
        var queue = WaitingQueue<Int>()
        for n in 0..<500 { queue.append(n, now: 7) }
        var order: [Int] = []
        while let first = queue.first {
            order.append(first)
            queue.removeFirst()
            if order.count == 100 { for n in 500..<600 { queue.append(n, now: 7) } }
        }
        XCTAssertEqual(order, Array(0..<600))
    }
}
