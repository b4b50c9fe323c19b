// Why a playlist could not be rewritten or parsed. Line numbers are 1-based
// and count LF-terminated lines, so they match what an editor shows.

/// What is wrong with an attribute list (RFC 8216bis §4.2).
package enum HLSAttributeProblem: Error, Sendable, Equatable {
    /// A quoted-string with no closing quote before the end of the line.
    case unterminatedQuote
    /// A name with no "=" after it (`METHOD=NONE,FOO`).
    case missingEquals
    /// "=" with nothing after it (`URI=,`).
    case missingValue
    /// "=" with no name before it.
    case emptyName
    /// Bytes other than "," after a closing quote (`URI="a"b`).
    case textAfterQuotedString
}

/// A playlist that is not one, or that breaks the grammar where it matters.
///
/// The rewriter fails only on the first four cases; the parser also reports
/// missing or invalid values of the tags it reads.
package enum HLSError: Error, Sendable, Equatable {
    /// Empty input, binary data, or a first line other than `#EXTM3U`.
    case missingHeader
    /// The playlist's own URL is not an absolute http(s) URL.
    case invalidPlaylistURL(String)
    /// An attribute list that cannot be split into names and values.
    case malformedAttributes(line: Int, tag: String, problem: HLSAttributeProblem)
    /// The mapping closure returned a value that cannot stand where the URI
    /// stood (a line break anywhere; a `"` inside a quoted-string; a comma,
    /// quote or blank in an unquoted value).
    case unusableReplacement(String)
    /// A required attribute is absent (`BANDWIDTH` of EXT-X-STREAM-INF, …).
    case missingAttribute(line: Int, tag: String, attribute: String)
    /// A tag value or attribute value that is not of its type (a number, a
    /// byte range, a resolution, an enumerated string …); `attribute` is nil
    /// for tags whose value is not an attribute list (EXTINF, EXT-X-BYTERANGE).
    case invalidValue(line: Int, tag: String, attribute: String?)
    /// A byte range without offset that does not follow a sub-range of the
    /// same resource (RFC 8216bis §4.4.4.2).
    case byteRangeWithoutOffset(line: Int)
    /// EXT-X-STREAM-INF or EXTINF with no URI line after it.
    case missingURI(line: Int)
    /// A playlist holding both multivariant tags (EXT-X-STREAM-INF,
    /// EXT-X-I-FRAME-STREAM-INF, EXT-X-MEDIA) and media tags (EXTINF,
    /// EXT-X-TARGETDURATION): clients must reject it (§4.1).
    case mixedPlaylist(line: Int)
    /// A media playlist without EXT-X-TARGETDURATION.
    case missingTargetDuration
}
