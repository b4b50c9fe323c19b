extension HLS {
    /// Half the target duration: a client must not reload an unchanged live playlist sooner
    /// (RFC 8216 §6.3.4), so reusing a copy that long hides nothing the protocol does not.
    package static func liveReuseMilliseconds(targetDuration seconds: Int) -> Int {
        let s = max(0, seconds)
        return s > Int.max / 500 ? Int.max : s * 500
    }

    /// A blocking reload or delta update (RFC 8216bis §6.2.5): it waits for a future playlist
    /// and passes through uncached. Asked of every new resource: no allocation.
    package static func isBlockingReloadRequest(_ url: String) -> Bool {
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
