import CSupport

/// Loop thread only; lives until closed (the C side holds it).
package final class Listener {
    private var raw: OpaquePointer?
    private var onAccept: ((Socket) -> Void)?
    package private(set) var port: Int = 0

    private init(onAccept: @escaping (Socket) -> Void) { self.onAccept = onAccept }

    /// `sharedPort`: SO_REUSEPORT, one listener per loop (the kernel spreads connections); on
    /// every one, `first` on the first only: it refuses a port in use, even one shared too.
    package static func listen(on loop: EventLoop, host: String, port: Int, backlog: Int = 1024,
                               sharedPort: Bool = false, first: Bool = true, onAccept: @escaping (Socket) -> Void) throws -> Listener {
        loop.assertInLoop()
        let listener = Listener(onAccept: onAccept)
        let ctx = Unmanaged.passRetained(listener).toOpaque()
        var callbacks = cs_listener_callbacks(
            on_accept: { ctx, conn in
                let listener = Unmanaged<Listener>.fromOpaque(ctx!).takeUnretainedValue()
                let socket = Socket.adopt(conn!)
                if let onAccept = listener.onAccept { onAccept(socket) } else { socket.close() }
            },
            on_close: { ctx in
                let listener = Unmanaged<Listener>.fromOpaque(ctx!).takeRetainedValue()
                listener.raw = nil
                listener.onAccept = nil
            }
        )
        var raw: OpaquePointer?
        let status = cs_listen(loop.raw, host, Int32(port), Int32(backlog), sharedPort ? CS_LISTEN_REUSEPORT | (first ? CS_LISTEN_FIRST : 0) : 0, &callbacks, ctx, &raw)
        if status != 0 {
            Unmanaged<Listener>.fromOpaque(ctx).release()
            throw IOError(code: status, "listen on \(host):\(port)")
        }
        listener.raw = raw
        listener.port = Int(cs_listener_port(raw))
        return listener
    }

    /// At the connection cap: new connections wait in the kernel's backlog.
    package private(set) var isPaused = false

    package func pause() {
        guard let raw, !isPaused else { return }
        isPaused = true
        cs_listener_pause(raw)
    }

    package func resume() {
        guard let raw, isPaused else { return }
        isPaused = false
        cs_listener_resume(raw)
    }

    package func close() {
        if let raw { cs_listener_close(raw) }
        onAccept = nil
    }
}
