import CacheHTTP
import CacheIO
import CacheLoading
import CacheProxy
import CacheStorage
import Logging
import Synchronization

/// The caching proxy, embedded in your process.
///
/// ```swift
/// let server = HTTPCacheServer(configuration: .init(cacheDirectory: "/var/cache/httpcache"))
/// try server.start()
/// let url = try server.proxyURL(for: "https://example.com/movie.mp4")
/// // hand `url` to the player …
/// server.stop()
/// ```
/// All methods are thread-safe. The proxy runs on its own event-loop thread.
public final class HTTPCacheServer: Sendable {
    public let configuration: HTTPCacheConfiguration
    private let logger: Logger
    let state = Mutex<Running?>(nil)

    struct Running: Sendable {
        let loop: EventLoop
        let engine: LoopBound<Engine>
        let server: LoopBound<ProxyServer>
        let store: LoopBound<ResourceStore>
        let port: Int
    }

    public init(configuration: HTTPCacheConfiguration, logger: Logger = Logger(label: "httpcache")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Opens the cache and starts listening; returns once connections are accepted.
    public func start() throws {
        try state.withLock { running in
            guard running == nil else { return }
            let loop = try EventLoop()
            let proxyConfiguration = configuration.proxyConfiguration
            let logger = self.logger
            let result = loop.submitAndWait { () -> Result<Running, HTTPCacheError> in
                do {
                    let engine = try Engine(loop: loop, configuration: proxyConfiguration.engine, logger: logger)
                    do {
                        let server = try ProxyServer(engine: engine, configuration: proxyConfiguration)
                        return .success(Running(loop: loop, engine: LoopBound(engine, loop: loop),
                                                server: LoopBound(server, loop: loop),
                                                store: LoopBound(engine.store, loop: loop), port: server.port))
                    } catch {
                        engine.shutdown()
                        throw error
                    }
                } catch {
                    return .failure(HTTPCacheError("cannot start: \(error)"))
                }
            }
            switch result {
            case .success(let started)?:
                running = started
            case .failure(let error)?:
                loop.shutdown()
                throw error
            case nil:
                loop.shutdown()
                throw HTTPCacheError("cannot start: event loop stopped")
            }
        }
    }

    /// Stops listening, ends every connection and download, and writes the
    /// cache metadata. Returns when everything is closed.
    public func stop() {
        let stopped = state.withLock { running -> Running? in
            defer { running = nil }
            return running
        }
        guard let stopped else { return }
        _ = stopped.loop.submitAndWait {
            stopped.server.value.stop()
            stopped.engine.value.shutdown()
        }
        stopped.loop.shutdown()
    }

    /// The port the proxy listens on (0 when not running).
    public var port: Int { state.withLock { $0?.port ?? 0 } }

    /// The proxy URL that makes a player fetch `originURL` through this proxy.
    public func proxyURL(for originURL: String) throws -> String {
        let port = self.port
        guard port != 0 else { throw HTTPCacheError("the proxy is not running") }
        return try HTTPCacheServer.proxyURL(for: originURL, host: configuration.host, port: port)
    }

    /// The proxy URL for a proxy at host:port. Only http and https URLs are accepted.
    public static func proxyURL(for originURL: String, host: String, port: Int) throws -> String {
        guard let path = ProxyURL.path(forOrigin: originURL) else {
            throw HTTPCacheError("not an http or https URL: \(originURL)")
        }
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "http://\(authority)\(path)"
    }
}

/// An error from the HTTPCache API, with a readable reason.
public struct HTTPCacheError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A loop-thread object carried across threads; every access asserts it is
/// on its loop, which is the invariant that makes the unchecked Sendable sound.
struct LoopBound<Value>: @unchecked Sendable {
    private let wrapped: Value
    let loop: EventLoop
    init(_ value: Value, loop: EventLoop) {
        self.wrapped = value
        self.loop = loop
    }
    var value: Value {
        loop.assertInLoop()
        return wrapped
    }
}

extension HTTPCacheServer {
    private var operations: CacheOperations {
        get throws {
            guard let running = state.withLock({ $0 }) else { throw HTTPCacheError("the proxy is not running") }
            return CacheOperations(loop: running.loop, store: running.store, cacheKey: configuration.cacheKey)
        }
    }

    /// Every cache entry, most recently used first.
    public func cachedResources() throws -> [CachedResource] { try operations.list() }

    /// Bytes held by the cache.
    public func cacheSize() throws -> Int64 { try operations.totalSize() }

    /// Removes one entry (an entry in use goes once its readers are done).
    public func removeResource(for url: String) throws { try operations.remove(url: url) }

    /// Removes every entry.
    public func removeAllResources() throws { try operations.removeAll() }

    /// Puts a completely cached resource at `path` (a hard link when possible: no merge pass).
    public func exportResource(for url: String, to path: String) throws {
        try operations.export(url: url, to: path)
    }

    /// Makes a local file the cached copy of `url`.
    public func importResource(for url: String, from path: String, contentType: String? = nil) throws {
        try operations.importFile(path, url: url, contentType: contentType)
    }

    /// The last origin or cache failure recorded for `url`, if any.
    public func lastError(for url: String) -> String? {
        guard let running = state.withLock({ $0 }) else { return nil }
        return running.loop.submitAndWait { running.server.value.loader.lastErrors[url] } ?? nil
    }

    /// Forgets recorded failures (of one URL, or all).
    public func clearLastErrors(for url: String? = nil) {
        guard let running = state.withLock({ $0 }) else { return }
        _ = running.loop.submitAndWait {
            if let url { running.server.value.loader.clearLastError(for: url) } else { running.server.value.loader.clearLastErrors() }
        }
    }
}
