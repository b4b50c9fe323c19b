// Live playlists: how long a proxy may reuse one, and which requests must
// reach the origin every time.

extension HLS {
    /// Half the target duration, in milliseconds: a client must not reload
    /// an unchanged live playlist sooner than that (RFC 8216 §6.3.4), so a
    /// proxy serving the same copy for that long never hides a new segment
    /// from a client for longer than the protocol already allows. Negative
    /// durations count as 0.
    package static func liveReuseMilliseconds(targetDuration seconds: Int) -> Int {
        let s = max(0, seconds)
        return s > Int.max / 500 ? Int.max : s * 500
    }

    /// Whether a request URL (or its path and query) asks for a blocking
    /// playlist reload or a delta update of low-latency HLS: a query
    /// parameter named `_HLS_msn`, `_HLS_part` or `_HLS_skip` (RFC 8216bis §6.2.5). Such
    /// requests wait for a future playlist and must pass through uncached.
    package static func isBlockingReloadRequest(_ url: String) -> Bool {
        let all = url.utf8
        let u = all[..<(all.firstIndex(of: UInt8(ascii: "#")) ?? all.endIndex)] // a fragment is not a query
        guard let q = u.firstIndex(of: UInt8(ascii: "?")) else { return false }
        for parameter in u[u.index(after: q)...].split(separator: UInt8(ascii: "&")) {
            let name = parameter.prefix { $0 != UInt8(ascii: "=") }
            if blockingParameters.contains(where: { name.elementsEqual($0.utf8) }) { return true }
        }
        return false
    }

    private static let blockingParameters = ["_HLS_msn", "_HLS_part", "_HLS_skip"]
}
