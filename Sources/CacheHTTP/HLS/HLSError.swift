// Line numbers are 1-based and count LF-terminated lines, as an editor shows them.

/// What is wrong with an attribute list (RFC 8216bis §4.2).
package enum HLSAttributeProblem: Error, Sendable, Equatable {
    case unterminatedQuote  // no closing quote before the end of the line
    case missingEquals  // `METHOD=NONE,FOO`
    case missingValue  // `URI=,`
    case emptyName
    case textAfterQuotedString  // `URI="a"b`
}

/// The rewriter fails only on the first four cases; the parser also on the values it reads.
package enum HLSError: Error, Sendable, Equatable {
    case missingHeader  // empty input, binary data, or a first line other than `#EXTM3U`
    case invalidPlaylistURL(String)  // not an absolute http(s) URL
    case malformedAttributes(line: Int, tag: String, problem: HLSAttributeProblem)
    /// The map's value cannot stand where the URI stood (a line break; a `"` in a
    /// quoted-string; a comma, quote or blank unquoted).
    case unusableReplacement(String)
    case missingAttribute(line: Int, tag: String, attribute: String)
    /// A value not of its type; `attribute` is nil for tags without an attribute list
    /// (EXTINF, EXT-X-BYTERANGE).
    case invalidValue(line: Int, tag: String, attribute: String?)
    /// Not after a sub-range of the same resource (RFC 8216bis §4.4.4.2).
    case byteRangeWithoutOffset(line: Int)
    case missingURI(line: Int)  // EXT-X-STREAM-INF or EXTINF with no URI line after it
    case mixedPlaylist(line: Int)  // both multivariant and media tags: clients must reject it (§4.1)
    case missingTargetDuration
}
