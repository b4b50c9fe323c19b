import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage
import Logging

/// Drives one client connection: feeds socket and exchange events into its
/// `ConnectionStateMachine` and performs the actions it returns.
///
/// Events raised while actions run (an exchange that finishes at once, say)
/// are queued and handled by the loop in `run`, never by calling back into
/// the machine, so the stack depth stays constant however many requests a
/// client pipelines. Kept alive by its socket until the socket closes.
final class ClientConnection: SocketDelegate {
    /// Something that happened while the machine was busy acting.
    private enum Event {
        case bytes([UInt8])
        case eof
        case drained
        case timer
        case responseQueued(keepAlive: Bool)
        case responseAborted
    }

    private let socket: Socket
    private unowned let server: ProxyServer
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (a share of every hit).
    @exclusivity(unchecked) private var machine: ConnectionStateMachine
    @exclusivity(unchecked) private var pending: [Event] = []
    private var running = false
    /// The response in flight, if it is not answered at once.
    private var exchange: ActiveExchange?
    private var timer: Deadline?
    /// Data files with sendfile ranges still queued on the socket.
    private var filesInFlight: [DataFile] = []
    /// The peer, read once (access log, loopback-only routes).
    private let peer: SocketAddress?
    private lazy var peerText = peer?.description ?? "-"
    /// The response in flight, for the metrics and the access log.
    private var record: ResponseRecord?
    private var sentBefore: UInt64 = 0
    private var hostMemo = HostFacts.Memo()
    /// A request another loop must answer (it owns the resource, or it is
    /// the first loop and this is admin or stats): the connection goes there
    /// with it once the machine's current actions are done.
    private var moving: (head: HTTPRequestHead, body: [UInt8]?, to: LoopLink)?
    /// For a connection another loop handed over with a request: that loop,
    /// where it goes back once idle (so its later requests are routed from
    /// there again and the loops stay balanced).
    private let home: LoopLink?

    init(socket: Socket, server: ProxyServer) {
        self.socket = socket
        self.server = server
        machine = ConnectionStateMachine(settings: server.connectionSettings)
        peer = socket.peerAddress
        home = nil
        socket.delegate = self
        idleSince = server.nextIdleStamp()
        perform(machine.start())
    }

    /// A connection handed over by another loop: in the middle of a request
    /// (to the loop that must answer it), or idle (back home).
    init(moved: MovedConnection, socket: Socket, server: ProxyServer) {
        self.socket = socket
        self.server = server
        machine = moved.machine
        peer = moved.peer
        home = moved.request == nil || moved.home.loop === server.loop ? nil : moved.home
        socket.delegate = self
        idleSince = server.nextIdleStamp()
        if moved.reading { socket.startReading() }
    }

    /// Goes on where the other loop left off: answers the request it was
    /// handed over with, or waits idle for the next one (with its timeout).
    func resume(_ request: (head: HTTPRequestHead, body: [UInt8]?)?) {
        guard let request else {
            return setTimer(server.connectionSettings.keepAliveTimeout)
        }
        running = true
        handle(request.head, body: request.body)
        running = false
        processPending()
    }

    // MARK: the connection cap

    /// When the connection last became idle (a stamp from the server).
    private(set) var idleSince: UInt64 = 0

    /// No request in flight nor begun: the one to close first at the cap.
    var isIdle: Bool { machine.state == .awaitingHead && machine.unparsed == 0 }

    /// Closed by the server (to make room for a new client, or stopping). It
    /// leaves the server's count at once (the socket's close is
    /// asynchronous), so a burst of newcomers closes one idle connection
    /// each, not the same one again.
    func close() {
        server.connectionClosed(self)
        socket.close()
    }

    // MARK: the driver

    /// Feeds one event to the machine and performs its actions, then every
    /// event those actions raised, in order. An event arriving while this
    /// runs is only queued: the loop below picks it up.
    private func drive(_ event: Event) {
        pending.append(event)
        processPending()
    }

