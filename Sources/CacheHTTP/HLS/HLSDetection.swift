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
        let type = contentType.map(bareMediaType) ?? ""
        if playlistTypes.contains(type) { return true }
        guard type.isEmpty || genericTypes.contains(type) else { return false }
        return hasPlaylistExtension(path) || startsWithPlaylistHeader(bodyPrefix)
    }

    /// Whether `bytes` start with `#EXTM3U`, after an optional UTF-8 BOM.
    package static func startsWithPlaylistHeader<Prefix: Collection<UInt8>>(_ bytes: Prefix) -> Bool {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        return body.starts(with: "#EXTM3U".utf8)
    }

    /// Whether the last path segment ends in `.m3u8` or `.m3u` (any case).
    /// Takes a path or a whole URL; the query and fragment are not looked at.
    package static func hasPlaylistExtension(_ path: String) -> Bool {
        let u = path.utf8
        let end = u.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? u.endIndex
        let name = u[..<end]
        for ext in [".m3u8", ".m3u"] where name.count >= ext.utf8.count {
            let tail = name.suffix(ext.utf8.count)
            if zip(tail, ext.utf8).allSatisfy({ ASCII.lower($0) == $1 }) { return true }
        }
        return false
    }

    private static let playlistTypes: Set<String> = [
        "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl",
    ]
    private static let genericTypes: Set<String> = [
        "application/octet-stream", "binary/octet-stream", "text/plain",
    ]
}
