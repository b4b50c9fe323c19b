import CacheHTTP
import CacheIO
import CacheLoading
import CacheProxy
import CacheStorage
import Logging

/// The caching proxy, embedded in your process: a `MediaCache` that serves.
///
/// ```swift
/// let server = HTTPCacheServer(configuration: .init(cacheDirectory: "/var/cache/httpcache"))
/// try server.start()
/// let url = try server.proxyURL(for: "https://example.com/movie.mp4")
/// // hand `url` to the player …
/// server.stop()
/// ```
/// All methods are thread-safe. Use `MediaCache` directly to read through the
/// cache in-process or to open the cache before (or without) serving it.
public final class HTTPCacheServer: Sendable {
    public let configuration: HTTPCacheConfiguration
    private let logger: Logger
    private let running = Locked<MediaCache?>(nil)

    public init(configuration: HTTPCacheConfiguration, logger: Logger = Logger(label: "httpcache")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The open cache while running.
    public var cache: MediaCache? { running.withLock { $0 } }

    /// Opens the cache and starts listening; returns once connections are accepted.
    public func start() throws(HTTPCacheError) {
        try running.withLock { (running: inout MediaCache?) throws(HTTPCacheError) in
            guard running == nil else { return }
            let cache = try MediaCache(configuration: configuration, logger: logger)
            do throws(HTTPCacheError) {
                try cache.serve()
            } catch {
                cache.close()
                throw error
            }
            running = cache
        }
    }

    /// Stops listening, ends every connection and download, and writes the
    /// cache metadata. Returns when everything is closed.
    public func stop() {
        let cache = running.withLock { running -> MediaCache? in
            defer { running = nil }
            return running
        }
        cache?.close()
    }

    /// The port the proxy listens on (0 when not running).
    public var port: Int { cache?.port ?? 0 }

    /// The proxy URL that makes a player fetch `originURL` through this proxy.
    public func proxyURL(for originURL: String) throws(HTTPCacheError) -> String {
        guard let cache else { throw HTTPCacheError(.closed, "the proxy is not running") }
        return try cache.proxyURL(for: originURL)
    }

    /// The proxy URL for a proxy at host:port. Only http and https URLs are accepted.
    ///
    /// With `signingFolder` (the proxy's cache folder) the URL is signed with
    /// the folder's key (created on first use), as a proxy in LAN mode (bound
    /// to a non-loopback address) requires; a loopback proxy accepts both forms.
    public static func proxyURL(for originURL: String, host: String, port: Int,
                                signingFolder: String? = nil) throws(HTTPCacheError) -> String {
        var signature: String?
        if let signingFolder {
            do {
                signature = URLSigner(key: try URLSigningKey.loadOrCreate(folder: signingFolder))
                    .signature(forOrigin: originURL)
            } catch {
                throw HTTPCacheError(.io, "cannot sign the URL: \(error.description)")
            }
        }
        guard let path = ProxyURL.path(forOrigin: originURL, signature: signature) else {
            throw HTTPCacheError(.invalidArgument, "not an http or https URL: \(originURL)")
        }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "http://\(authority)\(path)"
    }

    /// Whether a proxy bound to `host` is in loopback mode (else LAN mode,
    /// which serves signed proxy URLs only).
    public static func isLoopback(host: String) -> Bool { LoopbackHost.contains(host) }

    private func open() throws(HTTPCacheError) -> MediaCache {
        guard let cache else { throw HTTPCacheError(.closed, "the proxy is not running") }
        return cache
    }

    /// Every cache entry, most recently used first.
    public func cachedResources() throws(HTTPCacheError) -> [CachedResource] { try open().cachedResources() }

    /// Bytes held by the cache.
    public func cacheSize() throws(HTTPCacheError) -> Int64 { try open().cacheSize() }

    /// Removes one entry (an entry in use goes once its readers are done).
    public func removeResource(for url: String) throws(HTTPCacheError) { try open().removeResource(for: url) }

    /// Removes every entry.
    public func removeAllResources() throws(HTTPCacheError) { try open().removeAllResources() }

    /// Puts a completely cached resource at `path` (a hard link when possible: no merge pass).
    public func exportResource(for url: String, to path: String) throws(HTTPCacheError) {
        try open().exportResource(for: url, to: path)
    }

    /// Makes a local file the cached copy of `url`.
    public func importResource(for url: String, from path: String, contentType: String? = nil) throws(HTTPCacheError) {
        try open().importResource(for: url, from: path, contentType: contentType)
    }

    /// The last origin or cache failure recorded for `url`, if any.
    public func lastError(for url: String) -> String? { cache?.lastError(for: url) }

    /// Forgets recorded failures (of one URL, or all).
    public func clearLastErrors(for url: String? = nil) { cache?.clearLastErrors(for: url) }
}
