import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage
import CacheUpstream
import Logging

/// The listening proxy: accepts clients and owns the loader. Loop thread only.
package final class ProxyServer {
    package let loop: EventLoop
    package let configuration: ProxyConfiguration
    package let logger: Logger
    package let loader: Loader
    let headLimits = HeadLimits()
    var heads = ResponseHeads()
    var targets = TargetCache()
    let connectionSettings: ConnectionStateMachine.Settings
    private var listener: Listener?
    private var connections: [ObjectIdentifier: ClientConnection] = [:]

    /// Opens the cache and starts listening. Call on the loop thread.
    package init(loop: EventLoop, configuration: ProxyConfiguration, logger: Logger) throws {
        loop.assertInLoop()
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        var settings = ConnectionStateMachine.Settings()
        settings.keepAliveTimeout = configuration.keepAliveTimeout
        settings.headTimeout = configuration.requestHeadTimeout
        connectionSettings = settings
        let store = try ResourceStore(root: configuration.cacheDirectory, maxBytes: configuration.maxCacheBytes,
                                      loop: loop, logger: logger)
        let client = try UpstreamClient(loop: loop, configuration: configuration.upstream, logger: logger)
        loader = Loader(store: store, client: client, policy: configuration.policy, logger: logger)
        adminToken = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
        listener = try Listener.listen(on: loop, host: configuration.host, port: configuration.port) { [unowned self] socket in
            let connection = ClientConnection(socket: socket, server: self)
            self.connections[ObjectIdentifier(connection)] = connection
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        store.lock.publish(address: "\(host):\(port)", token: adminToken)
    }

    /// Secret that `/admin/` requests must carry (published in the cache
    /// folder's lock file, readable by its owner only).
    let adminToken: String

    package var port: Int { listener?.port ?? 0 }

    func connectionClosed(_ connection: ClientConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }


    /// Stops accepting, drops clients and downloads, and writes all metadata.
    package func stop() {
        loop.assertInLoop()
        listener?.close()
        listener = nil
        loader.store.lock.publish(address: nil, token: nil)
        loader.cancelAll()
        loader.client.closeAll()
        loader.store.flushAllNow()
    }
}
