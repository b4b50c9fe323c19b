/// A snapshot of one cache entry, for listings.
package struct CachedResourceInfo: Sendable, Equatable {
    package var url: String
    package var totalLength: Int64?
    package var contentType: String?
    package var cachedBytes: Int64
    package var ranges: RangeSet
    /// Milliseconds since 1970.
    package var lastAccess: Int64
    package var isComplete: Bool
    package var inUse: Bool
    /// Pinned by a preload or a download (never evicted by the size limit).
    package var isPinned: Bool
}