    private func processPending() {
        guard !running else { return }
        running = true
        while !pending.isEmpty {
            let actions: [ConnectionStateMachine.Action]
            switch pending.removeFirst() {
            case .bytes(let bytes): actions = bytes.withUnsafeBytes { machine.bytesRead($0) }
            case .eof: actions = machine.peerFinished()
            case .drained: actions = machine.socketDrained()
            case .timer:
                actions = machine.timerFired(.init(bytesSent: socket.bytesSent, queued: socket.queuedBytes))
                if machine.sendTimedOut { server.noteSendTimeout() }
            case .responseQueued(let keepAlive):
                actions = machine.responseQueued(keepAlive: keepAlive, drained: socket.queuedBytes == 0)
            case .responseAborted: actions = machine.responseAborted()
            }
            perform(actions)
        }
        running = false
        if let request = moving {
            moving = nil
            server.metrics.loopHandoffs += 1
            move(to: request.to, (request.head, request.body))
        } else if let home, isIdle, !socket.isClosed {
            move(to: home, nil)
        }
    }

    /// Hands the connection (its socket, its machine with any pipelined
    /// bytes) to another loop's server: with a request to answer, or to its
    /// home loop's, idle. Nothing is queued between
    /// responses, so the socket detaches whole.
    private func move(to link: LoopLink, _ request: (head: HTTPRequestHead, body: [UInt8]?)?) {
        guard !socket.isClosed else { return }
        let reading = socket.isReading
        guard let handed = socket.detach() else {
            socket.close()  // cannot happen between responses; never answer from the wrong loop
            return
        }
        timer?.cancel()
        timer = nil
        record = nil
        pending.removeAll()
        server.connectionClosed(self)
        let moved = MovedConnection(socket: handed, machine: machine, request: request, peer: peer, reading: reading,
                                    home: home ?? LoopLink(server))
        link.run { $0.adopt(moved) }  // if that loop is gone, `handed` closes the socket
    }

    /// This loop cannot answer the request: shard `index`'s loop will.
    private func handOver(_ head: HTTPRequestHead, body: [UInt8]? = nil, to index: Int) {
        moving = (head, body, server.peers[index])
        if !running { processPending() }
    }

    private func perform(_ actions: [ConnectionStateMachine.Action]) {
        for action in actions {
            switch action {
            case .handle(let head): handle(head)
            case .handleWithBody(let head, let body): handle(head, body: body)
            case .sendContinue: socket.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            case .reject(let error): reject(error)
            case .startReading: socket.startReading()
            case .stopReading: socket.stopReading()
            case .setTimer(let milliseconds?): setTimer(milliseconds)
            case .setTimer(nil): break  // the timer stays armed: a fire the machine no longer wants is ignored by it
            case .closeAfterDrain: socket.closeAfterDrain()
            case .closeNow: socket.close()
            case .endResponse: endResponse()
            }
        }
    }

    private func setTimer(_ milliseconds: UInt64) {
        if let timer {
            timer.reset(milliseconds: milliseconds)
        } else {
            timer = Deadline(on: server.loop, after: milliseconds) { [weak self] in
                self?.drive(.timer)
            }
        }
    }

    // MARK: requests

