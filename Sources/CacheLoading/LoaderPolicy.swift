/// What the loader keeps and how often it checks the origin.
package struct LoaderPolicy: Sendable {
    /// Whether responses of a content type are cached (others are proxied, not kept).
    package var cacheable: @Sendable (String?) -> Bool = LoaderPolicy.defaultCacheable
    /// Milliseconds after which a cached resource is checked against the
    /// origin before it is served again; nil: never (gap fetches still check).
    package var revalidateAfter: Int64?

    package init() {}

    /// Media types worth caching, matched on the type without parameters.
    package static let defaultTypes: Set<String> = [
        "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl",
        "application/mp4", "application/octet-stream", "binary/octet-stream", "application/dash+xml",
    ]

    package static func defaultCacheable(_ contentType: String?) -> Bool {
        // No type at all is common for media on simple servers: keep it.
        guard let contentType else { return true }
        let type = mediaType(contentType)
        return type.hasPrefix("video/") || type.hasPrefix("audio/") || defaultTypes.contains(type)
    }

    /// "Video/MP4; codecs=x" → "video/mp4".
    package static func mediaType(_ contentType: String) -> String {
        let bare = contentType.prefix { $0 != ";" }
        return String(bare.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
    }
}
