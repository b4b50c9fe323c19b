import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage
import CacheUpstream
import Glibc
import Logging

/// The HTTP face of an engine: accepts clients, routes their requests and
/// answers them from the engine's loader. One client of the engine among
/// others (readers, preloads). Loop thread only.
package final class ProxyServer {
    package let engine: Engine
    package let configuration: ProxyConfiguration
    package var loop: EventLoop { engine.loop }
    package var logger: Logger { engine.logger }
    package var loader: Loader { engine.loader }
    let headLimits = HeadLimits()
    var heads = ResponseHeads()
    var targets = TargetCache()
    var metrics = ProxyMetrics()
    let connectionSettings: ConnectionStateMachine.Settings
    let accessLog: AccessLogWriter?
    /// Who may ask what (Host check, signed URLs, loopback-only routes).
    package let access: AccessPolicy
    private let startedAt = AccessLogEntry.wallClockMilliseconds()
    private var listener: Listener?
    private var connections: [ObjectIdentifier: ClientConnection] = [:]

    /// Starts listening for `engine`. Call on the loop thread.
    package init(engine: Engine, configuration: ProxyConfiguration) throws {
        engine.loop.assertInLoop()
        self.engine = engine
        self.configuration = configuration
        var settings = ConnectionStateMachine.Settings()
        settings.keepAliveTimeout = configuration.keepAliveTimeout
        settings.headTimeout = configuration.requestHeadTimeout
        settings.sendTimeout = configuration.clientSendTimeout
        connectionSettings = settings
        let softLimit = FileLimit.raiseToHard()
        maxConnections = configuration.maxClientConnections ?? FileLimit.defaultConnectionCap(softLimit: softLimit)
        let mode = AccessPolicy.mode(forBindHost: configuration.host)
        let signer = mode == .lan ? URLSigner(key: try URLSigningKey.loadOrCreate(folder: engine.store.root)) : nil
        access = AccessPolicy(mode: mode, signer: signer, allowedOrigins: Set(configuration.allowedOrigins))
        if mode == .lan {
            engine.logger.notice("LAN mode: only signed proxy URLs are served; admin and stats to loopback peers only",
                                 metadata: ["host": "\(configuration.host)"])
        }
        accessLog = try configuration.accessLogPath.map { try AccessLogWriter(path: $0, logger: engine.logger) }
        adminToken = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
        listener = try Listener.listen(on: engine.loop, host: configuration.host, port: configuration.port) { [unowned self] socket in
            self.accept(socket)
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        engine.store.lock.publish(address: "\(host):\(port)", token: adminToken)
    }

    /// Secret that `/admin/` requests must carry (published in the cache
    /// folder's lock file, readable by its owner only).
    let adminToken: String

    package var port: Int { listener?.port ?? 0 }

    func connectionClosed(_ connection: ClientConnection) {
        connections[ObjectIdentifier(connection)] = nil
    }

    // MARK: the connection cap

    /// Most client connections at once.
    let maxConnections: Int
    /// Hands out idle-since stamps (oldest idle connection = smallest).
    private var idleClock: UInt64 = 0
    private var limitWarnings = LogThrottle()

    func nextIdleStamp() -> UInt64 {
        idleClock += 1
        return idleClock
    }

    /// At the cap, room is made by closing the connection idle the longest
    /// (a keep-alive the client may never use again); when none is idle, the
    /// newcomer gets 503 and is closed, so the process never runs out of
    /// descriptors for its origins and files.
    private func accept(_ socket: Socket) {
        if connections.count >= maxConnections {
            let oldest = connections.values.filter(\.isIdle).min { $0.idleSince < $1.idleSince }
            if let count = limitWarnings.occurred(now: Int64(loop.nowMilliseconds)) {
                logger.warning("client connection limit reached", metadata: [
                    "limit": "\(maxConnections)", "times": "\(count)",
                    "action": "\(oldest == nil ? "503 to new clients" : "closing the oldest idle connection")"])
            }
            if let oldest {
                oldest.closeIdle()
            } else {
                socket.write(heads.simple(503, "Service unavailable: too many connections\n", keepAlive: false,
                                          extra: [("Retry-After", "1")]))
                socket.closeAfterDrain()
                return
            }
        }
        let connection = ClientConnection(socket: socket, server: self)
        connections[ObjectIdentifier(connection)] = connection
    }

    /// Clients closed because they accepted no byte for the send timeout.
    func noteSendTimeout() {
        metrics.clientSendTimeouts += 1
        if let count = limitWarnings.occurred(now: Int64(loop.nowMilliseconds)) {
            logger.warning("closed clients that stopped reading", metadata: [
                "timeoutMilliseconds": "\(connectionSettings.sendTimeout)", "times": "\(count)"])
        }
    }

    /// Every counter now, for `/stats` and `/metrics`.
    func snapshot() -> MetricsSnapshot {
        metrics.snapshot(engine: loader.currentCounters, openConnections: connections.count,
                         cacheSizeBytes: engine.store.totalBytes, cacheEntries: engine.store.count,
                         uptimeSeconds: Double(AccessLogEntry.wallClockMilliseconds() - startedAt) / 1000,
                         accessLogDropped: accessLog?.droppedLines ?? 0)
    }

    /// Counts one finished response and writes its access-log line.
    func responded(_ record: ResponseRecord) {
        metrics.recordResponse(status: record.status, cache: record.cache)
        metrics.addBytesFromCache(record.bytesFromCache)
        guard let accessLog else { return }
        let now = AccessLogEntry.wallClockMilliseconds()
        accessLog.append(AccessLogEntry(time: now, client: record.client, method: record.method, target: record.target,
                                        status: record.status, bytesSent: record.bytesSent,
                                        bytesFromOrigin: record.bytesFromOrigin, cache: record.cache,
                                        durationMilliseconds: Double(now - record.startedAt)))
    }

    /// Stops accepting and drops clients. The engine stays open.
    package func stop() {
        loop.assertInLoop()
        listener?.close()
        listener = nil
        engine.store.lock.publish(address: nil, token: nil)
        accessLog?.close()
    }
}

/// What is known of one response when it is done.
struct ResponseRecord {
    var client: String
    var method: String
    var target: String
    var status: Int
    var cache: CacheStatus
    var bytesSent: UInt64
    var bytesFromCache: UInt64 = 0
    var bytesFromOrigin: UInt64 = 0
    var startedAt: Int64
}
