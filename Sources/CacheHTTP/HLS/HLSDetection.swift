// Is this response a playlist? By its type when the origin names one, else
// (a generic or missing type) by the path's extension or the body's first
// bytes, because many origins serve playlists as octet-stream or text.

extension HLS {
    /// Whether a response is an HLS playlist.
    ///
    /// - An HLS media type (`application/vnd.apple.mpegurl`,
    ///   `application/x-mpegurl`, `audio/mpegurl`, `audio/x-mpegurl`; any case,
    ///   parameters ignored) says yes.
    /// - A generic type (`application/octet-stream`, `binary/octet-stream`,
    ///   `text/plain`) or none defers to the path (`.m3u8`/`.m3u`, any case;
    ///   a query or fragment after it is ignored) or to the body starting with
    ///   `#EXTM3U` (after an optional UTF-8 BOM).
    /// - Any other type says no.
    package static func isPlaylist<Prefix: Collection<UInt8>>(
        contentType: String?, path: String, bodyPrefix: Prefix
    ) -> Bool {
        switch contentType.map(bareMediaType) ?? "" {
        case "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl": return true
        case "", "application/octet-stream", "binary/octet-stream", "text/plain":
            return hasPlaylistExtension(path) || startsWithPlaylistHeader(bodyPrefix)
        default: return false
        }
    }

    /// Whether `bytes` start with `#EXTM3U`, after an optional UTF-8 BOM.
    package static func startsWithPlaylistHeader<Prefix: Collection<UInt8>>(_ bytes: Prefix) -> Bool {
        // On contiguous bytes (every caller's): the generic `starts(with:)` costs thousands of instructions.
        bytes.withContiguousStorageIfAvailable(startsWithPlaylistHeader) ?? startsWithPlaylistHeader(Array(bytes.prefix(10)))
    }

    private static func startsWithPlaylistHeader(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let body = UnsafeBufferPointer(rebasing: bytes[textStart(bytes, skippingBlanks: false)...])
        let header: StaticString = "#EXTM3U"
        return body.count >= header.utf8CodeUnitCount
            && header.withUTF8Buffer { body.prefix(header.utf8CodeUnitCount).elementsEqual($0) }
    }

    /// Whether the last path segment ends in `.m3u8` or `.m3u` (any case).
    /// Takes a path or a whole URL; the query and fragment are not looked at.
    package static func hasPlaylistExtension(_ path: String) -> Bool {
        ASCII.pathEnds(path, with: ".m3u8") || ASCII.pathEnds(path, with: ".m3u")
    }
}
