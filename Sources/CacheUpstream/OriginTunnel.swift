import CacheHTTP
import CacheIO

/// What an origin tunnel reports, on the loop thread, never from inside a call on it.
package protocol OriginTunnelDelegate: AnyObject {
    /// Connected (and through the parent proxy's tunnel, when there is one), or not.
    func tunnelDidConnect(_ error: UpstreamError?)
    /// Bytes from the origin; valid only during the call.
    func tunnelDidRead(_ bytes: UnsafeRawBufferPointer)
    /// The origin finished sending.
    func tunnelDidReachEOF()
    /// Everything written to the origin was sent.
    func tunnelDidDrain()
    /// The connection is gone; the last call.
    func tunnelDidClose()
}

/// A raw TCP connection to `host:port` for a client's CONNECT tunnel (`openTunnel`),
/// counted among the origin connections, direct or through the parent's CONNECT. Bytes
/// pass as they are (the client's TLS runs end to end). Loop thread only.
package final class OriginTunnel {
    package let host: String
    package let port: Int
    /// `Via` values for the parent proxy's CONNECT.
    let via: [String]
    private weak var delegate: OriginTunnelDelegate?
    private weak var client: UpstreamClient?
    private let loop: EventLoop
    private var stream: UpstreamStream?
    private var connectTimer: LoopTimer?
    private var addresses: ArraySlice<SocketAddress> = []
    private var tunnelRequest: [UInt8]?
    /// Closed (or failed) before or after connecting: nothing more is reported but the close.
    private(set) var isClosed = false
    /// The client's own listening port (see `UpstreamClient.openTunnel`).
    var refusedPort: Int?
    private var connected = false
    /// The current attempt: events of an earlier one (its stream closing) are ignored.
    private var attempt = 0

    init(host: String, port: Int, via: [String], delegate: OriginTunnelDelegate, client: UpstreamClient, loop: EventLoop) {
        self.host = host
        self.port = port
        self.via = via
        self.delegate = delegate
        self.client = client
        self.loop = loop
    }

    var label: String { OriginURL.authority(host: host, port: port) }

    package func write(_ bytes: UnsafeRawBufferPointer) { stream?.writeRaw(bytes) }

    /// Bytes written and not yet sent to the origin.
    package var queuedBytes: Int { stream?.queuedBytes ?? 0 }

    package func pauseReading() { stream?.pauseReading() }

    /// Reads (again): the first call starts reading once connected.
    package func resumeReading() {
        stream?.resumeReading()
        stream?.startReading()
    }

    /// Sends what is queued, then closes (the client finished sending).
    package func closeAfterDrain() {
        guard let stream else { return close() }
        stream.closeAfterDrain()
    }

    /// Closes at once (or gives up waiting for a slot or a connection).
    package func close() {
        guard !isClosed else { return }
        if let stream { return stream.close() }  // its close reports the end
        finish(nil)
    }

    /// Tries `addresses` in turn (the origin's, or the parent's with `tunnelRequest`) until one connects.
    func connect(_ addresses: ArraySlice<SocketAddress>, tunnelRequest: [UInt8]?, timeout: UInt64) {
        guard !isClosed else { return }
        self.addresses = addresses
        self.tunnelRequest = tunnelRequest
        connectTimer = LoopTimer(on: loop, after: timeout) { [weak self] in
            guard let self, !self.connected else { return }
            self.fail(.timeout("connecting to \(self.label)"))
        }
        connectNext(.connect("\(label): no address"))
    }

    private func connectNext(_ lastError: UpstreamError) {
        guard let address = addresses.popFirst() else { return fail(lastError) }
        attempt += 1
        do {
            stream = try UpstreamStream.connect(on: loop, to: address, tls: nil, label: label,
                                                tunnelRequest: tunnelRequest,
                                                delegate: Attempt(tunnel: self, number: attempt))
        } catch {
            connectNext(.connect("\(label): \(error)"))
        }
    }

    /// Fails before connecting, reported on the next loop turn (not inside the caller's call).
    func fail(_ error: UpstreamError) {
        guard !isClosed else { return }
        let stream = self.stream
        self.stream = nil
        stream?.close()
        finish(error)
    }

    private func finish(_ error: UpstreamError?) {
        guard !isClosed else { return }
        isClosed = true
        connectTimer?.cancel()
        connectTimer = nil
        client?.forget(self)
        let wasConnected = connected
        loop.executeLater { [weak self] in
            guard let delegate = self?.delegate else { return }
            if !wasConnected { delegate.tunnelDidConnect(error ?? .closedEarly("the tunnel was closed")) }
            delegate.tunnelDidClose()
        }
    }

    /// Relays one attempt's stream events, marked with its number.
    private final class Attempt: UpstreamStreamDelegate {
        weak var tunnel: OriginTunnel?
        let number: Int
        init(tunnel: OriginTunnel, number: Int) {
            self.tunnel = tunnel
            self.number = number
        }
        private var current: OriginTunnel? { tunnel.flatMap { $0.attempt == number ? $0 : nil } }
        func streamDidConnect(_ error: UpstreamError?) { current?.streamDidConnect(error) }
        func streamDidRead(_ bytes: UnsafeRawBufferPointer) { current?.delegate?.tunnelDidRead(bytes) }
        func streamDidReachEOF() { current?.delegate?.tunnelDidReachEOF() }
        func streamDidDrain() { current?.delegate?.tunnelDidDrain() }
        func streamDidClose(_ error: UpstreamError?) { current?.streamDidClose(error) }
    }

    private func streamDidConnect(_ error: UpstreamError?) {
        guard !isClosed else { return }
        if let error {
            stream = nil  // that stream is closing itself
            return connectNext(error)
        }
        connected = true
        connectTimer?.cancel()
        connectTimer = nil
        delegate?.tunnelDidConnect(nil)
    }

    private func streamDidClose(_ error: UpstreamError?) {
        guard !isClosed, stream != nil else { return }  // a failed attempt's stream, or already finished
        stream = nil
        finish(error)
    }
}