    private func handle(_ head: HTTPRequestHead, body: [UInt8]? = nil) {
        let isHead = head.method == "HEAD"
        sentBefore = socket.bytesSent
        record = ResponseRecord(client: peerText, method: head.method, target: head.target, status: 0, cache: .bypass,
                                bytesSent: 0, startedAt: WallClock.milliseconds())
        // Intermediary checks first (Host present and single, Via loops), then the mode the target selects.
        let host = hostMemo.facts(for: head)
        switch RequestRoute.resolve(head, pseudonym: server.viaPseudonym,
                                    reverseOrigin: server.configuration.reverseOrigin,
                                    peerIsLoopback: peer?.isLoopback ?? false, host: host) {
        case .refuse(let status, let reason):
            return respondSimple(status, reason + "\n", keepAlive: false, head: head)
        case .transparent(let url):
            // Forward (loopback peers only, checked by the route) and reverse
            // modes name the origin in Host, so the rebinding check is not theirs.
            return handleTransparent(head, url: url, body: body)
        case .local:
            break
        }
        // The proxy's own routes: who may use them (Host, LAN signatures, loopback-only routes).
        let verdict = server.access.verdict(for: head, peerIsLoopback: peer?.isLoopback ?? false, host: host)
        guard verdict == .allow else {
            return respondSimple(verdict.status, verdict.body, keepAlive: head.keepAlive, head: head)
        }
        let hasBody = head.headers.contains("transfer-encoding") || (head.headers["content-length"].map { $0 != "0" } ?? false)
        // Proxy URLs first: the hot path does no other routing work.
        if head.target.hasPrefix("/p/") && (head.method == "GET" || isHead) && !hasBody {
            return proxy(head)
        }
        // The other routes depend on the path only (before any query).
        let target = head.target.utf8
        let path = target[..<(target.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)]
        if path.starts(with: "/admin/".utf8) && (head.method == "GET" || head.method == "POST") {
            return server.isHome ? handleAdmin(head) : handOver(head, to: 0)
        }
        guard head.method == "GET" || isHead else {
            // The request may carry a body we will not read: answer and close.
            return respondSimple(405, "Method not allowed\n", keepAlive: false, head: head, extra: [("Allow", "GET, HEAD")])
        }
        if hasBody {
            return respondSimple(400, "Bad request: GET and HEAD take no body\n", keepAlive: false, head: head)
        }
        if path.elementsEqual("/ping".utf8) {
            return respondSimple(200, "pong\n", keepAlive: head.keepAlive, head: head)
        }
        if StatsRoutes.isStats(target: head.target) {
            return server.isHome ? handleStats(head) : handOver(head, to: 0)
        }
        return respondSimple(404, "Not found: proxy URLs look like /p/<encoded origin>/<name>\n",
                             keepAlive: head.keepAlive, head: head)
    }

    private func handleStats(_ head: HTTPRequestHead) {
        let loopback = peer?.isLoopback ?? false
        server.snapshot { [weak self] snapshot in
            guard let self, !self.socket.isClosed,
                  let stats = StatsRoutes.response(target: head.target, peerIsLoopback: loopback, snapshot: snapshot)
            else { return }
            self.respondSimple(stats.status, stats.body, keepAlive: head.keepAlive, head: head,
                               contentType: stats.contentType)
        }
    }

    private func proxy(_ head: HTTPRequestHead) {
        let engine = server.engine
        guard let origin = server.targets.entry(for: head.target, storeKey: { engine.storeKey(for: $0) }) else {
            return respondSimple(400, "Bad request: the proxy URL does not carry an http or https URL\n",
                                 keepAlive: head.keepAlive, head: head)
        }
        let owner = server.owner(of: origin.storeKey)
        if owner != server.index {
            return answerFromCopy(head, url: origin.url, urlString: origin.urlString, storeKey: origin.storeKey,
                                  owner: owner)
        }
        if let hit = localCopy(head, url: origin.url, storeKey: origin.storeKey) {
            return serve(hit, head: head, url: origin.url, urlString: origin.urlString, storeKey: origin.storeKey,
                         transparent: false, owner: owner)
        }
        let exchange = ProxyExchange(connection: self, request: head, url: origin.url, urlString: origin.urlString,
                                     storeKey: origin.storeKey, server: server)
        self.exchange = exchange
        exchange.start()
    }

