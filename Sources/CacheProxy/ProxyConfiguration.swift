import CacheHTTP
import CacheLoading
import CacheUpstream

/// Everything the proxy needs to run: its engine's settings and its own.
package struct ProxyConfiguration: Sendable {
    package var engine: EngineConfiguration
    package var host = "127.0.0.1"
    package var port = 0
    /// Event loops serving clients (the engine's and loops - 1 more, see ProxyServer).
    package var loops = 1
    /// Give free heap pages back to the system once no client is connected
    /// (the server binary only: a host embedding the library owns its heap).
    package var trimsHeapWhenIdle = false
    /// Milliseconds an idle keep-alive client connection is kept.
    package var keepAliveTimeout: UInt64 = 60_000
    /// Milliseconds a client has to send a complete request head (from its
    /// first byte; partial reads do not extend it).
    package var requestHeadTimeout: UInt64 = 10_000
    /// Milliseconds a client may accept no byte of its response before it is
    /// closed and its buffers freed.
    package var clientSendTimeout: UInt64 = 60_000
    /// Most client connections at once, over every loop; nil: 80% of the
    /// open-file limit (after raising the soft limit to the hard one at
    /// start). `MediaCache` sets it from its `DescriptorBudget`.
    package var maxClientConnections: Int?
    /// Origin hosts the proxy may fetch from (empty: any).
    package var allowedOrigins: [String] = []
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
