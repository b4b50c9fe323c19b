import CacheHTTP
import CacheIO
import CacheUpstream

/// Drives one CONNECT tunnel (RFC 9110 §9.3.6) between the client's socket and an `OriginTunnel` (an origin
/// slot), bytes as they are (TLS end to end). A thin driver of `TunnelStateMachine`. Loop thread only.
final class Tunnel: ActiveExchange, OriginTunnelDelegate {
    private unowned let connection: ClientConnection
    private unowned let server: ProxyServer
    private let request: HTTPRequestHead
    private let host: String
    private let port: Int
    private var machine: TunnelStateMachine
    private var origin: OriginTunnel?
    private var timer: Deadline?
    private var events = EventQueue<TunnelStateMachine.Event>()
    private var status = 0
    /// The origin was held back for the client once (logged once, not at every turn).
    private var heldBack = false
    /// The connection was told the tunnel ended (its quota place given back).
    private var ended = false

    init(connection: ClientConnection, request: HTTPRequestHead, host: String, port: Int, server: ProxyServer) {
        self.connection = connection
        self.server = server
        self.request = request
        self.host = host
        self.port = port
        machine = TunnelStateMachine(idleTimeout: server.configuration.tunnelIdleTimeout)
    }

    func start() {
        // Via goes to a parent proxy's CONNECT: a chain that leads back here ends with 508.
        let via = Intermediary.appendingVia(request.headers, receivedWith: request.version,
                                            pseudonym: server.viaPseudonym).values("Via")
        origin = server.engine.client.openTunnel(host: host, port: port, via: via, refusingPort: server.port,
                                                 delegate: self)
    }

    // MARK: the client's side (from ClientConnection)

    func clientRead(_ bytes: UnsafeRawBufferPointer) {
        guard let origin else { return }
        origin.write(bytes)
        drive(.relayed(from: .client, queued: origin.queuedBytes))
    }

    func clientFinished() { drive(.peerFinished(.client)) }

    // MARK: ActiveExchange

    func socketDrained() { drive(.drained(.client)) }

    func fill(_ record: inout ResponseRecord) {
        if status != 0 { record.status = status }
    }

    func release() { drive(.closed(.client)) }

    // MARK: OriginTunnelDelegate

    func tunnelDidConnect(_ error: UpstreamError?) {
        if let error { failed(error) } else { drive(.connected) }
    }

    func tunnelDidRead(_ bytes: UnsafeRawBufferPointer) {
        connection.socket.write(bytes)
        drive(.relayed(from: .origin, queued: connection.socket.queuedBytes))
    }

    func tunnelDidReachEOF() { drive(.peerFinished(.origin)) }
    func tunnelDidDrain() { drive(.drained(.origin)) }

    func tunnelDidClose() {
        origin = nil
        drive(.closed(.origin))
    }

    // MARK: the driver

    private func drive(_ event: TunnelStateMachine.Event) {
        guard events.push(event) else { return }
        while let next = events.next() { perform(machine.handle(next)) }
    }

    private func failed(_ error: UpstreamError) {
        let forbidden = if case .forbidden = error { true } else { false }
        drive(.connectFailed(reason: "\(error)", timeout: error.isTimeout, forbidden: forbidden))
    }

    private func perform(_ actions: [TunnelStateMachine.Action]) {
        for action in actions {
            switch action {
            case .established:
                status = 200
                connection.record?.status = 200
                connection.socket.write(Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8))
                connection.tunnelOpened(self)
            case .refuse(let status, let reason):
                self.status = status
                server.logger.info("tunnel not opened", metadata: ["target": "\(request.target)", "status": "\(status)"])
                connection.respondSimple(status, reason, keepAlive: false, head: request)
            case .startReading(.client): connection.socket.startReading()
            case .stopReading(.client): connection.socket.stopReading()
            case .startReading(.origin): origin?.resumeReading()
            case .stopReading(.origin):
                origin?.pauseReading()
                if !heldBack { server.logger.debug("tunnel paused: the client reads slower", metadata: ["target": "\(request.target)"]) }
                heldBack = true
            case .finish(.client): connection.socket.closeAfterDrain()
            case .close(.client): connection.socket.close()
            case .finish(.origin): origin?.closeAfterDrain()
            case .close(.origin): origin?.close()
            case .setTimer(let milliseconds):
                if let timer {
                    timer.reset(milliseconds: milliseconds)
                } else {
                    timer = Deadline(on: server.loop, after: milliseconds) { [weak self] in self?.drive(.timerFired) }
                }
            }
        }
        if machine.state == .closed {
            timer?.cancel()
            timer = nil
            if !ended {
                ended = true
                connection.tunnelEnded()
            }
        }
    }
}