    /// Forward and reverse proxy modes: the same cache, as a transparent intermediary.
    /// GET and HEAD without a body go through the cache; any other request
    /// passes through to the origin uncached, with its body. A HEAD of
    /// something not stored passes through too: a HEAD never fetches a body.
    private func handleTransparent(_ head: HTTPRequestHead, url: OriginURL, body: [UInt8]?) {
        let storeKey = server.engine.storeKey(for: url.string)
        let cacheable = (head.method == "GET" || head.method == "HEAD") && body == nil
        let owner = server.owner(of: storeKey)
        if cacheable && owner != server.index {
            return answerFromCopy(head, url: url, urlString: url.string, storeKey: storeKey, owner: owner,
                                  transparent: true)
        }
        // Anything else passes through from this loop (every loop has an origin client).
        let headMiss = head.method == "HEAD" && !server.loader.hasStoredHead(storeKey: storeKey, request: head.headers)
        guard cacheable && !headMiss else {
            let passthrough = PassthroughExchange(connection: self, request: head, url: url, body: body ?? [],
                                                  server: server)
            self.exchange = passthrough
            passthrough.start()
            return
        }
        let exchange = ProxyExchange(connection: self, request: head, url: url, urlString: url.string,
                                     storeKey: storeKey, server: server, transparent: true)
        self.exchange = exchange
        exchange.start()
    }

    /// On the loop owning the resource: the copy of a plain hit, made on its
    /// first request this second; nil when the request needs a reader.
    private func localCopy(_ head: HTTPRequestHead, url: OriginURL, storeKey: String) -> PlainHit? {
        guard PlainHitCache.isPlain(head) else { return nil }
        if let hit = server.plainHits.lookup(storeKey) {
            server.engine.store.resources[storeKey]?.touch()  // what the reader would have done
            return hit
        }
        guard let hit = server.plainHit(url: url, storeKey: storeKey) else { return nil }
        server.plainHits.keep(storeKey, hit)
        return hit
    }

    /// On a loop not owning the resource: a hit of a complete, fresh one is
    /// answered here from the owner's copy (asked for when there is none
    /// yet); anything else goes to the owner's loop.
    private func answerFromCopy(_ head: HTTPRequestHead, url: OriginURL, urlString: String, storeKey: String,
                                owner: Int, transparent: Bool = false) {
        let hits = server.plainHits
        guard PlainHitCache.isPlain(head) else { return handOver(head, to: owner) }
        if let hit = hits.lookup(storeKey) {
            return serve(hit, head: head, url: url, urlString: urlString, storeKey: storeKey, transparent: transparent,
                         owner: owner)
        }
        hits.ask(url: url, key: storeKey, owner: server.peers[owner], from: server.peers[server.index]) { [weak self] hit in
            guard let self, !self.socket.isClosed else { return }
            if let hit {
                self.serve(hit, head: head, url: url, urlString: urlString, storeKey: storeKey,
                           transparent: transparent, owner: owner)
            } else {
                self.handOver(head, to: owner)
            }
        }
    }

    private func serve(_ hit: PlainHit, head: HTTPRequestHead, url: OriginURL, urlString: String, storeKey: String,
                       transparent: Bool, owner: Int) {
        if owner != server.index {
            server.metrics.hitsOnOtherLoops += 1
            server.plainHits.served(storeKey, owner: owner, server.peers[owner])
        }
        let exchange = ProxyExchange(connection: self, request: head, url: url, urlString: urlString,
                                     storeKey: storeKey, server: server, transparent: transparent)
        self.exchange = exchange
        exchange.start(copy: hit)
    }

    private func handleAdmin(_ head: HTTPRequestHead) {
        if head.headers.contains("transfer-encoding") || (head.headers["content-length"].map { $0 != "0" } ?? false) {
            return respondSimple(400, "Bad request: admin requests take no body\n", keepAlive: false, head: head)
        }
        AdminRoutes.handle(head, server: server) { [weak self] status, json in
            guard let self, !self.socket.isClosed else { return }
            self.record?.status = status
            let bytes = self.server.heads.simple(status, json + "\n", keepAlive: head.keepAlive,
                                                 contentType: "application/json")
            self.socket.write(bytes)
            self.exchangeFinished(keepAlive: head.keepAlive)
        }
    }

