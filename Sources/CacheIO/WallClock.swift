import Glibc

/// CLOCK_REALTIME from any thread: the store's default clock (`ResourceStore.clock`, which tests
/// replace), the access log, the age of copies of hits, the Date of responses.
package enum WallClock {
    package static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    package static func seconds() -> Int64 { milliseconds() / 1000 }

    /// For durations: milliseconds would round every fast response in the access log to 0.
    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
