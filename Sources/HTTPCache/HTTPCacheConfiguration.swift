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
    /// Seconds to connect to an origin (TCP and, for https, TLS) before giving up (504).
    public var connectTimeout: Double = 10
    /// Seconds without a byte from the origin before giving up (504).
    public var readTimeout: Double = 30
    /// Seconds an idle client connection (keep-alive, or an unfinished request head) stays open.
    public var clientIdleTimeout: Double = 60
    /// Seconds a client has to send a whole request head from its first byte (trickling no help).
    public var clientHeadTimeout: Double = 10
    /// Seconds a client may take no byte of a response before it is closed and its buffers freed.
    public var clientSendTimeout: Double = 60
    /// Most client connections (nil, and at most: about 3/4 of the open-file limit, which `httpcache
    /// serve` raises to the hard one). At the cap the longest idle one closes, or new clients wait.
    public var maxClientConnections: Int?
    /// Event loops (threads), 1 by default; each accepts on the port and owns the resources whose
    /// cache key hashes to it; any answers hits of complete, fresh ones (README, "Several loops").
    public var loops = 1
    /// The binary's: raises the open-file limit, frees heap pages with no client (not the library's).
    package var ownsProcess = false
    /// A PEM file of CA certificates trusted for https origins besides the system store.
    public var caFile: String?
    /// Accepts any https origin certificate (no chain, expiry or name check): for testing against
    /// your own origins only; every start logs a warning.
    public var insecure = false
    /// Fields added to every origin request, e.g. `("Authorization", "Bearer …")`; they win over
    /// client fields of the same name. Credentials (Authorization, Cookie) are not sent after a
    /// redirect leaves the first origin. Framing fields (Host, Range, Connection…) are refused.
    public var extraHeaders: [(String, String)] = []
    /// Client request fields sent on besides User-Agent, Accept, Accept-Language (e.g. `"Referer"`).
    public var forwardedHeaders: [String] = []
    /// Drops player telemetry (CTA-5004 CMCD: the `CMCD` query argument and `CMCD-*` fields) from
    /// origin requests (`--strip-cmcd`); off, misses carry it. Never part of a cache key.
    public var stripsCMCD = false
    /// Fetches the object a player names as its next (CMCD `nor`/`nrr`) in the background at
    /// preload priority (`--cmcd-hints`, default on): one hint per request, same origin only.
    public var followsCMCDHints = true
    /// Maps an origin URL to its cache key, so several URLs (e.g. signed CDN URLs) share an entry.
    public var cacheKey: @Sendable (String) -> String = { $0 }
    /// The most bytes kept on disk once downloads settle (default 500 MB), least recently used
    /// evicted first; a resource larger than the limit still plays, streamed and not kept.
    public var maxCacheSize: Int64 = 500_000_000
    /// Resources fetched at once over all downloads and preloads (`--download-parallel`).
    public var downloadParallel = 4
    /// Bytes per second all downloads and preloads may take (`--download-rate`; 0: no cap, players never).
    public var downloadRate: Int64 = 0
    /// Segments fetched ahead of a player (`--prefetch`, 0 to 16): segment k of an HLS media playlist
    /// or DASH representation fetches k+1 … k+N in the background (`downloadParallel`, `downloadRate`).
    public var prefetch = 2
    /// Starts the folder's queued downloads at open, interrupted ones where they stopped (false: later).
    public var resumesDownloads = true
    /// Whether a response with this Content-Type (nil: absent) is kept, else only proxied. Default:
    /// video/*, audio/*, HLS and DASH playlists, application/mp4, application/ or binary/octet-stream.
    public var isCacheable: @Sendable (String?) -> Bool = HTTPCacheConfiguration.defaultIsCacheable
    /// Overrides heuristic freshness (RFC 9111 §4.2.2): responses without max-age/s-maxage or
    /// Expires are fresh this many seconds, then revalidated. nil (default): 10% of the time since
    /// Last-Modified, 5 minutes to a day. Gap fetches always check (If-Range).
    public var revalidateAfter: Double?
    /// The clock of time decisions (ms since 1970); nil: the wall clock. Tests make time pass with it.
    package var clock: (@Sendable () -> Int64)?
    /// Which content types are kept, in every mode: "media" (`isCacheable`), "all" (what RFC 9111
    /// allows) or a list "text/html,image/*". nil (default): media for proxy URLs, else all.
    public var cacheTypes: String?
    /// The cache's name in the Cache-Status field of every response (RFC 9211).
    public var cacheStatusName = "httpcache"
    /// Reverse-proxy mode: request paths and queries map onto this origin
    /// ("https://media.example.com"), CDN-Cache-Control (RFC 9213) governs caching, and the
    /// proxy's own routes are under `/_httpcache/` only (`stats`, `admin/…`, `p/…`).
    public var origin: String?
    /// How resources are encrypted at their origins, by URL (nil: all plain): readers and clients get
    /// plaintext, the cache keeps ciphertext (`Decryption`: a wrong key is not detected).
    public var decryption: DecryptionProvider?
    /// Origins the cache may fetch from: hosts (case-insensitive, any port) or `HOST:PORT`
    /// (`[v6]:PORT`). Every fetch is checked (proxy URLs, forward and reverse targets, redirect
    /// hops, preloads, readers); others get 403 (`.invalidArgument` in the API). In LAN mode
    /// playlist URIs outside them are not signed. Empty (default): any origin.
    public var allowedOrigins: [String] = []
    /// Most connections per client address (nil: half of `maxClientConnections`); past it, its
    /// longest idle one closes, or its new one gets 503.
    public var maxConnectionsPerClient: Int?
    /// Public names reverse-proxy clients may send as Host (e.g. "media.example.com"); other
    /// names than loopback ones (and, in LAN mode, address literals) get 421.
    public var serverNames: [String] = []
    /// Allows reverse proxying on a non-loopback `host`, where every LAN client reaches the origin
    /// with `extraHeaders`; without it such a server does not start.
    public var allowsLANReverseProxy = false
    /// A parent proxy for every origin request ("http://host:port"): http in absolute form, https and
    /// tunnels through its CONNECT (TLS verified end to end).
    public var upstreamProxy: String?
    /// Hosts (and their subdomains) reached directly despite `upstreamProxy`.
    public var noUpstreamProxyFor: [String] = []
    /// A file getting a line per response (time, client, method, target, status, bytes sent, bytes
    /// from the origin, cache status, duration).
    public var accessLogPath: String?
    /// Rewrites HLS playlist URIs on the way out: gets each URI (absolute), its role and the proxy
    /// URL the default writes; returns what to write, or nil to keep the origin's URI. Default
    /// (nil): all through the proxy. Called on a loop thread (a pool thread past 256 KiB).
    public var playlistURIRewriter: (@Sendable (PlaylistURI) -> String?)?
    /// Encryption at rest: the folder's 32-byte key (kept outside it); every file is encrypted and
    /// names reveal no URL. A folder made with a key opens only with it (else `.key`), one made
    /// without only without; `httpcache cache rekey` changes it.
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

    /// `cacheKey` of the URL without its `CMCD` query argument (per-request telemetry; the origin gets it).
    package var storeCacheKey: @Sendable (String) -> String {
        let mapping = cacheKey
        return { mapping(QueryFilter.removing(QueryFilter.playerTelemetry, from: $0)) }
    }

    /// The default content-type policy.
    public static func defaultIsCacheable(_ contentType: String?) -> Bool {
        LoaderPolicy.defaultCacheable(contentType)
    }

    /// A cache-key mapping ignoring the named query parameters (e.g. `["token", "expires"]`).
    public static func ignoringQueryParameters(_ names: Set<String>) -> @Sendable (String) -> String {
        { url in QueryFilter.removing(names, from: url) }
    }

    /// A configuration with defaults for the given folder and address.
    public init(cacheDirectory: String, host: String = "127.0.0.1", port: Int = 0) {
        self.cacheDirectory = cacheDirectory
        self.host = host
        self.port = port
    }

    /// The proxy's and engine's settings: each `ServeOption` writes its own, then what no option sets.
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
