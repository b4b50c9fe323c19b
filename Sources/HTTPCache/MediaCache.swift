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
    let loop: EventLoop
    let engine: LoopBound<Engine>
    let store: LoopBound<ResourceStore>
    private let serving = Locked<Serving>(Serving())
    /// In-process readers, closed with the cache.
    let readers = ReaderRegistry()

    private struct Serving: Sendable {
        var server: LoopBound<ProxyServer>?
        /// The servers of the other loops (`HTTPCacheConfiguration.loops`), each on its own loop.
        var siblings: [LoopBound<ProxyServer>] = []
        var port: Int?
        var closed = false
    }

    /// Opens the cache folder (creating it if needed) and takes its lock.
    /// Throws `.busy` while another process (or another `MediaCache`) has it.
    public init(configuration: HTTPCacheConfiguration, logger: Logger = Logger(label: "httpcache")) throws(HTTPCacheError) {
        self.configuration = configuration
        self.logger = logger
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw HTTPCacheError(.noMemory, "cannot start the event loop: \(error)") }
        var configured = configuration.proxyConfiguration.engine
        // With no transforms of the host's own, only HLS playlists are rewritten.
        configured.transformsOnlyPlaylists = configured.transforms == nil
        configured.transforms = configuration.transformProvider(before: configured.transforms, logger: logger)
        let engineConfiguration = configured
        let decryption = HTTPCacheConfiguration.lookup(configuration.decryption)
        let opened = loop.submitAndWait { () -> Result<(LoopBound<Engine>, LoopBound<ResourceStore>), HTTPCacheError> in
            do {
                let engine = try Engine(loop: loop, configuration: engineConfiguration, logger: logger)
                engine.decryption = decryption
                return .success((LoopBound(engine, loop: loop), LoopBound(engine.store, loop: loop)))
            } catch let error as StorageError {
                return .failure(HTTPCacheError(error))
            } catch {
                return .failure(HTTPCacheError(.invalidArgument, "cannot open the cache: \(error)"))
            }
        }
        switch opened {
        case .success(let (engine, store))?:
            self.loop = loop
            self.engine = engine
            self.store = store
        case .failure(let error)?:
            loop.shutdown()
            throw error
        case nil:
            loop.shutdown()
            throw HTTPCacheError(.closed, "the event loop stopped")
        }
    }

    deinit { close() }

    /// Starts the HTTP proxy on the configured host and port; returns once
    /// connections are accepted. Serving twice does nothing.
    public func serve() throws(HTTPCacheError) {
        try serving.withLock { (serving: inout Serving) throws(HTTPCacheError) in
            guard !serving.closed else { throw HTTPCacheError(.closed, "the cache is closed") }
            guard serving.server == nil else { return }
            let configuration = self.configuration.proxyConfiguration
            let engine = self.engine
            let loop = self.loop
            let started = loop.submitAndWait { () -> Result<LoopBound<ProxyServer>, HTTPCacheError> in
                do {
                    return .success(LoopBound(try ProxyServer(engine: engine.value, configuration: configuration), loop: loop))
                } catch {
                    return .failure(HTTPCacheError(.io, "cannot listen on \(configuration.host):\(configuration.port): \(error)"))
                }
            }
            switch started {
            case .success(let server)?:
                serving.server = server
                let port = loop.submitAndWait { server.value.port }
                serving.port = port
                do throws(HTTPCacheError) {
                    serving.siblings = try Self.startSiblings(of: server, count: configuration.loops - 1, port: port ?? 0)
                } catch {
                    _ = loop.submitAndWait { server.value.stop() }
                    serving.server = nil
                    serving.port = nil
                    throw error
                }
            case .failure(let error)?: throw error
            case nil: throw HTTPCacheError(.closed, "the cache is closed")
            }
        }
    }

    /// Starts a server on each of `count` new loops, listening on `port` with
    /// the engine loop's server, and introduces them to it.
    private static func startSiblings(of owner: LoopBound<ProxyServer>, count: Int,
                                      port: Int) throws(HTTPCacheError) -> [LoopBound<ProxyServer>] {
        var started: [LoopBound<ProxyServer>] = []
        for _ in 0..<max(0, count) {
            let loop: EventLoop
            do { loop = try EventLoop() } catch {
                stopSiblings(started)
                throw HTTPCacheError(.noMemory, "cannot start an event loop: \(error)")
            }
            let made = loop.submitAndWait { () -> Result<LoopBound<ProxyServer>, HTTPCacheError> in
                // The owner is only referenced here (LoopLink), never touched off its loop.
                let link = owner.unchecked
                do {
                    return .success(LoopBound(try ProxyServer(joining: link, on: loop, port: port), loop: loop))
                } catch {
                    return .failure(HTTPCacheError(.io, "cannot listen on port \(port) from another loop: \(error)"))
                }
            }
            guard case .success(let sibling)? = made else {
                loop.shutdown()
                stopSiblings(started)
                if case .failure(let error)? = made { throw error }
                throw HTTPCacheError(.closed, "the event loop stopped")
            }
            started.append(sibling)
            _ = owner.loop.submitAndWait { owner.value.join(sibling.unchecked) }
        }
        return started
    }

    /// Stops the other loops' servers and their loops (their clients are closed).
    private static func stopSiblings(_ siblings: [LoopBound<ProxyServer>]) {
        for sibling in siblings {
            _ = sibling.loop.submitAndWait { sibling.value.stop() }
            sibling.loop.shutdown()
        }
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
        let taken: (server: LoopBound<ProxyServer>?, siblings: [LoopBound<ProxyServer>])? = serving.withLock { serving in
            guard !serving.closed else { return nil }
            serving.closed = true
            serving.port = nil
            defer {
                serving.server = nil
                serving.siblings = []
            }
            return (serving.server, serving.siblings)
        }
        guard let taken else { return }
        // The other loops first: they hand work to the engine's loop, never the reverse.
        Self.stopSiblings(taken.siblings)
        let server: LoopBound<ProxyServer>?? = .some(taken.server)
        guard let server else { return }
        // Readers first: blocked reads return .closed, their sources close before the engine stops.
        readers.closeAll()
        let engine = self.engine
        let lock = loop.submitAndWait { () -> CacheLock in
            server?.value.stop()
            engine.value.shutdown()
            return engine.value.store.lock
        }
        loop.shutdown()
        // Unlock now, not when this object is freed: the folder may be opened
        // again while something still holds a reference to the closed cache.
        lock?.release()
    }

    /// Runs `body` on the loop with the engine; nil once closed.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (Engine) -> T) -> T? {
        let engine = self.engine
        return loop.submitAndWait { body(engine.value) }
    }

    var operations: CacheOperations {
        CacheOperations(loop: loop, store: store, cacheKey: configuration.cacheKey)
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
        onLoop { $0.loader.lastError(for: url) } ?? nil
    }

    /// Forgets recorded failures (of one URL, or all).
    public func clearLastErrors(for url: String? = nil) {
        _ = onLoop { engine in
            if let url { engine.loader.clearLastError(for: url) } else { engine.loader.clearLastErrors() }
        }
    }
}
