import CacheStorage

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

    init(_ info: CachedResourceInfo) {
        url = info.url
        totalLength = info.totalLength
        contentType = info.contentType
        cachedBytes = info.cachedBytes
        cachedRanges = info.ranges.ranges.map { $0.lowerBound...($0.upperBound - 1) }
        lastAccess = Double(info.lastAccess) / 1000
        isComplete = info.isComplete
        isInUse = info.inUse
    }
}
