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
        // Asked of every new resource: a scan of the bytes, no allocation.
        var url = url
        return url.withUTF8 { u in
            guard let mark = u.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }),
                  u[mark] == UInt8(ascii: "?") else { return false }  // a fragment is not a query
            var i = mark + 1
            while i < u.count, u[i] != UInt8(ascii: "#") {
                let start = i
                while i < u.count, u[i] != UInt8(ascii: "&"), u[i] != UInt8(ascii: "="), u[i] != UInt8(ascii: "#") { i += 1 }
                let name = UnsafeBufferPointer(rebasing: u[start..<i])
                if blockingParameters.contains(where: { name.elementsEqual($0.utf8) }) { return true }
                while i < u.count, u[i] != UInt8(ascii: "&"), u[i] != UInt8(ascii: "#") { i += 1 }
                if i < u.count, u[i] == UInt8(ascii: "&") { i += 1 }
            }
            return false
        }
    }

    private static let blockingParameters = ["_HLS_msn", "_HLS_part", "_HLS_skip"]
}
