import CacheIO

/// What an upstream stream reports to its connection; calls arrive on the loop thread.
protocol UpstreamStreamDelegate: AnyObject {
    /// Ready for requests (connected and, for https, the origin verified), or not.
    func streamDidConnect(_ error: UpstreamError?)
    /// Response bytes (plaintext); valid only during the call.
    func streamDidRead(_ bytes: UnsafeRawBufferPointer)
    /// The origin finished sending (TCP FIN, or TLS close_notify).
    func streamDidReachEOF()
    /// The stream is closed; the last call. The error says why, if it broke.
    func streamDidClose(_ error: UpstreamError?)
    /// Everything written was sent (tunnels pace their source on it).
    func streamDidDrain()
}

extension UpstreamStreamDelegate {
    func streamDidDrain() {}
}

/// The byte stream under an upstream connection: a socket, with TLS for https. The
/// socket keeps it, and it its delegate, alive until it closes. Loop thread only.
final class UpstreamStream: SocketDelegate {
    /// Largest TLS record plaintext: one SSL_read never returns more.
    private static let plaintextBufferSize = 16 << 10

    private var socket: Socket?
    private let tls: TLSSession?
    private var delegate: UpstreamStreamDelegate?
    private let label: String
    private var plaintext: UnsafeMutableRawBufferPointer?
    private var closed = false
    private var peerFinished = false
    /// The reader of the body is full: no bytes are delivered until resumed.
    private var paused = false
    /// Why the stream broke, reported with the close.
    private var failure: UpstreamError?
    /// Through a parent: the CONNECT request, and its answer until whole (nil: tunnel open).
    private var tunnelRequest: [UInt8]?
    private var tunnelAnswer: [UInt8] = []

    private init(tls: TLSSession?, label: String, tunnelRequest: [UInt8]?, delegate: UpstreamStreamDelegate) {
        self.tls = tls
        self.label = label
        self.tunnelRequest = tunnelRequest
        self.delegate = delegate
        if tls != nil {
            plaintext = .allocate(byteCount: Self.plaintextBufferSize, alignment: 16)
        }
    }

    deinit { plaintext?.deallocate() }

    /// Opens TCP to `address`; with `tunnelRequest` (a parent proxy) a CONNECT tunnel is
    /// asked for first; with `tls`, the handshake follows before `streamDidConnect`.
    static func connect(on loop: EventLoop, to address: SocketAddress, tls: TLSSession?, label: String,
                        tunnelRequest: [UInt8]? = nil, delegate: UpstreamStreamDelegate) throws -> UpstreamStream {
        let stream = UpstreamStream(tls: tls, label: label, tunnelRequest: tunnelRequest, delegate: delegate)
        stream.socket = try Socket.connect(on: loop, to: address, delegate: stream)
        return stream
    }

    /// Reading never stops once started: an idle connection must notice the origin closing it.
    func startReading() { socket?.startReading() }

    /// Backpressure from a slow consumer; TCP flow control then slows the origin.
    func pauseReading() {
        paused = true
        socket?.stopReading()
    }

    /// Delivers again, first whatever TLS already decrypted.
    func resumeReading() {
        guard paused else { return }
        paused = false
        socket?.startReading()
        if tls != nil { pump() }
    }

    /// Sends request bytes (encrypted first for https).
    func write(_ bytes: [UInt8]) {
        guard !closed else { return }
        guard let tls else {
            socket?.write(bytes)
            return
        }
        let failure = bytes.withUnsafeBytes { raw -> UpstreamError? in
            do throws(UpstreamError) { try tls.write(raw) } catch { return error }
            return nil
        }
        if let failure { return fail(failure) }
        flush()
    }

    /// Sends bytes as they are (a tunnel's relay: no TLS of this stream).
    func writeRaw(_ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        socket?.write(bytes)
    }

    /// Bytes written and not yet sent.
    var queuedBytes: Int { socket?.queuedBytes ?? 0 }

    func close() {
        guard !closed else { return }
        closed = true
        socket?.close()
    }

