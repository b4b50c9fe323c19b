import CacheHTTP
import CacheIO
import CacheUpstream

/// Drives one CONNECT tunnel (RFC 9110 §9.3.6): the client connection's
/// socket on one side, an `OriginTunnel` (one of the origin client's
/// connection slots) on the other, bytes relayed as they are. Nothing is
/// cached: the client's TLS runs end to end with the origin. A thin driver
/// of `TunnelStateMachine`; events raised while it acts are queued, never
/// fed back re-entrantly. Loop thread only.
final class Tunnel: ActiveExchange, OriginTunnelDelegate {
    private enum Event {
        case connected, failed(UpstreamError)
        case relayed(from: TunnelStateMachine.Side, queued: Int)
        case drained(TunnelStateMachine.Side), finished(TunnelStateMachine.Side), closed(TunnelStateMachine.Side)
        case timer
    }

    private unowned let connection: ClientConnection
    private unowned let server: ProxyServer
    private let request: HTTPRequestHead
    private let host: String
    private let port: Int
    private var machine: TunnelStateMachine
    private var origin: OriginTunnel?
    private var timer: Deadline?
    private var pending: [Event] = []
    private var running = false
    private var status = 0
    /// The connection was told the tunnel ended (its quota place given back), once.
    private var ended = false
    /// Bytes from the client to the origin (the access log counts the other way).
    private(set) var bytesUp: UInt64 = 0

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
        bytesUp += UInt64(bytes.count)
        origin.write(bytes)
        drive(.relayed(from: .client, queued: origin.queuedBytes))
    }

    func clientFinished() { drive(.finished(.client)) }

    // MARK: ActiveExchange

    func socketDrained() { drive(.drained(.client)) }

    func fill(_ record: inout ResponseRecord) {
        if status != 0 { record.status = status }
    }

    /// The client's socket is gone (or the refusal was sent).
    func release() { drive(.closed(.client)) }

    // MARK: OriginTunnelDelegate

    func tunnelDidConnect(_ error: UpstreamError?) { drive(error.map { .failed($0) } ?? .connected) }

    func tunnelDidRead(_ bytes: UnsafeRawBufferPointer) {
        connection.write(bytes)
        drive(.relayed(from: .origin, queued: connection.queuedBytes))
    }

    func tunnelDidReachEOF() { drive(.finished(.origin)) }

    func tunnelDidDrain() { drive(.drained(.origin)) }

    func tunnelDidClose() {
        origin = nil
        drive(.closed(.origin))
    }

    // MARK: the driver

    private func drive(_ event: Event) {
        pending.append(event)
        guard !running else { return }
        running = true
        while !pending.isEmpty {
            let actions: [TunnelStateMachine.Action]
            switch pending.removeFirst() {
            case .connected: actions = machine.connected()
            case .failed(let error):
                let forbidden = if case .forbidden = error { true } else { false }
                actions = machine.connectFailed(reason: "\(error)", timeout: error.isTimeout, forbidden: forbidden)
            case .relayed(let side, let queued): actions = machine.relayed(from: side, queued: queued)
            case .drained(let side): actions = machine.drained(side)
            case .finished(let side): actions = machine.peerFinished(side)
            case .closed(let side): actions = machine.closed(side)
            case .timer: actions = machine.timerFired()
            }
            perform(actions)
        }
        running = false
    }

    private func perform(_ actions: [TunnelStateMachine.Action]) {
        for action in actions {
            switch action {
            case .established:
                status = 200
                connection.record?.status = 200
                connection.write(Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8))
                connection.tunnelOpened(self)
            case .refuse(let status, let reason):
                self.status = status
                server.logger.info("tunnel not opened", metadata: ["target": "\(request.target)", "status": "\(status)"])
                connection.respondSimple(status, reason, keepAlive: false, head: request)
            case .startReading(.client): connection.socket.startReading()
            case .stopReading(.client): connection.socket.stopReading()
            case .startReading(.origin): origin?.resumeReading()
            case .stopReading(.origin): origin?.pauseReading()
            case .finish(.client): connection.socket.closeAfterDrain()
            case .close(.client): connection.socket.close()
            case .finish(.origin): origin?.closeAfterDrain()
            case .close(.origin): origin?.close()
            case .setTimer(let milliseconds):
                if let timer {
                    timer.reset(milliseconds: milliseconds)
                } else {
                    timer = Deadline(on: server.loop, after: milliseconds) { [weak self] in self?.drive(.timer) }
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
