import CacheHTTP
import CacheIO

/// A server reachable from other loops: work is posted to its loop (no shared state, no locks).
struct LoopLink: @unchecked Sendable {
    // Touched only inside `run`, on `loop`.
    private let server: ProxyServer
    let loop: EventLoop

    init(_ server: ProxyServer) {
        self.server = server
        loop = server.loop
    }

    /// Runs `work` with the server on its loop. False (the work dropped) once that loop has stopped.
    @discardableResult
    func run(_ work: @escaping @Sendable (ProxyServer) -> Void) -> Bool {
        let link = self
        return loop.execute { work(link.server) }
    }
}

/// A client connection on its way to another loop: its socket, its state (with any pipelined bytes)
/// and the request that loop must answer (nil: back home, idle). Moved, never shared.
struct MovedConnection: Sendable {
    let socket: HandedSocket
    let machine: ConnectionStateMachine
    let request: (head: HTTPRequestHead, body: [UInt8]?)?
    let peer: SocketAddress?
    let reading: Bool
    /// The loop that accepted it, where it goes back once idle.
    let home: LoopLink
}