    private func respondSimple(_ status: Int, _ body: String, keepAlive: Bool, head: HTTPRequestHead,
                               extra: [(String, String)] = [], contentType: String = "text/plain; charset=utf-8") {
        record?.status = status
        let bytes = server.heads.simple(status, body, keepAlive: keepAlive, extra: extra,
                                        includeBody: head.method != "HEAD", contentType: contentType)
        socket.write(bytes)
        exchangeFinished(keepAlive: keepAlive)
    }

    /// Answers a request that could not be parsed; the machine closes after it.
    private func reject(_ error: HeadParseError) {
        server.logger.info("bad request", metadata: ["client": "\(peerText)", "error": "\(error)"])
        server.responded(ResponseRecord(client: peerText, method: "-", target: "-", status: error.status, cache: .bypass,
                                        bytesSent: 0, startedAt: WallClock.milliseconds()))
        socket.write(server.heads.simple(error.status, Self.reason(of: error), keepAlive: false))
    }

    private static func reason(of error: HeadParseError) -> String {
        switch error {
        case .badRequest(let why): return "Bad request: \(why)\n"
        case .uriTooLong: return "Request line too long\n"
        case .headersTooLarge: return "Request header fields too large\n"
        case .versionNotSupported: return "HTTP version not supported\n"
        case .contentTooLarge: return "Request body too large for this proxy\n"
        }
    }

    // MARK: used by the exchange

    var loop: EventLoop { server.loop }

    func write(_ bytes: [UInt8]) { socket.write(bytes) }

    func write(_ bytes: UnsafeRawBufferPointer) { socket.write(bytes) }

    var queuedBytes: Int { socket.queuedBytes }

    /// A response head and the first file range of its body, in one packet when small.
    func write(head: [UInt8], thenSendFile file: DataFile, _ range: Range<Int64>) {
        if filesInFlight.last !== file { filesInFlight.append(file) }
        socket.send(head: head, fileDescriptor: file.fd, offset: range.lowerBound, count: Int(range.count))
    }

    func sendFile(_ file: DataFile, _ range: Range<Int64>) {
        if filesInFlight.last !== file { filesInFlight.append(file) }
        socket.sendFile(file.fd, offset: range.lowerBound, count: Int(range.count))
    }

    /// The response queued its last byte. It stays current (its resource in
    /// use, the next request waiting) until the socket has sent it.
    func exchangeFinished(keepAlive: Bool) {
        drive(.responseQueued(keepAlive: keepAlive))
    }

    /// Ends a response that cannot be completed: the bytes already queued
    /// (all of them right) still go out, then the connection closes, so the
    /// client gets every byte the proxy had and sees a short body.
    func abort() {
        drive(.responseAborted)
    }

    /// The response in flight is sent or given up: count it, release its resource.
    private func endResponse() {
        idleSince = server.nextIdleStamp()
        if var done = record {
            if let exchange { exchange.fill(&done) }
            done.bytesSent = socket.bytesSent &- sentBefore
            server.responded(done)
            record = nil
        }
        exchange?.release()
        exchange = nil
    }

    // MARK: SocketDelegate

    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
        guard !running else { return drive(.bytes(Array(bytes))) }  // never seen: callbacks do not nest
        running = true
        perform(machine.bytesRead(bytes))  // in place: the usual whole request is not copied
        running = false
        processPending()
    }

    func socketDidReachEOF(_ socket: Socket) {
        drive(.eof)
    }

    func socketDidDrain(_ socket: Socket) {
        filesInFlight.removeAll()
        exchange?.socketDrained()
        // A paused body source went on and may have queued more: not drained then.
        if socket.queuedBytes == 0 { drive(.drained) }
    }

    func socketDidClose(_ socket: Socket, error: IOError?) {
        timer?.cancel()
        timer = nil
        if record != nil { endResponse() }  // a client gone mid-response is still a response
        exchange = nil
        filesInFlight.removeAll()
        pending.removeAll()
        _ = machine.socketClosed()
        server.connectionClosed(self)
    }
}
