/// A recurring warning at most once per interval, counting the rest: a flood (a dead disk,
/// stalled clients) costs one log line a minute instead of one per event.
package struct LogThrottle: Sendable {
    package let intervalMilliseconds: Int64
    private var lastLoggedAt: Int64?
    private var suppressed: UInt64 = 0

    package init(intervalMilliseconds: Int64 = 60_000) { self.intervalMilliseconds = intervalMilliseconds }

    /// `now`: monotonic milliseconds. When a line is due, the occurrences it reports (this one
    /// and those suppressed before), else nil.
    package mutating func occurred(now: Int64) -> UInt64? {
        if let last = lastLoggedAt, now - last < intervalMilliseconds {
            suppressed += 1
            return nil
        }
        lastLoggedAt = now
        defer { suppressed = 0 }
        return suppressed + 1
    }

    /// The condition ended: the next occurrence logs at once.
    package mutating func reset() {
        lastLoggedAt = nil
        suppressed = 0
    }
}
