import CacheHTTP
import CacheLoading
import CacheUpstream

/// Everything the proxy needs to run: its engine's settings and its own.
package struct ProxyConfiguration: Sendable {
    package var engine: EngineConfiguration
    package var host = "127.0.0.1"
    package var port = 0
    /// Milliseconds an idle keep-alive client connection is kept.
    package var keepAliveTimeout: UInt64 = 60_000
    /// Milliseconds a client has to send a complete request head.
    package var requestHeadTimeout: UInt64 = 30_000
    /// Where one line per response is appended (nil: no access log).
    package var accessLogPath: String?
    /// Reverse-proxy mode: every request path and query maps onto this
    /// origin (CDN-Cache-Control then applies, RFC 9213).
    package var reverseOrigin: OriginURL?

    package init(cacheDirectory: String) {
        engine = EngineConfiguration(cacheDirectory: cacheDirectory)
    }

    package init(engine: EngineConfiguration) {
        self.engine = engine
    }
}
