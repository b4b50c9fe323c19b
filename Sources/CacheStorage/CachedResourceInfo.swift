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
    /// Which of its URL's entries this is (one URL may have several).
    package var variant: EntryVariant = .primary
}

/// Which stored entry of a URL one is, so `cache list` tells two rows of one URL apart (issue 35).
package enum EntryVariant: String, Sendable, Codable, Equatable {
    /// The entry proxy URLs read, and forward or reverse requests with a proxy URL's fields.
    case primary
    /// A forward or reverse request with other fields (a player's own): the origin may answer it otherwise.
    case forward
    /// A variant the origin's Vary field selects (RFC 9111 §4.1).
    case vary
    /// A content coding the client of the primary entry did not accept.
    case encoding
}
