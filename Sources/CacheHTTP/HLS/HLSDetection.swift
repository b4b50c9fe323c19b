extension HLS {
    /// By an HLS media type (any case, parameters ignored); for a generic type or none (many
    /// origins serve playlists so), by the path's `.m3u8`/`.m3u` or a body starting `#EXTM3U`.
    package static func isPlaylist<Prefix: Collection<UInt8>>(
        contentType: String?, path: String, bodyPrefix: Prefix
    ) -> Bool {
        switch contentType.map(bareMediaType) ?? "" {
        case "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl": return true
        case "", "application/octet-stream", "binary/octet-stream", "text/plain":
            return ASCII.pathEnds(path, with: ".m3u8") || ASCII.pathEnds(path, with: ".m3u")
                || startsWithPlaylistHeader(bodyPrefix)
        default: return false
        }
    }

    /// After an optional UTF-8 BOM.
    package static func startsWithPlaylistHeader<Prefix: Collection<UInt8>>(_ bytes: Prefix) -> Bool {
        // Contiguous (every caller's): the generic `starts(with:)` costs thousands of instructions.
        bytes.withContiguousStorageIfAvailable(startsWithPlaylistHeader) ?? startsWithPlaylistHeader(Array(bytes.prefix(10)))
    }

    private static func startsWithPlaylistHeader(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let body = UnsafeBufferPointer(rebasing: bytes[textStart(bytes, skippingBlanks: false)...])
        let header: StaticString = "#EXTM3U"
        return body.count >= header.utf8CodeUnitCount
            && header.withUTF8Buffer { body.prefix(header.utf8CodeUnitCount).elementsEqual($0) }
    }
}
