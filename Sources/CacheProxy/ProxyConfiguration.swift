import CacheHTTP
import CacheLoading

/// The proxy's settings and its engine's, made from a validated `HTTPCacheConfiguration` (the defaults).
package struct ProxyConfiguration: Sendable {
    package var engine: EngineConfiguration
    package var connection: ConnectionStateMachine.Settings
    package var host = "127.0.0.1"
    package var port = 0
    /// Event loops serving clients (the engine's and loops - 1 more, see ProxyServer).
    package var loops = 1
    /// The `httpcache` binary owns its process: it raises the open-file limit and gives free heap
    /// pages back once no client is connected. A host embedding the library owns its limits and heap.
    package var ownsProcess = false
    /// Over every loop; nil: 80% of the open-file limit. `MediaCache` sets it from its `DescriptorBudget`.
    package var maxClientConnections: Int?
    /// nil: half the connection cap (one client cannot take every slot).
    package var maxConnectionsPerClient: Int?
    /// Public names reverse-proxy requests may carry as Host (`--server-name`), besides loopback names.
    package var serverNames: [String] = []
    /// Without this opt-in a LAN-mode reverse proxy does not start (LAN clients, origin credentials).
    package var allowsLANReverseProxy = false
    package var accessLogPath: String?
    package var cacheStatusName = "httpcache"
    /// Reverse-proxy mode: every request maps onto this origin (CDN-Cache-Control applies, RFC 9213).
    package var reverseOrigin: OriginURL?
    /// Milliseconds a CONNECT tunnel may pass no byte: seconds, not minutes, since it holds an origin slot.
    package var tunnelIdleTimeout: UInt64 = 30_000

    package init(engine: EngineConfiguration, connection: ConnectionStateMachine.Settings = .init()) {
        self.engine = engine
        self.connection = connection
    }

    /// Why the proxy cannot start (`MediaCache.serve()` asks; each value alone the option table checked).
    package var problem: String? {
        if AccessPolicy.mode(forBindHost: host) == .lan && reverseOrigin != nil && !allowsLANReverseProxy {
            return "reverse proxying on a LAN address (\(host)) lets every LAN client reach the origin with the "
                + "proxy's credentials: bind to loopback, or opt in with --allow-lan-reverse-proxy"
        }
        return nil
    }
}
