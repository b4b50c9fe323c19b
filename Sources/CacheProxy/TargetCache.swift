import CacheHTTP

/// Proxy targets already decoded: a player asks for one proxy URL again and again, and decoding it costs
/// several dictionary lookups. Bounded: when full it starts over. Loop thread only.
struct TargetCache {
    struct Entry {
        let url: OriginURL
        let urlString: String
        /// The store's key (SHA-256 of the cache key), hashed once per target.
        let storeKey: String
    }

    static let limit = 1024
    private var entries: [String: Entry] = [:]
    /// Forward and reverse modes: targets mapped to their origin URL and store key (parsing, the URL
    /// string, the cache key's rules and a SHA-256 were half of such a hit's instructions).
    private var transparentEntries: [String: Entry] = [:]
    private var reverseOrigin: OriginURL?

    mutating func entry(for target: String, storeKey: (String) -> String) -> Entry? {
        if let hit = entries[target] { return hit }
        // Players append a query of their own to `/p/` URLs (CMCD), which decoding ignores: kept without it.
        let key = Self.withoutPlayerQuery(target)
        if key != target, let hit = entries[key] { return hit }
        guard let url = ProxyURL.originURL(fromTarget: key) else { return nil }
        if entries.count >= Self.limit { entries.removeAll(keepingCapacity: true) }
        let urlString = url.string
        let entry = Entry(url: url, urlString: urlString, storeKey: storeKey(urlString))
        entries[key] = entry
        return entry
    }

    /// A `/p/` target without its query (the base form `/t/` keeps it: it is part of the origin URL).
    private static func withoutPlayerQuery(_ target: String) -> String {
        guard target.hasBytePrefix("/p/"), let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else {
            return target
        }
        return String(target[..<mark])
    }

    /// The origin a forward- or reverse-proxy target names (see `RequestRoute.originURL`).
    mutating func transparentEntry(for target: String, reverseOrigin: OriginURL?,
                                   storeKey: (String) -> String) -> Entry? {
        if reverseOrigin != self.reverseOrigin {  // a reload changed it: start over
            transparentEntries.removeAll()
            self.reverseOrigin = reverseOrigin
        }
        if let hit = transparentEntries[target] { return hit }
        guard let url = RequestRoute.originURL(target: target, reverseOrigin: reverseOrigin) else { return nil }
        if transparentEntries.count >= Self.limit { transparentEntries.removeAll(keepingCapacity: true) }
        let urlString = url.string
        let entry = Entry(url: url, urlString: urlString, storeKey: storeKey(urlString))
        transparentEntries[target] = entry
        return entry
    }
}
