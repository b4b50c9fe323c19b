import CacheHTTP
import CacheIO
import CacheStorage
import CacheUpstream

/// Drives one client connection's `ConnectionStateMachine`. Events raised while acting are queued for
/// `processPending` (the stack stays flat however deep the pipeline). Its socket keeps it alive.
final class ClientConnection: SocketDelegate {
    enum Event {
        case bytes([UInt8])
        case eof
        case drained
        case timer
        case responseQueued(keepAlive: Bool)
        case responseAborted
        case bodyAdmitted
        case bodyRefused
        case tunnelOpened
    }

    let socket: Socket
    unowned let server: ProxyServer
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (a share of every hit).
    @exclusivity(unchecked) var machine: ConnectionStateMachine
    @exclusivity(unchecked) var events = EventQueue<Event>()
    var exchange: ActiveExchange?
    /// Once a CONNECT is answered 2xx: the tunnel every socket event goes to.
    var tunnel: Tunnel?
    var timer: Deadline?
    var filesInFlight: [DataFile] = []
    /// The peer, read once (access log, loopback-only routes).
    let peer: SocketAddress?
    lazy var peerText = peer?.description ?? "-"
    /// Its pipeline filled the buffer once (logged once: a deep pipeline fills it at every request).
    private var pipelineFilled = false
    /// The client's address without its port: connections are limited per client.
    let clientKey: String
    var record: ResponseRecord?
    var sentBefore: UInt64 = 0
    var hostMemo = HostFacts.Memo()
    /// Whether a transparent request's fields keep it apart from the proxy URLs' entry, by field names.
    var proxyURLFields = UpstreamHeaders.ProxyURLFieldsMemo()
    /// A request another loop must answer: the connection goes there once the current actions are done.
    var moving: (head: HTTPRequestHead, body: [UInt8]?, to: LoopLink)?
    /// While a request another loop handed over is routed here (its CMCD hint was taken there).
    var resumingHandOver = false
    /// Handed over with a request: the loop it goes back to once idle (so the loops stay balanced).
    let home: LoopLink?

    init(socket: Socket, server: ProxyServer) {
        self.socket = socket
        self.server = server
        machine = ConnectionStateMachine(settings: server.configuration.connection)
        peer = socket.peerAddress
        clientKey = Self.clientKey(of: peer)
        home = nil
        socket.delegate = self
        idleSince = server.nextIdleStamp()
        perform(machine.handle(.started))
    }

    /// A connection handed over by another loop: mid-request (to the loop that must answer it), or idle.
    init(moved: MovedConnection, socket: Socket, server: ProxyServer) {
        self.socket = socket
        self.server = server
        machine = moved.machine
        peer = moved.peer
        clientKey = Self.clientKey(of: peer)
        home = moved.request == nil || moved.home.loop === server.loop ? nil : moved.home
        socket.delegate = self
        idleSince = server.nextIdleStamp()
        if moved.reading { socket.startReading() }
    }

    // MARK: the connection cap

    /// "1.2.3.4" or "[v6]" of "1.2.3.4:port" or "[v6]:port".
    static func clientKey(of address: SocketAddress?) -> String {
        guard let text = address?.description else { return "-" }
        guard let colon = text.lastIndex(of: ":") else { return text }
        return String(text[..<colon])
    }

    private(set) var idleSince: UInt64 = 0

    /// No request in flight nor begun: the one to close first at the cap.
    var isIdle: Bool { machine.state == .awaitingHead && machine.unparsed == 0 }

    /// Closed by the server (to make room, or stopping). It leaves the server's count at once (the
    /// socket's close is asynchronous), so a burst of newcomers closes one idle connection each.
    func close() {
        // A response in flight is counted and logged now, while the access log is open.
        if record != nil { endResponse() }
        server.connectionClosed(self)
        socket.close()
    }

    // MARK: the driver

    /// Feeds an event to the machine, performs its actions, then the events they raised; a nested one queues.
    func drive(_ event: Event) {
        guard events.push(event) else { return }
        processPending()
    }

    /// Handles the queue until it is empty; the caller holds the drive (`events.push` or `begin`).
    func processPending() {
        while let next = events.next() {
            let actions: [ConnectionStateMachine.Action]
            switch next {
            case .bytes(let bytes): actions = bytes.withUnsafeBytes { machine.handle(.bytesRead($0)) }
            case .eof: actions = machine.handle(.peerFinished)
            case .drained: actions = machine.handle(.socketDrained)
            case .timer:
                actions = machine.handle(.timerFired(.init(bytesSent: socket.bytesSent, queued: socket.queuedBytes)))
                if machine.sendTimedOut { server.noteSendTimeout() }
            case .responseQueued(let keepAlive):
                actions = machine.handle(.responseQueued(keepAlive: keepAlive, drained: socket.queuedBytes == 0))
            case .responseAborted: actions = machine.handle(.responseAborted)
            case .bodyAdmitted: actions = machine.handle(.bodyAdmitted)
            case .bodyRefused: actions = machine.handle(.bodyRefused)
            case .tunnelOpened: actions = machine.handle(.tunnelOpened)
            }
            perform(actions)
        }
        if let request = moving {
            moving = nil
            server.metrics.loopHandoffs += 1
            move(to: request.to, (request.head, request.body))
        } else if let home, isIdle, !socket.isClosed {
            move(to: home, nil)
        }
    }

