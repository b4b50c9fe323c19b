/// A snapshot of one cache entry, for listings.
package struct CachedResourceInfo: Sendable, Equatable {
    package var url: String
    package var totalLength: Int64?
    package var contentType: String?
    package var cachedBytes: Int64
    package var ranges: RangeSet
    package var lastAccess: Int64  // milliseconds since 1970
    package var isComplete: Bool
    package var inUse: Bool
    package var isPinned: Bool  // pinned by a preload or a download (never evicted by the size limit)
    /// Which of its URL's entries this is (one URL may have several).
    package var variant: EntryVariant = .primary
}

/// Which stored entry of a URL one is, so `cache list` tells two rows of one URL apart (issue 35).
package enum EntryVariant: String, Sendable, Codable, Equatable {
    case primary  // the entry proxy URLs read, and forward or reverse requests with a proxy URL's fields
    /// A forward or reverse request with other fields (a player's own): the origin may answer it otherwise.
    case forward
    case vary  // a variant the origin's Vary field selects (RFC 9111 §4.1)
    case encoding  // a content coding the client of the primary entry did not accept
}
