import CacheHTTP
import CacheLoading
import CacheUpstream

/// Everything the proxy needs to run: its engine's settings and its own.
/// Made from a validated `HTTPCacheConfiguration`, which holds the defaults.
package struct ProxyConfiguration: Sendable {
    package var engine: EngineConfiguration
    package var connection: ConnectionStateMachine.Settings
    package var host = "127.0.0.1"
    package var port = 0
    /// Event loops serving clients (the engine's and loops - 1 more, see ProxyServer).
    package var loops = 1
    /// The `httpcache` binary owns its process: it raises the open-file
    /// limit and gives free heap pages back once no client is connected. A
    /// host embedding the library owns its limits and heap.
    package var ownsProcess = false
    /// Most client connections at once, over every loop; nil: 80% of the
    /// open-file limit. `MediaCache` sets it from its `DescriptorBudget`.
    package var maxClientConnections: Int?
    /// Origin hosts the proxy may fetch from (empty: any).
    package var allowedOrigins: [String] = []
    /// Where one line per response is appended (nil: no access log).
    package var accessLogPath: String?
    /// Reverse-proxy mode: every request path and query maps onto this
    /// origin (CDN-Cache-Control then applies, RFC 9213).
    package var reverseOrigin: OriginURL?

    package init(engine: EngineConfiguration, connection: ConnectionStateMachine.Settings) {
        self.engine = engine
        self.connection = connection
    }
}