    func perform(_ actions: [ConnectionStateMachine.Action]) {
        for action in actions {
            switch action {
            case .handle(let head): handle(head)
            case .handleWithBody(let head, let body): handle(head, body: body)
            case .admitBody(let head):
                // Only a transparent request the policy allows passes a body on; others are refused unread.
                let admitted = if case .transparent = admission(head, host: hostMemo.facts(for: head)) { true } else { false }
                drive(admitted ? .bodyAdmitted : .bodyRefused)  // queued: this runs inside a drive
            case .sendContinue: socket.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            case .reject(let error): reject(error)
            case .startReading: socket.startReading()
            case .stopReading:
                socket.stopReading()
                if machine.isBufferFull && !pipelineFilled {
                    pipelineFilled = true
                    server.logger.debug("client pipelines ahead: reading paused", metadata: ["client": "\(peerText)"])
                }
            case .setTimer(let milliseconds?): setTimer(milliseconds)
            case .setTimer(nil): break  // the timer stays armed: a fire the machine no longer wants is ignored by it
            case .closeAfterDrain: socket.closeAfterDrain()
            case .closeNow: socket.close()
            case .endResponse: endResponse()
            case .startTunnel(let leftover):
                tunnel = exchange as? Tunnel
                if !leftover.isEmpty { leftover.withUnsafeBytes { tunnel?.clientRead($0) } }
                if machine.peerClosed { tunnel?.clientFinished() }  // it finished sending while the origin was reached
            }
        }
    }

    func setTimer(_ milliseconds: UInt64) {
        if let timer {
            timer.reset(milliseconds: milliseconds)
        } else {
            // Unowned, not weak: a weak reference gives the connection a side table, which slows
            // every retain and release of it on the hit path. The deadline stops with the connection.
            timer = Deadline(on: server.loop, after: milliseconds) { [unowned self] in
                self.drive(.timer)
            }
        }
    }

    // Requests: ClientConnection+Routing, +PlainHits, +SimpleResponses, +Moving (to another loop).

    // MARK: used by the exchange (which writes plain bytes on `socket` itself)

    /// A head and the first file range of its body, in one packet when small (encrypted: decrypted as sent).
    func write(head: [UInt8], thenSendFile file: DataFile, _ range: Range<Int64>) {
        if let cipher = file.cipher {
            socket.send(head: head, encrypted: file.fd, cipher: cipher, offset: range.lowerBound, count: Int(range.count))
        } else {
            socket.send(head: head, fileDescriptor: file.fd, offset: range.lowerBound, count: Int(range.count))
        }
        keepUntilSent(file)
    }

    func sendFile(_ file: DataFile, _ range: Range<Int64>) {
        if let cipher = file.cipher {
            socket.sendEncrypted(file.fd, cipher: cipher, offset: range.lowerBound, count: Int(range.count))
        } else {
            socket.sendFile(file.fd, offset: range.lowerBound, count: Int(range.count))
        }
        keepUntilSent(file)
    }

    /// A file stays open while its ranges are queued. Sent at once (usual), no drain comes: let go now, or a
    /// keep-alive connection would hold every file it sent (and misses run out of descriptors).
    private func keepUntilSent(_ file: DataFile) {
        if socket.queuedBytes == 0 {
            filesInFlight.removeAll()
        } else if filesInFlight.last !== file {
            filesInFlight.append(file)
        }
    }

    /// It stays current (its resource in use, the next request waiting) until the socket has sent it.
    func exchangeFinished(keepAlive: Bool) {
        drive(.responseQueued(keepAlive: keepAlive))
    }

    /// A response that cannot be completed: what is queued still goes out, then the connection closes.
    func abort() {
        drive(.responseAborted)
    }

    func endResponse() {
        idleSince = server.nextIdleStamp()
        if var done = record {
            if let exchange { exchange.fill(&done) }
            done.bytesSent = socket.bytesSent &- sentBefore
            server.responded(done)
            record = nil
        }
        exchange?.release()
        exchange = nil
        server.connectionBecameIdle()
    }

    // MARK: SocketDelegate

    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
        if let tunnel { return tunnel.clientRead(bytes) }
        guard events.begin() else { return drive(.bytes(Array(bytes))) }  // never seen: callbacks do not nest
        perform(machine.handle(.bytesRead(bytes)))  // in place: the usual whole request is not copied
        processPending()
    }

    func socketDidReachEOF(_ socket: Socket) {
        if let tunnel { return tunnel.clientFinished() }
        exchange?.clientFinished()
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
        exchange?.release()  // (none left after endResponse)
        exchange = nil
        tunnel = nil
        filesInFlight.removeAll()
        events.removeAll()
        _ = machine.handle(.socketClosed)
        server.connectionClosed(self)
    }
}
