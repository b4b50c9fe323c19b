import CSupport
import Glibc

/// What a socket reports; every call arrives on the loop thread.
package protocol SocketDelegate: AnyObject {
    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer)
    func socketDidReachEOF(_ socket: Socket)
    func socketDidDrain(_ socket: Socket)
    func socketDidConnect(_ socket: Socket, error: IOError?)
    func socketDidClose(_ socket: Socket, error: IOError?)
}

extension SocketDelegate {
    package func socketDidDrain(_ socket: Socket) {}
    package func socketDidConnect(_ socket: Socket, error: IOError?) {}
}

/// A TCP connection owned by the C core, loop thread only. The C side retains the socket until
/// its close callback, and the socket its delegate: a connection lives as long as its socket.
package final class Socket {
    private var raw: OpaquePointer?
    package var delegate: SocketDelegate?
    package private(set) var isClosed = false
    package private(set) var isReading = false

    private init() {}

    /// Adopts a socket `detach()`ed by another loop, not reading yet; on failure it is closed.
    package static func adopt(_ descriptor: HandedSocket, on loop: EventLoop) throws -> Socket {
        loop.assertInLoop()
        var conn: OpaquePointer?
        let status = cs_conn_adopt(loop.raw, descriptor.take(), &conn)
        guard status == 0, let conn else { throw IOError(code: status, "adopt a connection") }
        return adopt(conn)
    }

    /// Hands the open descriptor over for another loop to adopt; the delegate hears no more.
    /// Nil, changing nothing, while bytes are queued or the socket is closing.
    package func detach() -> HandedSocket? {
        guard let raw, !isClosed, queuedBytes == 0 else { return nil }
        let delegate = self.delegate
        self.delegate = nil
        let fd = cs_conn_detach(raw)
        guard fd >= 0 else {
            self.delegate = delegate
            return nil
        }
        return HandedSocket(fd)
    }

    /// A conn handed over by the listener.
    static func adopt(_ conn: OpaquePointer) -> Socket {
        let socket = Socket()
        socket.raw = conn
        var callbacks = Socket.callbacks
        cs_conn_bind(conn, &callbacks, Unmanaged.passRetained(socket).toOpaque())
        return socket
    }

    /// Opens a TCP connection; `socketDidConnect` follows.
    package static func connect(on loop: EventLoop, to address: SocketAddress, delegate: SocketDelegate) throws -> Socket {
        loop.assertInLoop()
        let socket = Socket()
        socket.delegate = delegate
        var callbacks = Socket.callbacks
        let ctx = Unmanaged.passRetained(socket).toOpaque()
        var conn: OpaquePointer?
        let status = address.withSockaddr { cs_connect(loop.raw, $0, &callbacks, ctx, &conn) }
        if status != 0 {
            Unmanaged<Socket>.fromOpaque(ctx).release()
            throw IOError(code: status, "connect to \(address)")
        }
        socket.raw = conn
        return socket
    }

    package func startReading() {
        isReading = true
        if let raw { cs_conn_read_start(raw) }
    }

    package func stopReading() {
        isReading = false
        if let raw { cs_conn_read_stop(raw) }
    }

    /// Queues bytes; the C core copies what the socket does not take at once.
    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard let raw, bytes.count > 0 else { return }
        cs_conn_write(raw, bytes.baseAddress, bytes.count)
    }

    package func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }

    /// Sends a response head and its body from memory in one system call.
    package func write(head: [UInt8], body: [UInt8]) {
        guard let raw else { return }
        head.withUnsafeBytes { h in
            body.withUnsafeBytes { b in _ = cs_conn_write2(raw, h.baseAddress, h.count, b.baseAddress, b.count) }
        }
    }

    /// A head, then a file range of its body; a small body shares the head's packet.
    package func send(head: [UInt8], fileDescriptor fd: Int32, offset: Int64, count: Int) {
        guard let raw else { return }
        head.withUnsafeBytes { _ = cs_conn_send_head_file(raw, $0.baseAddress, $0.count, fd, offset, count) }
    }

    /// Queues a zero-copy file range; `fd` must stay open until drained or closed.
    package func sendFile(_ fd: Int32, offset: Int64, count: Int) {
        guard let raw, count > 0 else { return }
        cs_conn_sendfile(raw, fd, offset, count)
    }

    /// A range of a file encrypted at rest, decrypted piecewise as the socket takes it; `fd`
    /// and `cipher` must stay alive until drained or closed.
    package func sendEncrypted(_ fd: Int32, cipher: UnitCipher, offset: Int64, count: Int) {
        guard let raw, count > 0 else { return }
        cs_conn_send_xts(raw, fd, cipher.raw, cipher.fileID, offset, count)
    }

    /// A response head, then a range of an encrypted file (see `send(head:fileDescriptor:…)`).
    package func send(head: [UInt8], encrypted fd: Int32, cipher: UnitCipher, offset: Int64, count: Int) {
        guard let raw else { return }
        head.withUnsafeBytes {
            _ = cs_conn_send_head_xts(raw, $0.baseAddress, $0.count, fd, cipher.raw, cipher.fileID, offset, count)
        }
    }

    package var queuedBytes: Int { raw.map { cs_conn_queued($0) } ?? 0 }
    package var bytesSent: UInt64 { raw.map { cs_conn_bytes_sent($0) } ?? 0 }

    /// Nil once closed or before connecting. Asks the kernel each time: keep the value.
    package var peerAddress: SocketAddress? {
        guard let raw, !isClosed else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        guard cs_conn_peer(raw, &storage, &length) == 0 else { return nil }
        return SocketAddress(storage: storage)
    }

    package func close() {
        if let raw, !isClosed { cs_conn_close(raw) }
    }

    package func closeAfterDrain() {
        if let raw, !isClosed { cs_conn_close_after_drain(raw) }
    }

    private static func from(_ ctx: UnsafeMutableRawPointer?) -> Socket {
        Unmanaged<Socket>.fromOpaque(ctx!).takeUnretainedValue()
    }

    private static let callbacks = cs_conn_callbacks(
        on_read: { ctx, data, count in
            let socket = Socket.from(ctx)
            socket.delegate?.socketDidRead(socket, UnsafeRawBufferPointer(start: data, count: count))
        },
        on_eof: { ctx in
            let socket = Socket.from(ctx)
            socket.delegate?.socketDidReachEOF(socket)
        },
        on_drain: { ctx in
            let socket = Socket.from(ctx)
            socket.delegate?.socketDidDrain(socket)
        },
        on_connect: { ctx, status in
            let socket = Socket.from(ctx)
            socket.delegate?.socketDidConnect(socket, error: status == 0 ? nil : IOError(code: status, "connect"))
        },
        on_close: { ctx, status in
            let socket = Unmanaged<Socket>.fromOpaque(ctx!).takeRetainedValue()
            socket.isClosed = true
            socket.raw = nil
            let delegate = socket.delegate
            socket.delegate = nil
            delegate?.socketDidClose(socket, error: status == 0 ? nil : IOError(code: status, "socket"))
        }
    )
}

/// A socket on its way between loops; closed if dropped unadopted (the loop stopped first).
package final class HandedSocket: @unchecked Sendable {
    // Moved to exactly one owner: `take()` runs at most once, on the adopting loop.
    private var fd: Int32

    init(_ fd: Int32) { self.fd = fd }

    func take() -> Int32 {
        precondition(fd >= 0, "a handed socket is adopted once")
        defer { fd = -1 }
        return fd
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }
}
