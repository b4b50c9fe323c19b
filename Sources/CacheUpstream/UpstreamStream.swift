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
}

/// The byte stream under an upstream connection: a socket, with a TLS session
/// in between for https. The socket keeps the stream alive until it closes,
/// and the stream keeps its delegate until then. Loop thread only.
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

    private init(tls: TLSSession?, label: String, delegate: UpstreamStreamDelegate) {
        self.tls = tls
        self.label = label
        self.delegate = delegate
        if tls != nil {
            plaintext = .allocate(byteCount: Self.plaintextBufferSize, alignment: 16)
        }
    }

    deinit { plaintext?.deallocate() }

    /// Opens a TCP connection to `address`; with `tls`, the handshake follows
    /// before `streamDidConnect`.
    static func connect(on loop: EventLoop, to address: SocketAddress, tls: TLSSession?, label: String,
                        delegate: UpstreamStreamDelegate) throws -> UpstreamStream {
        let stream = UpstreamStream(tls: tls, label: label, delegate: delegate)
        stream.socket = try Socket.connect(on: loop, to: address, delegate: stream)
        return stream
    }

    /// Reading never stops once started: an idle connection must notice the origin closing it.
    func startReading() { socket?.startReading() }

    /// Stops delivering bytes (backpressure from a slow consumer); TCP flow
    /// control then slows the origin.
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

    func close() {
        guard !closed else { return }
        closed = true
        socket?.close()
    }

    private func fail(_ error: UpstreamError) {
        if failure == nil { failure = error }
        close()
    }

    private func flush() {
        while let ciphertext = tls?.takeOutput() { socket?.write(ciphertext) }
    }

    /// Moves the TLS session on with what has been received: the handshake
    /// first, then plaintext to the delegate.
    private func pump() {
        guard let tls, let plaintext, !closed else { return }
        if !tls.isHandshakeDone {
            let progress = tls.handshake()
            flush()
            switch progress {
            case .wantsInput:
                return
            case .failed(let error):
                closed = true
                socket?.close()
                delegate?.streamDidConnect(error)
                return
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

    // MARK: SocketDelegate

    func socketDidConnect(_ socket: Socket, error: IOError?) {
        if let error {
            closed = true
            delegate?.streamDidConnect(.connect("\(label): \(error)"))
            return
        }
        guard tls != nil else {
            delegate?.streamDidConnect(nil)
            return
        }
        socket.startReading()
        pump()  // sends the ClientHello
    }

    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        guard let tls else {
            delegate?.streamDidRead(bytes)
            return
        }
        tls.receive(bytes)
        pump()
    }

    func socketDidReachEOF(_ socket: Socket) {
        guard !closed else { return }
        if let tls, !tls.isHandshakeDone {
            closed = true
            socket.close()
            delegate?.streamDidConnect(.tls("\(label) closed the connection during the handshake"))
            return
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
