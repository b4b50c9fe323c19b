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
///
/// With several loops (`ProxyConfiguration.loops`) there is one server per
/// loop, all listening on the port (SO_REUSEPORT). The engine's loop owns
/// every resource and its downloads; a server on another loop answers hits
/// of complete, fresh resources from copies the engine's loop hands it
/// (`PlainHitCache`), and hands any other request, with its connection, to
/// the engine's loop (`MovedConnection`). Servers talk only through their
/// loops' queues (`LoopLink`).
package final class ProxyServer {
    package let engine: Engine
    package let configuration: ProxyConfiguration
    /// This server's loop: the engine's, or another one (see the type's doc).
    package let loop: EventLoop
    package var logger: Logger { engine.logger }
    /// The engine's loader: on the engine's loop only.
    package var loader: Loader { engine.loader }
    let headLimits = HeadLimits()
    var heads = ResponseHeads()
    var targets = TargetCache()
    var metrics = ProxyMetrics()
    let connectionSettings: ConnectionStateMachine.Settings
    let accessLog: AccessLogWriter?
    /// Who may ask what (Host check, signed URLs, loopback-only routes).
    package let access: AccessPolicy
    /// This proxy's name in Via (RFC 9110 §7.6.3), readable on every loop.
    let viaPseudonym: String
    /// On a loop other than the engine's: the engine loop's server. Nil on the engine's loop.
    let owner: LoopLink?
    /// Copies of plain hits: asked of the engine's loop on the others, made
    /// here on the engine's loop (its hits skip the reader then).
    let plainHits: PlainHitCache
    /// On the engine's loop: the other loops' servers (see `join(_:)`).
    private var siblings: [LoopLink] = []
    private let startedAt = WallClock.milliseconds()
    private var listener: Listener?
    private var connections: [ObjectIdentifier: ClientConnection] = [:]

    /// Starts listening for `engine` on the engine's loop. Call on that loop.
    package convenience init(engine: Engine, configuration: ProxyConfiguration) throws {
        try self.init(engine: engine, configuration: configuration, loop: engine.loop, owner: nil)
    }

    /// A server for another loop, listening on the same port as `owner` (the
    /// engine loop's server, whose port is shared). Call on `loop`.
    package convenience init(joining owner: ProxyServer, on loop: EventLoop, port: Int) throws {
        var configuration = owner.configuration
        configuration.port = port
        try self.init(engine: owner.engine, configuration: configuration, loop: loop, owner: LoopLink(owner),
                      adminToken: owner.adminToken, accessLog: owner.accessLog)
    }

    private init(engine: Engine, configuration: ProxyConfiguration, loop: EventLoop, owner: LoopLink?,
                 adminToken: String? = nil, accessLog: AccessLogWriter? = nil) throws {
        loop.assertInLoop()
        self.engine = engine
        self.configuration = configuration
        self.loop = loop
        self.owner = owner
        plainHits = PlainHitCache(epoch: engine.store.epoch, loop: loop, owner: owner)
        viaPseudonym = engine.configuration.policy.viaPseudonym
        var settings = ConnectionStateMachine.Settings()
        settings.keepAliveTimeout = configuration.keepAliveTimeout
        settings.headTimeout = configuration.requestHeadTimeout
        settings.sendTimeout = configuration.clientSendTimeout
        connectionSettings = settings
        let softLimit = FileLimit.raiseToHard()
        let cap = configuration.maxClientConnections ?? FileLimit.defaultConnectionCap(softLimit: softLimit)
        // Each loop accepts its share; connections handed to the engine's loop are not refused there.
        maxConnections = max(1, cap / max(1, configuration.loops))
        let mode = AccessPolicy.mode(forBindHost: configuration.host)
        let signer = mode == .lan ? URLSigner(key: try URLSigningKey.loadOrCreate(folder: engine.store.root)) : nil
        access = AccessPolicy(mode: mode, signer: signer, allowedOrigins: Set(configuration.allowedOrigins))
        if mode == .lan && owner == nil {
            engine.logger.notice("LAN mode: only signed proxy URLs are served; admin and stats to loopback peers only",
                                 metadata: ["host": "\(configuration.host)"])
        }
        if owner == nil {
            self.accessLog = try configuration.accessLogPath.map { try AccessLogWriter(path: $0, logger: engine.logger) }
        } else {
            self.accessLog = accessLog
        }
        self.adminToken = adminToken ?? (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
        listener = try Listener.listen(on: loop, host: configuration.host, port: configuration.port,
                                       sharedPort: configuration.loops > 1) { [unowned self] socket in
            self.accept(socket)
        }
        if owner == nil {
            let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            engine.store.lock.publish(address: "\(host):\(port)", token: self.adminToken)
        }
    }

    /// On the engine's loop: another loop's server is listening too.
    package func join(_ sibling: ProxyServer) {
        loop.assertInLoop()
        siblings.append(LoopLink(sibling))
    }

    /// Secret that `/admin/` requests must carry (published in the cache
    /// folder's lock file, readable by its owner only).
    let adminToken: String

    package var port: Int { listener?.port ?? configuration.port }

    func connectionClosed(_ connection: ClientConnection) {
        connections[ObjectIdentifier(connection)] = nil
        if connections.isEmpty && configuration.trimsHeapWhenIdle { trimWhenStillIdle() }
    }

    /// A daemon spends most of its life at rest: once no client has been
    /// connected for a moment, the heap's free pages go back to the system.
    private var idleTrim: Deadline?

    private func trimWhenStillIdle() {
        if let idleTrim {
            idleTrim.reset(milliseconds: Self.idleTrimDelay)
        } else {
            idleTrim = Deadline(on: loop, after: Self.idleTrimDelay) { [weak self] in
                guard let self, self.connections.isEmpty else { return }
                MallocArenas.trimFreeMemory()
            }
        }
    }

    static let idleTrimDelay: UInt64 = 200

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

    /// Every counter now, for `/stats` and `/metrics`: this loop's and, on
    /// the engine's loop, every other loop's (asked through their queues, so
    /// `done` may run later, on this loop).
    func snapshot(_ done: @escaping (MetricsSnapshot) -> Void) {
        guard !siblings.isEmpty else { return done(snapshot(adding: metrics, connections: connections.count)) }
        let token = nextGather
        nextGather += 1
        gathers[token] = Gather(expected: siblings.count, metrics: metrics, connections: connections.count, done: done)
        let back = LoopLink(self)
        for sibling in siblings {
            let sent = sibling.run { server in
                let figures = (server.metrics, server.connections.count)
                back.run { $0.gathered(token, figures.0, figures.1) }
            }
            if !sent { gathered(token, ProxyMetrics(), 0) }
        }
    }

    /// The figures of a `/stats` request gathered so far, and who waits for them.
    private struct Gather {
        var expected: Int
        var metrics: ProxyMetrics
        var connections: Int
        let done: (MetricsSnapshot) -> Void
    }

    private var gathers: [Int: Gather] = [:]
    private var nextGather = 0

    private func gathered(_ token: Int, _ metrics: ProxyMetrics, _ connections: Int) {
        guard var gather = gathers.removeValue(forKey: token) else { return }
        gather.metrics.add(metrics)
        gather.connections += connections
        gather.expected -= 1
        guard gather.expected == 0 else { return gathers[token] = gather }
        gather.done(snapshot(adding: gather.metrics, connections: gather.connections))
    }

    private func snapshot(adding metrics: ProxyMetrics, connections: Int) -> MetricsSnapshot {
        metrics.snapshot(engine: loader.currentCounters, openConnections: connections,
                         cacheSizeBytes: engine.store.totalBytes, cacheEntries: engine.store.count,
                         uptimeSeconds: Double(WallClock.milliseconds() - startedAt) / 1000,
                         accessLogDropped: accessLog?.droppedLines ?? 0, loops: configuration.loops)
    }

    // MARK: several loops

    /// On the engine's loop: what another loop may answer by itself for
    /// `storeKey` this second (nil: hand the request over).
    func plainHit(url: OriginURL, storeKey: String) -> PlainHit? {
        loop.assertInLoop()
        let configuration = engine.configuration
        // A transformed body (decryption, rewritten playlists) is made per response here.
        guard engine.decryption == nil, configuration.transforms == nil || configuration.transformsOnlyPlaylists,
              engine.store.resources[storeKey]?.isComplete == true else {
            return nil  // (nothing complete: no reader, so a miss leaves no empty entry behind)
        }
        let reader = engine.reader(url: url, spec: nil, storeKey: storeKey)
        defer { reader.close() }
        guard let hit = reader.plainHit(),
              !ProxyExchange.isPlaylist(reader.resource, info: hit.info, path: url.pathAndQuery) else { return nil }
        return hit
    }

    /// On the engine's loop: hits answered on other loops, for the LRU order.
    func touch(_ keys: [String]) {
        for key in keys { engine.store.resources[key]?.touch() }
    }

    /// A connection another loop handed over: with a request (on the
    /// engine's loop), or idle, back home.
    func adopt(_ moved: MovedConnection) {
        guard let socket = try? Socket.adopt(moved.socket, on: loop) else { return }
        let connection = ClientConnection(moved: moved, socket: socket, server: self)
        connections[ObjectIdentifier(connection)] = connection
        connection.resume(moved.request)
    }

    /// Counts one finished response and writes its access-log line.
    func responded(_ record: ResponseRecord) {
        metrics.recordResponse(status: record.status, cache: record.cache)
        metrics.addBytesFromCache(record.bytesFromCache)
        guard let accessLog else { return }
        let now = WallClock.milliseconds()
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
        idleTrim?.cancel()
        idleTrim = nil
        plainHits.close()
        guard owner == nil else { return }  // the engine loop's server owns the lock file and the log
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
