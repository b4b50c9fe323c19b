import CacheHTTP
import CacheLoading
import CacheProxy
import CacheStorage
import CacheUpstream

/// How a `MediaCache` runs and serves; checked by `validate()` when it opens.
public struct HTTPCacheConfiguration: Sendable {
    /// Address to listen on (an IPv4 or IPv6 literal). Loopback by default.
    public var host: String
    /// Port to listen on; 0 picks a free one (read it from `MediaCache.port`).
    public var port: Int
    /// Folder of the disk cache; created if missing.
    public var cacheDirectory: String
    /// Seconds to establish an origin connection (TCP connect and, for https,
    /// the TLS handshake) before giving up (504).
    public var connectTimeout: Double = 10
    /// Seconds without a byte from the origin before giving up (504).
    public var readTimeout: Double = 30
    /// Seconds an idle client connection (keep-alive, or a request head that
    /// never completes) is kept open.
    public var clientIdleTimeout: Double = 60
    /// Seconds a client has to send a whole request head, counted from its
    /// first byte (a client trickling bytes does not extend it).
    public var clientHeadTimeout: Double = 10
    /// Seconds a client may accept no byte of a response before it is closed
    /// and its buffers freed.
    public var clientSendTimeout: Double = 60
    /// Most client connections at once (nil: what the open-file limit, whose
    /// soft value `httpcache serve` raises to the hard one, leaves after origin
    /// connections and data files: about 3/4 of it; a larger value is
    /// lowered to that). At the cap the connection idle the longest is
    /// closed, or, with none idle, new clients wait in the listen backlog.
    public var maxClientConnections: Int?
    /// Event loops (threads); 1 by default. With more, every loop accepts
    /// connections on the port and owns the resources whose cache key hashes
    /// to it (their downloads, readers and bookkeeping); hits of complete,
    /// fresh resources are answered on any loop (see the README's "Several loops").
    public var loops = 1
    /// The `httpcache` binary's: the open-file limit is raised and free heap
    /// pages go back to the system once no client is connected. Off in the
    /// library (the host owns its limits and heap).
    package var ownsProcess = false
    /// A PEM file of CA certificates trusted for https origins, besides the
    /// system store (e.g. a company CA).
    public var caFile: String?
    /// Accepts any certificate from https origins: no chain, expiry or
    /// host-name check. Only for testing against origins you control; every
    /// start logs a warning while it is on.
    public var insecure = false
    /// Fields added to every origin request, e.g. `("Authorization", "Bearer …")`.
    /// They win over client fields of the same name and are not sent on
    /// when a redirect leaves the origin first asked if they carry credentials
    /// (Authorization, Cookie). Framing fields (Host, Range, Connection…) are
    /// the proxy's own and are refused when the cache opens.
    public var extraHeaders: [(String, String)] = []
    /// Names of client request fields sent on to the origin besides
    /// User-Agent, Accept and Accept-Language (e.g. `"Referer"`).
    public var forwardedHeaders: [String] = []
    /// Drops the players' telemetry (CTA-5004 CMCD: the `CMCD` query argument
    /// and the `CMCD-Request`, `-Object`, `-Status`, `-Session` fields) from
    /// origin requests (`--strip-cmcd`). Off (default): a miss reaches the
    /// origin with the CMCD the player sent. Never part of a cache key either way.
    public var stripsCMCD = false
    /// Fetches the object a player names as its next one (CMCD `nor`/`nrr`)
    /// into the cache in the background, at preload priority (`--cmcd-hints`,
    /// default on): one hint per request, same origin only.
    public var followsCMCDHints = true
    /// Maps an origin URL to the key it is cached under, so that several URLs
    /// (e.g. signed CDN URLs whose token changes) share one cache entry.
    public var cacheKey: @Sendable (String) -> String = { $0 }
    /// The most bytes the cache keeps on disk once downloads settle (default
    /// 500 MB). Least recently used resources are evicted first; a resource
    /// larger than the limit still plays, streamed and not kept.
    public var maxCacheSize: Int64 = 500_000_000
    /// Resources fetched at once over all downloads and preloads (`--download-parallel`).
    public var downloadParallel = 4
    /// Bytes per second all downloads and preloads may take from origins
    /// together; 0: no cap (`--download-rate`). Players are never capped.
    public var downloadRate: Int64 = 0
    /// Segments fetched ahead of a player (`--prefetch`): when a client asks
    /// for media segment k of an HLS media playlist or a DASH representation,
    /// segments k+1 … k+N of the same rendition are fetched into the cache in
    /// the background (with `downloadParallel`/`downloadRate`, players first).
    /// 0 turns it off; at most 16.
    public var prefetch = 2
    /// Starts the folder's queued downloads when the cache opens (those a
    /// crash or close interrupted go on where they stopped). False leaves
    /// them queued until another open starts them.
    public var resumesDownloads = true
    /// Decides whether a response with this Content-Type (nil when absent) is
    /// cached. Others are still proxied, just not kept. The default accepts
    /// video/*, audio/*, HLS and DASH playlists, application/mp4 and
    /// application/ or binary/octet-stream.
    public var isCacheable: @Sendable (String?) -> Bool = HTTPCacheConfiguration.defaultIsCacheable
    /// Overrides the heuristic freshness (RFC 9111 §4.2.2): responses without
    /// explicit freshness (Cache-Control max-age/s-maxage, Expires) are fresh
    /// for exactly this many seconds, then revalidated with a conditional
    /// request. nil (default): 10% of the time since Last-Modified, at least
    /// 5 minutes and at most a day. Gap fetches always check (If-Range).
    public var revalidateAfter: Double?
    /// The clock of the cache's time decisions (milliseconds since 1970:
    /// freshness, LRU, storage-fault back-offs); nil: the wall clock. For
    /// tests that make time pass without waiting.
    package var clock: (@Sendable () -> Int64)?
    /// Which responses are kept by content type, in every mode: "media" (the
    /// media policy, `isCacheable`), "all" (whatever RFC 9111 allows) or a
    /// list "text/html,image/*". nil (default): media for proxy URLs, all in
    /// the forward and reverse modes.
    public var cacheTypes: String?
    /// The cache's name in the Cache-Status field of every response (RFC 9211).
    public var cacheStatusName = "httpcache"
    /// Reverse-proxy mode: every request path and query is mapped onto this
    /// origin ("https://media.example.com"), and CDN-Cache-Control (RFC 9213)
    /// governs caching. The proxy's own routes are then under `/_httpcache/`
    /// only (`/_httpcache/stats`, `/_httpcache/admin/…`, `/_httpcache/p/…`).
    public var origin: String?
    /// How resources are encrypted at their origins, by URL (nil: all plain).
    /// Readers and proxy clients then get plaintext; the cache keeps the
    /// origin's ciphertext. See `Decryption` (a wrong key is not detected)
    /// and `MediaCache.setDecryption(_:)` to set it after opening.
    public var decryption: DecryptionProvider?
    /// Origins the cache may fetch from: hosts (names or literals,
    /// case-insensitive; any port) or `HOST:PORT` (`[v6]:PORT`). Every fetch
    /// is checked: proxy URLs, forward and reverse targets, each redirect
    /// hop, preloads and readers; others get 403 (`.invalidArgument` in the
    /// API). In LAN mode, playlist URIs outside them are not signed. Empty
    /// (default): any origin.
    public var allowedOrigins: [String] = []
    /// Most connections one client address may hold at once (nil: half of
    /// `maxClientConnections`). At the limit the client's connection idle the
    /// longest is closed, or its new connection gets 503.
    public var maxConnectionsPerClient: Int?
    /// Public names reverse-proxy clients may send as Host (e.g.
    /// "media.example.com"); others than loopback names (and, in LAN mode,
    /// address literals) get 421.
    public var serverNames: [String] = []
    /// Reverse proxying (`origin`) on a non-loopback `host`: every LAN
    /// client then reaches the origin with the configured `extraHeaders`.
    /// Without this opt-in such a server does not start.
    public var allowsLANReverseProxy = false
    /// A parent proxy every origin request goes through ("http://host:port"):
    /// http requests in absolute form, https ones (and CONNECT tunnels)
    /// through its CONNECT, with TLS verified end to end with the origin.
    /// nil (default): origins are reached directly.
    public var upstreamProxy: String?
    /// Hosts (and their subdomains) reached directly despite `upstreamProxy`.
    public var noUpstreamProxyFor: [String] = []
    /// A file that gets one line per response (time, client, method, target,
    /// status, bytes sent, bytes from the origin, cache status, duration).
    public var accessLogPath: String?
    /// Replaces how URIs in HLS playlists are written on the way out. Gets
    /// each URI (absolute) with its role and the proxy URL the default would
    /// write, and returns what to write instead; nil keeps the URI as the
    /// origin wrote it (e.g. to keep some URIs direct). Default (nil):
    /// everything through the proxy. Called on a loop thread, or on a pool
    /// thread for a playlist over 256 KiB (rewritten off the loop).
    public var playlistURIRewriter: (@Sendable (PlaylistURI) -> String?)?
    /// Encryption at rest: the folder's key, 32 bytes (keep it outside the
    /// folder). With it every data file, metadata file and index file is
    /// encrypted and file names reveal no URL; without the key the folder
    /// is useless. A folder made with a key opens only with that key
    /// (`HTTPCacheError.Code.key` otherwise), one made without only without.
    /// `httpcache cache rekey` changes it. Default nil: no encryption.
    public var encryptionKey: [UInt8]?

