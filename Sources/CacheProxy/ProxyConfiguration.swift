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
    /// Most client connections at once; nil: 80% of the open-file limit
    /// (after raising the soft limit to the hard one at start).
    package var maxClientConnections: Int?
    /// Most connections one client address may hold at once; nil: a quarter
    /// of the connection cap, at least 16 (one client cannot take every slot).
    package var maxConnectionsPerClient: Int?
    /// Public names reverse-proxy requests may carry as Host (`--server-name`),
    /// besides loopback names (and address literals in LAN mode).
    package var serverNames: [String] = []
    /// The operator's opt-in to reverse proxying on a LAN address: without
    /// it a LAN-mode proxy with `reverseOrigin` does not start (any LAN
    /// client could reach the origin with the proxy's credentials).
    package var allowsLANReverseProxy = false
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

    /// Why the proxy cannot start with these settings; nil when it can.
    package var problem: String? {
        if AccessPolicy.mode(forBindHost: host) == .lan && reverseOrigin != nil && !allowsLANReverseProxy {
            return "reverse proxying on a LAN address (\(host)) lets every LAN client reach the origin with the "
                + "proxy's credentials: bind to loopback, or opt in with --allow-lan-reverse-proxy"
        }
        if let perClient = maxConnectionsPerClient, perClient < 1 {
            return "the connections per client must be at least 1"
        }
        return nil
    }
}

/// A configuration the proxy refuses to start with (see `ProxyConfiguration.problem`).
package struct ProxyConfigurationError: Error, CustomStringConvertible {
    package let description: String
}
