import CacheHTTP
import CacheIO

/// What the loader keeps and how often it checks the origin.
package struct LoaderPolicy: Sendable {
    /// Whether responses of a content type are cached (others are proxied, not kept).
    package var cacheable: @Sendable (String?) -> Bool = LoaderPolicy.defaultCacheable
    /// `--cache-types`: the one choice for every mode when set; unset, proxy
    /// URLs keep what `cacheable` allows and the forward and reverse modes
    /// whatever RFC 9111 allows.
    package var cacheTypes: CacheTypes?
    /// The freshness rules of RFC 9111 this cache applies (heuristic bounds,
    /// CDN-Cache-Control in reverse-proxy mode).
    package var cache = CachePolicyOptions(heuristicMinimum: LoaderPolicy.defaultHeuristicMinimum)
    /// Whether `--revalidate-after` set the heuristic (for every mode).
    private var heuristicOverridden = false

    /// The freshness rules of the forward and reverse modes: a shared web
    /// cache's (RFC 9111 §4.2.2): a heuristic lifetime only for a response
    /// with Last-Modified, 10% of its age at most `cache.heuristicCap`, no
    /// minimum; a response with neither explicit freshness nor Last-Modified
    /// is revalidated before each reuse. Proxy URLs keep the media policy of
    /// `cache` (at least `defaultHeuristicMinimum`, with or without
    /// Last-Modified). `--revalidate-after` overrides both alike.
    package var transparentCache: CachePolicyOptions {
        guard !heuristicOverridden else { return cache }
        var options = cache
        options.heuristicMinimum = 0
        options.heuristicNeedsLastModified = true
        return options
    }

    /// The rules for a request of a proxy URL (`transparent` false) or of the
    /// forward and reverse modes.
    package func cache(transparent: Bool) -> CachePolicyOptions { transparent ? transparentCache : cache }
    /// This proxy's Via pseudonym (RFC 9110 §7.6.3): added to requests and
    /// responses, and a request already carrying it is a loop.
    package var viaPseudonym = Intermediary.pseudonym(id: UInt32.random(in: 0...UInt32.max))

    /// Whether a response of this content type is kept, for a proxy URL
    /// (`transparent` false) or the forward and reverse modes.
    package func keeps(contentType: String?, transparent: Bool) -> Bool {
        (cacheTypes ?? (transparent ? .all : .media)).allows(contentType, media: cacheable)
    }

    /// Seconds a response without explicit freshness stays fresh at least.
    package static let defaultHeuristicMinimum = 300

    package init() {}

    /// The override of `--revalidate-after`: responses without explicit
    /// freshness are fresh for exactly `seconds` (the heuristic of RFC 9111
    /// §4.2.2 is the cache's choice). Explicit freshness still wins.
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