    /// Closes once everything written is sent (a tunnel whose other side finished).
    func closeAfterDrain() {
        guard !closed else { return }
        closed = true
        socket?.closeAfterDrain()
    }

    private func fail(_ error: UpstreamError) {
        if failure == nil { failure = error }
        close()
    }

    private func flush() {
        while let ciphertext = tls?.takeOutput() { socket?.write(ciphertext) }
    }

    /// Moves TLS on with what was received: the handshake, then plaintext to the delegate.
    private func pump() {
        guard let tls, let plaintext, !closed else { return }
        if !tls.isHandshakeDone {
            let progress = tls.handshake()
            flush()
            switch progress {
            case .wantsInput:
                return
            case .failed(let error):
                return failConnecting(error)
            case .done:
                delegate?.streamDidConnect(nil)
            }
        }
        guard !closed else { return }
        let progress = tls.read(into: plaintext) { bytes in
            delegate?.streamDidRead(bytes)
            return !closed && !paused
        }
        flush()  // post-handshake messages may need an answer
        switch progress {
        case .wantsInput:
            break
        case .done:
            guard !peerFinished, !closed else { return }
            peerFinished = true
            delegate?.streamDidReachEOF()
        case .failed(let error):
            fail(error)
        }
    }

    func socketDidConnect(_ socket: Socket, error: IOError?) {
        if let error {
            closed = true
            delegate?.streamDidConnect(.connect("\(label): \(error)"))
            return
        }
        if let request = tunnelRequest {
            socket.write(request)
            socket.startReading()
            return  // on once the parent answers (`tunnelAnswered`)
        }
        connected(socket)
    }

    /// TCP (and the parent's tunnel) is up: ready, or the TLS handshake starts.
    private func connected(_ socket: Socket) {
        guard tls != nil else {
            delegate?.streamDidConnect(nil)
            return
        }
        socket.startReading()
        pump()  // sends the ClientHello
    }

    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        if tunnelRequest != nil { return tunnelAnswered(socket, bytes) }
        guard let tls else {
            delegate?.streamDidRead(bytes)
            return
        }
        tls.receive(bytes)
        pump()
    }

    /// A 2xx answer to CONNECT opens the tunnel (what follows is the origin's); else fail.
    private func tunnelAnswered(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
        tunnelAnswer.append(contentsOf: bytes)
        guard let (status, length) = ParentProxy.connectAnswer(tunnelAnswer) else {
            guard tunnelAnswer.count > 16 << 10 else { return }
            return refuseTunnel("the parent proxy's answer to CONNECT is too long")
        }
        guard (200..<300).contains(status) else {
            return refuseTunnel("the parent proxy answered CONNECT with \(status)")
        }
        let rest = Array(tunnelAnswer[length...])
        tunnelRequest = nil
        tunnelAnswer = []
        if tls == nil { socket.stopReading() }  // as a direct connection: the delegate starts reading
        connected(socket)
        if !rest.isEmpty { rest.withUnsafeBytes { socketDidRead(socket, $0) } }
    }

    private func refuseTunnel(_ why: String) { failConnecting(.connect("\(label): \(why)")) }

    /// The socket is open but the stream never became ready (the parent's CONNECT, the TLS handshake).
    private func failConnecting(_ error: UpstreamError) {
        closed = true
        socket?.close()
        delegate?.streamDidConnect(error)
    }

    func socketDidDrain(_ socket: Socket) {
        delegate?.streamDidDrain()
    }

    func socketDidReachEOF(_ socket: Socket) {
        guard !closed else { return }
        if tunnelRequest != nil { return refuseTunnel("the parent proxy closed the connection") }
        if let tls, !tls.isHandshakeDone {
            return failConnecting(.tls("\(label) closed the connection during the handshake"))
        }
        guard !peerFinished else { return }
        peerFinished = true
        delegate?.streamDidReachEOF()
    }

    func socketDidClose(_ socket: Socket, error: IOError?) {
        closed = true
        self.socket = nil
        let delegate = self.delegate
        self.delegate = nil
        delegate?.streamDidClose(failure ?? error.map { .closedEarly("\(label): \($0)") })
    }
}