    /// The key in a key file (32 bytes, or 64 hex digits) for `encryptionKey`.
    public static func encryptionKey(fromFile path: String) throws(HTTPCacheError) -> [UInt8] {
        do { return try FolderKeys.readKeyFile(path) } catch { throw HTTPCacheError(error) }
    }

    /// Whether `entry` is a host or HOST:PORT, as `allowedOrigins` takes them.
    package static func isAllowedOriginEntry(_ entry: String) -> Bool {
        if case .success = DestinationPolicy.parse([entry]) { return true }
        return false
    }

    /// The cache key the store uses: `cacheKey` of the URL without its `CMCD`
    /// query argument (CTA-5004 player telemetry: its values change with every
    /// request, so it never takes part in the key; the origin still gets it).
    package var storeCacheKey: @Sendable (String) -> String {
        let mapping = cacheKey
        return { mapping(QueryFilter.removing(QueryFilter.playerTelemetry, from: $0)) }
    }

    /// The default content-type policy.
    public static func defaultIsCacheable(_ contentType: String?) -> Bool {
        LoaderPolicy.defaultCacheable(contentType)
    }

    /// A cache-key mapping that ignores the named query parameters
    /// (e.g. `["token", "expires"]` for signed CDN URLs).
    public static func ignoringQueryParameters(_ names: Set<String>) -> @Sendable (String) -> String {
        { url in QueryFilter.removing(names, from: url) }
    }

    public init(cacheDirectory: String, host: String = "127.0.0.1", port: Int = 0) {
        self.cacheDirectory = cacheDirectory
        self.host = host
        self.port = port
    }

    /// The proxy's and engine's settings, from a configuration that passed
    /// `validate()`: each option of `ServeOption.all` writes its own, then
    /// what no option sets (the host's closures, the binary's own).
    var proxyConfiguration: ProxyConfiguration {
        let settings = ServeSettings(self)
        var proxy = ProxyConfiguration(engine: EngineConfiguration(cacheDirectory: cacheDirectory, maxCacheBytes: maxCacheSize))
        for option in ServeOption.all { option.apply(settings, &proxy) }
        proxy.engine.cacheKey = storeCacheKey
        proxy.engine.policy.cacheable = isCacheable
        if let clock { proxy.engine.clock = clock }
        proxy.ownsProcess = ownsProcess
        return proxy
    }
}
