/// Lets a recurring warning through at most once per interval and counts
/// the occurrences in between, so a flood (a dead disk, a crowd of stalled
/// clients) costs one log line a minute instead of one per event.
package struct LogThrottle: Sendable {
    package let intervalMilliseconds: Int64
    private var lastLoggedAt: Int64?
    /// Occurrences not logged since the last line.
    private var suppressed: UInt64 = 0

    package init(intervalMilliseconds: Int64 = 60_000) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    /// Records one occurrence at `now` (milliseconds, any monotonic origin).
    /// Returns the number of occurrences the line should report (this one and
    /// those suppressed before it) when a line is due, else nil.
    package mutating func occurred(now: Int64) -> UInt64? {
        if let last = lastLoggedAt, now - last < intervalMilliseconds {
            suppressed += 1
            return nil
        }
        lastLoggedAt = now
        defer { suppressed = 0 }
        return suppressed + 1
    }

    /// Forgets the last line (the condition ended): the next occurrence logs at once.
    package mutating func reset() {
        lastLoggedAt = nil
        suppressed = 0
    }
}
