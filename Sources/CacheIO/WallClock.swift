import Glibc

/// Milliseconds since 1970 (CLOCK_REALTIME), from any thread: the store's
/// LRU and HTTP times, the access log, the age of copies of hits.
package enum WallClock {
    package static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Nanoseconds of CLOCK_MONOTONIC, for durations (whole milliseconds
    /// would round every fast response of the access log to 0).
    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
