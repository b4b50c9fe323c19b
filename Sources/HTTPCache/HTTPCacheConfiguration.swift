import CacheProxy
import CacheUpstream

/// How an `HTTPCacheServer` runs.
public struct HTTPCacheConfiguration: Sendable {
    /// Address to listen on (an IPv4 or IPv6 literal). Loopback by default.
    public var host: String
    /// Port to listen on; 0 picks a free one (read it from `HTTPCacheServer.port`).
    public var port: Int
    /// Folder of the disk cache; created if missing.
    public var cacheDirectory: String
    /// Seconds to establish an origin connection.
    public var connectTimeout: Double = 10
    /// Seconds without a byte from the origin before giving up (504).
    public var readTimeout: Double = 30
    /// Maps an origin URL to the key it is cached under, so that several URLs
    /// (e.g. signed CDN URLs whose token changes) share one cache entry.
    public var cacheKey: @Sendable (String) -> String = { $0 }

    public init(cacheDirectory: String, host: String = "127.0.0.1", port: Int = 0) {
        self.cacheDirectory = cacheDirectory
        self.host = host
        self.port = port
    }

    var proxyConfiguration: ProxyConfiguration {
        var configuration = ProxyConfiguration(cacheDirectory: cacheDirectory)
        configuration.host = host
        configuration.port = port
        configuration.upstream.connectTimeout = UInt64(max(0.001, connectTimeout) * 1000)
        configuration.upstream.readTimeout = UInt64(max(0.001, readTimeout) * 1000)
        configuration.cacheKey = cacheKey
        return configuration
    }
}
