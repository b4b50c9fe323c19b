import CacheHTTP
import CacheIO
import CacheProxy
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
    private let state = Mutex<Running?>(nil)

    private struct Running: Sendable {
        let loop: EventLoop
        let server: LoopBound<ProxyServer>
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
            let result = loop.submitAndWait { () -> Result<LoopBound<ProxyServer>, HTTPCacheError> in
                do {
                    let server = try ProxyServer(loop: loop, configuration: proxyConfiguration, logger: logger)
                    return .success(LoopBound(server, loop: loop))
                } catch {
                    return .failure(HTTPCacheError("cannot start: \(error)"))
                }
            }
            switch result {
            case .success(let server)?:
                let port = loop.submitAndWait { server.value.port } ?? 0
                running = Running(loop: loop, server: server, port: port)
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
        _ = stopped.loop.submitAndWait { stopped.server.value.stop() }
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
