import CacheHTTP
import CacheIO
import CacheLoading
import CacheProxy
import CacheStorage
import Logging

/// An open cache: the folder (locked for this process), its downloads and
/// origin connections, on an event-loop thread of its own. It works without
/// any HTTP server; `serve()` adds the proxy, and in-process readers and
/// preloads use the same downloads.
///
/// ```swift
/// let cache = try MediaCache(configuration: .init(cacheDirectory: "/var/cache/httpcache"))
/// try cache.serve()
/// let url = try cache.proxyURL(for: "https://example.com/movie.mp4")
/// // hand `url` to the player …
/// cache.close()
/// ```
/// All methods are thread-safe.
public final class MediaCache: Sendable {
    public let configuration: HTTPCacheConfiguration
    let logger: Logger
    /// One engine per loop (`HTTPCacheConfiguration.loops`), each owning the
    /// resources whose cache key hashes to it.
    let engines: EngineGroup
    private let serving = Locked<Serving>(Serving())
    /// In-process readers, closed with the cache.
    let readers = ReaderRegistry()

    private struct Serving: Sendable {
        /// Each loop's server, by shard; empty until `serve()`.
        var servers: [LoopBound<ProxyServer>] = []
        var port: Int?
        var closed = false
    }

    /// Opens the cache folder (creating it if needed) and takes its lock.
    /// Throws `.busy` while another process (or another `MediaCache`) has it.
    public init(configuration: HTTPCacheConfiguration, logger: Logger = Logger(label: "httpcache")) throws(HTTPCacheError) {
        self.configuration = configuration
        self.logger = logger
        var loops: [EventLoop] = []
        for _ in 0..<max(1, configuration.loops) {
            do { loops.append(try EventLoop()) } catch {
                for loop in loops { loop.shutdown() }
                throw HTTPCacheError(.noMemory, "cannot start an event loop: \(error)")
            }
        }
        var configured = configuration.proxyConfiguration.engine
        configured.playlistURIHook = configuration.playlistURIHook
        let decryption = HTTPCacheConfiguration.lookup(configuration.decryption)
        do {
            engines = try EngineGroup(loops: loops, configuration: configured, logger: logger) { engine in
                engine.decryption = decryption
            }
        } catch {
            for loop in loops { loop.shutdown() }
            if let error = error as? StorageError { throw HTTPCacheError(error) }
            throw HTTPCacheError(.invalidArgument, "cannot open the cache: \(error)")
        }
    }

    deinit { close() }

    /// Starts the HTTP proxy on the configured host and port, one server per
    /// loop; returns once connections are accepted. Serving twice does nothing.
    public func serve() throws(HTTPCacheError) {
        try serving.withLock { (serving: inout Serving) throws(HTTPCacheError) in
            guard !serving.closed else { throw HTTPCacheError(.closed, "the cache is closed") }
            guard serving.servers.isEmpty else { return }
            let configuration = self.configuration.proxyConfiguration
            // The first server listens first: its port (when the configured one is 0) is the others'.
            var servers: [LoopBound<ProxyServer>] = []
            var port = configuration.port
            for index in 0..<engines.count {
                let server: LoopBound<ProxyServer>
                do throws(HTTPCacheError) {
                    server = try makeServer(index, joining: servers.first, port: port)
                } catch {
                    Self.stop(servers)
                    throw error
                }
                if index == 0 { port = server.loop.submitAndWait { server.value.port } ?? 0 }
                servers.append(server)
            }
            // Each server learns of all (each touched on its own loop).
            let all = servers
            for server in servers { _ = server.loop.submitAndWait { server.value.join(all) } }
            serving.servers = servers
            serving.port = port
        }
    }

    /// Starts shard `index`'s server: the first (`home` nil) or one joining it on `port`.
    private func makeServer(_ index: Int, joining home: LoopBound<ProxyServer>?,
                            port: Int) throws(HTTPCacheError) -> LoopBound<ProxyServer> {
        let configuration = self.configuration.proxyConfiguration
        let loop = engines.loops[index]
        let made = engines.submitAndWait(index) { engine -> Result<LoopBound<ProxyServer>, HTTPCacheError> in
            do {
                // The first server is only read here for its settings, never touched off its loop.
                let server = try home.map { try ProxyServer(joining: $0.unchecked, engine: engine, port: port) }
                    ?? ProxyServer(engine: engine, configuration: configuration)
                return .success(LoopBound(server, loop: loop))
            } catch {
                return .failure(HTTPCacheError(.io, "cannot listen on \(configuration.host):\(port): \(error)"))
            }
        }
        switch made {
        case .success(let server)?: return server
        case .failure(let error)?: throw error
        case nil: throw HTTPCacheError(.closed, "the cache is closed")
        }
    }

