import CacheHTTP
import CacheIO

/// What the loader keeps and how often it checks the origin.
package struct LoaderPolicy: Sendable {
    /// Whether responses of a content type are cached (others are proxied, not kept).
    package var cacheable: @Sendable (String?) -> Bool = LoaderPolicy.defaultCacheable
    /// `--cache-types` for every mode; unset, proxy URLs keep what `cacheable` allows, transparent modes all.
    package var cacheTypes: CacheTypes?
    /// The RFC 9111 freshness rules applied (heuristic bounds, reverse mode's CDN-Cache-Control).
    package var cache = CachePolicyOptions(heuristicMinimum: LoaderPolicy.defaultHeuristicMinimum)
    /// Whether `--revalidate-after` set the heuristic (for every mode).
    private var heuristicOverridden = false

    /// The transparent modes' rules, a shared web cache's (RFC 9111 §4.2.2): a heuristic only with
    /// Last-Modified (10% of its age, at most `cache.heuristicCap`, no minimum), else revalidated before each
    /// reuse. Proxy URLs keep `cache`'s media policy; `--revalidate-after` overrides both alike.
    package var transparentCache: CachePolicyOptions {
        guard !heuristicOverridden else { return cache }
        var options = cache
        options.heuristicMinimum = 0
        options.heuristicNeedsLastModified = true
        return options
    }

    package func cache(transparent: Bool) -> CachePolicyOptions { transparent ? transparentCache : cache }
    /// This proxy's Via pseudonym (RFC 9110 §7.6.3); a request already carrying it is a loop.
    package var viaPseudonym = Intermediary.pseudonym(id: UInt32.random(in: 0...UInt32.max))

    package func keeps(contentType: String?, transparent: Bool) -> Bool {
        (cacheTypes ?? (transparent ? .all : .media)).allows(contentType, media: cacheable)
    }

    /// Seconds a response without explicit freshness stays fresh at least.
    package static let defaultHeuristicMinimum = 300

    package init() {}

    /// `--revalidate-after`: without explicit freshness, fresh for exactly `seconds` (the
    /// RFC 9111 §4.2.2 heuristic is the cache's choice).
    package mutating func setHeuristicLifetime(seconds: Int) {
        heuristicOverridden = true
        cache.heuristicMinimum = max(0, seconds)
        cache.heuristicCap = max(0, seconds)
    }

    /// Media types worth caching, matched on the type without parameters.
    package static let defaultTypes: Set<String> = [
        "application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl",
        "application/mp4", "application/octet-stream", "binary/octet-stream", "application/dash+xml",
    ]

    package static func defaultCacheable(_ contentType: String?) -> Bool {
        // No type at all is common for media on simple servers: keep it.
        guard let contentType else { return true }
        let type = bareMediaType(contentType)
        return type.hasPrefix("video/") || type.hasPrefix("audio/") || defaultTypes.contains(type)
    }
}
