import Glibc
import Synchronization

/// Milliseconds since 1970 (CLOCK_REALTIME), from any thread: the store's
/// LRU and HTTP times (freshness, ages, storage fault back-offs), the access
/// log, the age of copies of hits, the Date of responses.
///
/// The one clock of the cache's time decisions, so a test makes time pass
/// with `advance(byMilliseconds:)` instead of sleeping. Loop timers (flushes,
/// timeouts) run on the loop's monotonic clock and are not moved by it.
package enum WallClock {
    /// What `advance` added, for this process. Atomic: read on every loop thread.
    private static let offset = Atomic<Int64>(0)

    package static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000 + offset.load(ordering: .relaxed)
    }

    /// Whole seconds of `milliseconds()`.
    package static func seconds() -> Int64 { milliseconds() / 1000 }

    /// Moves this process's clock forward (tests): every time decision then
    /// sees that much more time passed, as if the test had slept.
    package static func advance(byMilliseconds delta: Int64) {
        precondition(delta >= 0, "the clock only moves forward")
        offset.add(delta, ordering: .relaxed)
    }

    /// Nanoseconds of CLOCK_MONOTONIC, for durations (whole milliseconds
    /// would round every fast response of the access log to 0).
    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