    /// Stops servers (their clients are closed), every one before any engine stops.
    private static func stop(_ servers: [LoopBound<ProxyServer>]) {
        for server in servers { _ = server.loop.submitAndWait { server.value.stop() } }
    }

    /// The port the proxy listens on; nil until `serve()`.
    public var port: Int? { serving.withLock { $0.port } }

    /// The proxy URL that makes a player fetch `originURL` through this cache's proxy.
    /// Throws `.invalidArgument` before `serve()` or for a URL that is not
    /// http(s), `.closed` once closed.
    public func proxyURL(for originURL: String) throws(HTTPCacheError) -> String {
        let port = try serving.withLock { (serving: inout Serving) throws(HTTPCacheError) -> Int in
            if serving.closed { throw HTTPCacheError(.closed, "the cache is closed") }
            guard let port = serving.port else { throw HTTPCacheError(.invalidArgument, "the proxy is not serving: call serve() first") }
            return port
        }
        // A LAN-mode proxy serves signed URLs only; the key is in the folder.
        let lan = AccessPolicy.mode(forBindHost: configuration.host) == .lan
        return try HTTPCacheServer.proxyURL(for: originURL, host: configuration.host, port: port,
                                            signingFolder: lan ? configuration.cacheDirectory : nil)
    }

    /// Stops serving, ends every connection and download, writes the cache
    /// metadata and releases the folder. Returns when everything is closed.
    public func close() {
        let servers: [LoopBound<ProxyServer>]? = serving.withLock { serving in
            guard !serving.closed else { return nil }
            serving.closed = true
            serving.port = nil
            defer { serving.servers = [] }
            return serving.servers
        }
        guard let servers else { return }
        // Every server first: none hands work to an engine that has stopped.
        Self.stop(servers)
        // Readers next: blocked reads return .closed, their sources close before the engines stop.
        readers.closeAll()
        _ = engines.submitToAll { $0.shutdown() }
        for loop in engines.loops { loop.shutdown() }
        // Unlock now, not when this object is freed: the folder may be opened
        // again while something still holds a reference to the closed cache.
        engines.stores.lock.release()
    }

    /// Runs `body` on the loop of the engine owning `url` and waits; nil once closed.
    func onOwner<T: Sendable>(of url: String, _ body: @escaping @Sendable (Engine) -> T) -> T? {
        engines.submitAndWait(engines.shard(ofURL: url), body)
    }

    var operations: CacheOperations {
        CacheOperations(stores: engines.storesByShard, group: engines.stores, cacheKey: configuration.cacheKey)
    }

    // MARK: cache operations

    /// Every cache entry, most recently used first.
    public func cachedResources() -> [CachedResource] { operations.list() }

    /// Bytes held by the cache.
    public func cacheSize() -> Int64 { operations.totalSize() }

    /// Removes one entry (an entry in use goes once its readers are done).
    public func removeResource(for url: String) throws(HTTPCacheError) { try operations.remove(url: url) }

    /// Removes every entry.
    public func removeAllResources() { operations.removeAll() }

    /// Puts a completely cached resource at `path` (a hard link when possible: no merge pass).
    public func exportResource(for url: String, to path: String) throws(HTTPCacheError) {
        try operations.export(url: url, to: path)
    }

    /// Makes a local file the cached copy of `url`.
    public func importResource(for url: String, from path: String, contentType: String? = nil) throws(HTTPCacheError) {
        try operations.importFile(path, url: url, contentType: contentType)
    }

    /// The last origin or cache failure recorded for `url`, if any.
    public func lastError(for url: String) -> String? {
        onOwner(of: url) { $0.loader.lastError(for: url) } ?? nil
    }

    /// Forgets recorded failures (of one URL, or all).
    public func clearLastErrors(for url: String? = nil) {
        if let url {
            _ = onOwner(of: url) { $0.loader.clearLastError(for: url) }
        } else {
            _ = engines.submitToAll { $0.loader.clearLastErrors() }
        }
    }
}
