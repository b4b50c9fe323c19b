@testable import CacheLoading
import XCTest

/// What prefetches stored and what became of it, as /stats counts it.
final class PrefetchLedgerTests: XCTestCase {
    func testUsedOnceEvictedUnusedAndForgotten() {
        let ledger = PrefetchLedger()
        XCTAssertFalse(ledger.isPrefetched("a"))
        XCTAssertFalse(ledger.requested("a"), "nothing prefetched: no use counted")
        ledger.started("a")
        ledger.stored(bytes: 100)
        ledger.started("b")
        ledger.stored(bytes: 50)
        ledger.started("c")
        XCTAssertTrue(ledger.isPrefetched("a"))
        XCTAssertTrue(ledger.requested("a"))
        XCTAssertTrue(ledger.requested("a"), "still from a prefetch")
        ledger.evicted("a")  // used: not counted as evicted unused
        ledger.evicted("b")
        ledger.forget("c")  // a prefetch stopped before it stored anything
        ledger.evicted("c")
        var expected = PrefetchCounts()
        expected.segments = 2
        expected.bytes = 150
        expected.used = 1
        expected.evictedUnused = 1
        XCTAssertEqual(ledger.counts, expected)
        XCTAssertFalse(ledger.isPrefetched("a"), "gone with its entry")
    }

    func testBounded() {
        let ledger = PrefetchLedger()
        for index in 0...PrefetchLedger.limit { ledger.started("k\(index)") }
        XCTAssertFalse(ledger.isPrefetched("k0"), "the oldest let go")
        XCTAssertTrue(ledger.isPrefetched("k\(PrefetchLedger.limit)"))
    }
}
