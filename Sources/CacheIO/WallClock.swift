import Glibc

/// Milliseconds since 1970 (CLOCK_REALTIME), from any thread: the default of
/// the store's clock (`ResourceStore.clock`: LRU, freshness, back-offs, which
/// a test replaces to make time pass), the access log, the age of copies of
/// hits, the Date of responses.
package enum WallClock {
    package static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Whole seconds of `milliseconds()`.
    package static func seconds() -> Int64 { milliseconds() / 1000 }

    /// Nanoseconds of CLOCK_MONOTONIC, for durations (whole milliseconds
    /// would round every fast response of the access log to 0).
    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
