import CacheLoading

/// One entry of the disk cache.
public struct CachedResource: Sendable, Equatable {
    /// The origin URL it was first cached from.
    public var url: String
    /// Total length at the origin, when known.
    public var totalLength: Int64?
    public var contentType: String?
    /// Bytes held in the cache.
    public var cachedBytes: Int64
    /// Cached byte ranges (inclusive positions).
    public var cachedRanges: [ClosedRange<Int64>]
    /// Seconds since 1970 of the last use.
    public var lastAccess: Double
    /// Every byte is cached: the entry can be exported as one file.
    public var isComplete: Bool
    /// A client is reading it right now (it is not evicted meanwhile).
    public var isInUse: Bool
    /// Kept out of eviction by a pinning preload until `unpin(_:)`.
    public var isPinned = false
    /// Which stored entry of its URL this is (`httpcache cache list`): "primary" (proxy URLs read it),
    /// "forward" (forward or reverse requests with other fields), "vary" (a variant the origin's Vary
    /// selects) or "encoding" (another content coding). Removing or exporting the URL acts on all of them.
    public var variant = "primary"

    public init(url: String, totalLength: Int64?, contentType: String?, cachedBytes: Int64,
                cachedRanges: [ClosedRange<Int64>], lastAccess: Double, isComplete: Bool, isInUse: Bool) {
        self.url = url
        self.totalLength = totalLength
        self.contentType = contentType
        self.cachedBytes = cachedBytes
        self.cachedRanges = cachedRanges
        self.lastAccess = lastAccess
        self.isComplete = isComplete
        self.isInUse = isInUse
    }

    /// An entry as the cache operations list it (here or through a proxy's admin routes).
    package init(_ entry: CacheEntry) {
        self.init(url: entry.url, totalLength: entry.totalLength, contentType: entry.contentType,
                  cachedBytes: entry.cachedBytes, cachedRanges: entry.cachedRanges.compactMap { $0.count == 2 ? $0[0]...$0[1] : nil },
                  lastAccess: Double(entry.lastAccess) / 1000, isComplete: entry.isComplete, isInUse: entry.isInUse)
        isPinned = entry.isPinned
        variant = entry.variant?.rawValue ?? "primary"
    }
}
