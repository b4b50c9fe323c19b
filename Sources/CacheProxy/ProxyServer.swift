import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage
import Logging

/// The HTTP face of an engine: accepts clients, routes their requests and answers them from the
/// engine's loader. Loop thread only. With several loops there is one server per loop, all on the
/// port (SO_REUSEPORT), each with its loop's engine, owning the resources whose key hashes to it. A
/// request for another loop's resource is answered here from the owner's copy when it is a hit of a
/// complete, fresh resource (`PlainHitCache`); any other goes, with its connection, to the owner's
/// loop (`MovedConnection`) and comes back once idle. The first loop's server (`isHome`) also answers
/// admin and stats for all. Servers talk only through their loops' queues (`LoopLink`).
package final class ProxyServer {
    package let engine: Engine
    package let configuration: ProxyConfiguration
    package let loop: EventLoop
    package var logger: Logger { engine.logger }
    package var loader: Loader { engine.loader }
    /// Which shard this loop's engine owns.
    let index: Int
    /// The first loop's server: owns the lock file's address, the access log, admin, stats and preloads.
    var isHome: Bool { index == 0 }
    var heads = ResponseHeads()
    var targets = TargetCache()
    var metrics = ProxyMetrics()
    /// Shared by every loop's server; a reload may start, move or stop it.
    var accessLog: AccessLogWriter?
    /// Who may ask what (Host, signed URLs, loopback-only routes); a reload may change its destinations.
    package internal(set) var access: AccessPolicy
    /// This proxy's name in Via (RFC 9110 §7.6.3), readable on every loop.
    let viaPseudonym: String
    var cacheStatusName: String { configuration.cacheStatusName }
    /// Every loop's server by shard, this one included (see `join(_:)`).
    private(set) var peers: [LoopLink] = []
    /// Copies of plain hits: of its own resources (its hits skip the reader), of others', asked of owners.
    let plainHits: PlainHitCache
    private let startedAt = WallClock.milliseconds()
    var listener: Listener?
    private(set) var stopped = false
    /// Draining (SIGQUIT): not listening, answering what is in flight.
    var isDraining = false
    var connections: [ObjectIdentifier: ClientConnection] = [:] {
        didSet { if peers.count > 1 { loads.set(index, connections.count) } }
    }
    /// Connections on this loop by client address (`ClientConnection.clientKey`).
    private var perClient: [String: Int] = [:]
    /// Every loop's connection count, shared by the servers (see LoopLoads).
    let loads: LoopLoads
    /// CONNECT tunnels open on this loop (capped below the origin slots).
    var tunnelQuota: TunnelQuota
    var tunnelWarnings = LogThrottle()

    /// Starts listening for `engine` (the first shard's) on its loop. Call on that loop.
    package convenience init(engine: Engine, configuration: ProxyConfiguration) throws {
        try self.init(engine: engine, configuration: configuration, home: nil)
    }

    /// A server for another shard's `engine`, on the port of `home`. Call on `engine`'s loop.
    package convenience init(joining home: ProxyServer, engine: Engine, port: Int) throws {
        var configuration = home.configuration
        configuration.port = port
        try self.init(engine: engine, configuration: configuration, home: home)
    }

    private init(engine: Engine, configuration: ProxyConfiguration, home: ProxyServer?) throws {
        let loop = engine.loop
        loop.assertInLoop()
        self.engine = engine
        self.configuration = configuration
        self.loop = loop
        index = engine.store.shardIndex
        plainHits = PlainHitCache(epoch: engine.store.epoch, loop: loop, maxEntries: engine.store.maxOpenFiles * 3 / 4,
                                  clock: engine.store.clock)
        loads = home?.loads ?? LoopLoads(loops: configuration.loops)
        tunnelQuota = TunnelQuota(originSlots: engine.client.configuration.maxConnections)
        viaPseudonym = engine.configuration.policy.viaPseudonym
        heads.bypassStatus = CacheStatusField.bypass.value(name: configuration.cacheStatusName)
        let softLimit = configuration.ownsProcess ? FileLimit.raiseToHard() : FileLimit.soft()
        let cap = configuration.maxClientConnections ?? FileLimit.defaultConnectionCap(softLimit: softLimit)
        // Each loop accepts its share; connections handed over from other loops are not refused.
        maxConnections = max(1, cap / max(1, configuration.loops))
        // Half the cap by default: one client (a slowloris) never takes every slot.
        let perClient = configuration.maxConnectionsPerClient ?? max(1, cap / 2)
        maxConnectionsPerClient = max(1, perClient / max(1, configuration.loops))
        let mode = AccessPolicy.mode(forBindHost: configuration.host)
        let signer = mode == .lan ? URLSigner(key: try URLSigningKey.loadOrCreate(folder: engine.store.root,
                                                                                      keys: engine.store.group.keys)) : nil
        access = AccessPolicy(mode: mode, signer: signer, destinations: engine.configuration.upstream.destinations,
                              serverNames: configuration.serverNames)
        if mode == .lan && home == nil {
            engine.logger.notice("LAN mode: only signed proxy URLs are served; admin and stats to loopback peers only",
                                 metadata: ["host": "\(configuration.host)"])
        }
        accessLog = try home != nil ? home?.accessLog
            : configuration.accessLogPath.map { try AccessLogWriter(path: $0, logger: engine.logger) }
        adminToken = home?.adminToken ?? (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined()
        listener = try Listener.listen(on: loop, host: configuration.host, port: configuration.port,
                                       sharedPort: configuration.loops > 1, first: home == nil) { [unowned self] socket in
            self.accept(socket)
        }
        peers = [LoopLink(self)]
        if home == nil { engine.store.lock.publish(address: address, token: adminToken) }
    }

    /// Every loop's server is listening: `servers` by shard, this one among them.
    package func join(_ servers: [LoopBound<ProxyServer>]) {
        loop.assertInLoop()
        peers = servers.map { LoopLink($0.unchecked) }  // a link posts to the server's loop before touching it
        let waiting = beforeJoin
        beforeJoin.removeAll()
        for arrival in waiting {
            switch arrival {
            case .accepted(let socket, let balanced): accept(socket, balanced: balanced)
            case .moved(let moved): adopt(moved)
            }
        }
    }

    /// Whether every loop's server is known: only then can a request go to its resource's owner.
    var joined: Bool { peers.count == configuration.loops }
    /// Connections that came before `join` (the first server listens before the others exist).
    private var beforeJoin: [Arrival] = []

    private enum Arrival {
        case accepted(Socket, balanced: Bool)
        case moved(MovedConnection)
    }

    func owner(of storeKey: String) -> Int { engine.store.group.shard(ofKey: storeKey) }

    /// Secret that `/admin/` requests must carry (in the lock file, readable by its owner only).
    let adminToken: String

    package var port: Int { listener?.port ?? configuration.port }
    /// "host:port" this proxy listens on (IPv6 in brackets): the Host of proxy URLs for a client without one.
    var address: String { OriginURL.authority(host: configuration.host, port: port) }

    func connectionClosed(_ connection: ClientConnection) {
        // Called again when the socket's close completes: count it once.
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        let key = connection.clientKey
        if let count = perClient[key], count > 1 { perClient[key] = count - 1 } else { perClient[key] = nil }
        if connections.count < maxConnections { listener?.resume() }
        if connections.isEmpty && configuration.ownsProcess { trimWhenStillIdle() }
    }

    /// A daemon mostly rests: once no client was connected a moment, free heap pages go back.
    private var idleTrim: Deadline?

    private func trimWhenStillIdle() {
        if let idleTrim {
            idleTrim.reset(milliseconds: Self.idleTrimDelay)
        } else {
            // Unowned (the deadline is ours): a weak reference would give the server a side table,
            // slowing every `server` access on the hit path.
            idleTrim = Deadline(on: loop, after: Self.idleTrimDelay) { [unowned self] in
                guard self.connections.isEmpty else { return }
                MallocArenas.trimFreeMemory()
            }
        }
    }

    static let idleTrimDelay: UInt64 = 200

    // MARK: the connection cap

    let maxConnections: Int
    let maxConnectionsPerClient: Int
    /// Hands out idle-since stamps (oldest idle connection = smallest).
    private var idleClock: UInt64 = 0
    private var limitWarnings = LogThrottle()

    func nextIdleStamp() -> UInt64 {
        idleClock += 1
        return idleClock
    }

    /// At the cap, a paused listener accepts again (room is made by closing the connection idle the longest).
    func connectionBecameIdle() {
        if listener?.isPaused == true { listener?.resume() }
    }

    /// At the cap the oldest idle connection closes (a keep-alive may never be used again); with none idle
    /// the listener pauses: newcomers wait in the backlog holding no descriptor (handed over: 503).
    private func accept(_ socket: Socket, balanced: Bool = false) {
        guard joined else { return beforeJoin.append(.accepted(socket, balanced: balanced)) }
        // Fewer connections elsewhere: the new one goes there, before any byte is read.
        if !balanced, peers.count > 1, let target = loads.lessBusy(than: index, holding: connections.count),
           let handed = socket.detach() {
            metrics.connectionsBalanced += 1
            peers[target].run { $0.acceptBalanced(handed) }  // if that loop is gone, `handed` closes the socket
            return
        }
        let client = ClientConnection.clientKey(of: socket.peerAddress)
        // The client's own idle connection the longest goes; with none idle, the newcomer.
        if perClient[client, default: 0] >= maxConnectionsPerClient,
           !makeRoom(among: { $0.clientKey == client }, for: socket, "per-client connection limit reached",
                     ["client": "\(client)", "limit": "\(maxConnectionsPerClient)"],
                     closing: "closing its oldest idle connection", refusing: "503 to the client's new connections",
                     refusal: "Service unavailable: too many connections from this client\n") {
            return
        }
        if connections.count >= maxConnections,
           !makeRoom(among: { _ in true }, for: socket, "client connection limit reached", ["limit": "\(maxConnections)"],
                     closing: "closing the oldest idle connection", refusing: "503 to new clients",
                     refusal: "Service unavailable: too many connections\n") {
            listener?.pause()
            return
        }
        added(ClientConnection(socket: socket, server: self))
    }

    /// At a cap: closes the oldest idle connection among `candidates`; with none, answers 503, returns false.
    private func makeRoom(among candidates: (ClientConnection) -> Bool, for socket: Socket, _ warning: String,
                          _ metadata: Logger.Metadata, closing: String, refusing: String, refusal: String) -> Bool {
        let oldest = connections.values.filter { $0.isIdle && candidates($0) }.min { $0.idleSince < $1.idleSince }
        if let count = limitWarnings.occurred(now: Int64(loop.nowMilliseconds)) {
            let action = oldest == nil ? refusing : closing
            logger.warning("\(warning)", metadata: metadata.merging(["times": "\(count)", "action": "\(action)"]) { $1 })
        }
        if let oldest {
            oldest.close()
            return true
        }
        socket.write(heads.simple(503, refusal, keepAlive: false, extra: [("Retry-After", "1")]))
        socket.closeAfterDrain()
        return false
    }

    private func added(_ connection: ClientConnection) {
        connections[ObjectIdentifier(connection)] = connection
        perClient[connection.clientKey, default: 0] += 1
        if connections.count >= maxConnections,
           !connections.values.contains(where: { $0.isIdle && $0 !== connection }) {
            listener?.pause()
        }
    }

    func noteSendTimeout() {
        metrics.clientSendTimeouts += 1
        if let count = limitWarnings.occurred(now: Int64(loop.nowMilliseconds)) {
            logger.warning("closed clients that stopped reading", metadata: [
                "timeoutMilliseconds": "\(configuration.connection.sendTimeout)", "times": "\(count)"])
        }
    }

    /// Every loop's counters, asked through their queues (`done` runs later, on this loop).
    func snapshot(_ done: @escaping (MetricsSnapshot) -> Void) {
        everyLoop({ server, answer in answer(server.figures) }) { [self] all in
            var total = MetricsSnapshot(uptimeSeconds: Double(WallClock.milliseconds() - startedAt) / 1000,
                                        accessLogDropped: accessLog?.droppedLines ?? 0, loops: configuration.loops)
            for figures in all { if let figures { total.add(figures) } }
            if let ledger = engine.group?.prefetchLedger { total.prefetch = ledger.counts }
            done(total)
        }
    }

    /// One loop's counts, as `/stats` adds them up (`MetricsSnapshot.add`).
    private var figures: MetricsSnapshot {
        MetricsSnapshot(proxy: metrics, engine: loader.currentCounters, openConnections: connections.count,
                        cacheSizeBytes: engine.store.totalBytes, cacheEntries: engine.store.count,
                        hintsFetched: engine.preloaderIfMade?.hintsFetched ?? 0,
                        hintsFailed: engine.preloaderIfMade?.hintsFailed ?? 0)
    }

    // MARK: work on other loops (admin, stats)

    /// Runs `work` on every loop's server; `done` runs here with the answers by shard (nil: loop stopped).
    func everyLoop<T: Sendable>(_ work: @escaping @Sendable (ProxyServer, _ answer: @escaping @Sendable (T) -> Void) -> Void,
                                _ done: @escaping ([T?]) -> Void) {
        let reply = LoopBound(done, loop: loop)
        let peers = self.peers
        FanIn.gather(peers.count, start: { slot, answer in
            peers[slot].run { server in work(server) { answer($0) } }
        }, done: { answers in reply.loop.execute { reply.value(answers) } })
    }

    // MARK: several loops

    /// On the owning loop: what any loop may answer by itself for it this second (nil: the owner must).
    func plainHit(url: OriginURL, storeKey: String) -> PlainHit? {
        loop.assertInLoop()
        // A transformed body (decryption, rewritten playlists) is made per response here.
        // Only an entry at hand: one not read yet goes through a reader, which loads it off the loop.
        guard engine.decryption == nil, engine.store.atHand(storeKey: storeKey)?.isComplete == true else {
            return nil  // (nothing complete: no reader, so a miss leaves no empty entry behind)
        }
        let reader = engine.reader(url: url, spec: nil, storeKey: storeKey)
        defer { reader.close() }
        guard let hit = reader.plainHit(),
              !ProxyExchange.isPlaylist(reader.resource, info: hit.info, path: url.pathAndQuery),
              !ProxyExchange.isManifest(reader.resource, info: hit.info, path: url.pathAndQuery) else { return nil }
        return hit
    }

    /// On the owning loop: hits answered on other loops, for the LRU order.
    func touch(_ keys: [String]) {
        for key in keys { engine.store.touch(storeKey: key) }
    }

    /// A connection another loop accepted and handed over untouched (see `accept`).
    func acceptBalanced(_ handed: HandedSocket) {
        guard !stopped, let socket = try? Socket.adopt(handed, on: loop) else { return }
        accept(socket, balanced: true)
    }

    /// A connection another loop handed over: with a request this loop must answer, or idle, back home.
    func adopt(_ moved: MovedConnection) {
        guard joined else { return beforeJoin.append(.moved(moved)) }
        // Stopped: dropping `moved` closes its socket.
        guard !stopped, let socket = try? Socket.adopt(moved.socket, on: loop) else { return }
        let connection = ClientConnection(moved: moved, socket: socket, server: self)
        added(connection)
        connection.resume(moved.request)
    }

    func responded(_ record: ResponseRecord) {
        metrics.recordResponse(status: record.status, cache: record.cache, word: record.cacheStatus.word)
        metrics.addBytesFromCache(record.bytesFromCache)
        if let cmcd = record.cmcd { metrics.cmcd.record(cmcd) }
        guard let accessLog else { return }
        let now = WallClock.milliseconds()
        let entry = AccessLogEntry(time: now, client: record.client, method: record.method, target: record.target,
                                   status: record.status, bytesSent: record.bytesSent,
                                   bytesFromOrigin: record.bytesFromOrigin, cache: record.cache,
                                   cacheStatus: record.cacheStatus.logWord,
                                   durationMilliseconds: Double(WallClock.monotonicNanoseconds() - record.startedAt) / 1e6,
                                   sessionID: record.cmcd?.string(.sessionID),
                                   bufferLength: record.cmcd?.integer(.bufferLength))
        accessLog.append(line: entry.line())
    }

    /// Stops accepting and drops clients. The engine stays open.
    package func stop() {
        loop.assertInLoop()
        stopped = true
        // Its clients go now: none may start work on an engine about to stop.
        for connection in Array(connections.values) { connection.close() }
        for case .accepted(let socket, _) in beforeJoin { socket.close() }
        beforeJoin.removeAll()  // moved ones close their sockets as they go
        listener?.close()
        listener = nil
        idleTrim?.cancel()
        idleTrim = nil
        plainHits.close()
        guard isHome else { return }  // the first loop's server owns the lock file's address and the log
        engine.store.lock.publish(address: nil, token: nil)
        accessLog?.close()
    }
}

struct ResponseRecord {
    var client: String
    var method: String
    var target: String
    var status: Int
    var cache: CacheStatus
    /// The Cache-Status the response carried (RFC 9211); its word goes to the access log and /metrics.
    var cacheStatus = CacheStatusField.bypass
    var bytesSent: UInt64
    var bytesFromCache: UInt64 = 0
    var bytesFromOrigin: UInt64 = 0
    /// `WallClock.monotonicNanoseconds()` when the request head was complete.
    var startedAt: UInt64
    var cmcd: CMCD?
}
