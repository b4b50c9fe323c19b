import CacheHTTP

// CONNECT: the connection becomes a byte tunnel to the origin (`Tunnel`).

extension ClientConnection {
    /// Starts reaching `host:port` for an admitted CONNECT; the tunnel
    /// answers the request (200 and the relay, or a refusal).
    func openTunnel(_ head: HTTPRequestHead, host: String, port: Int) {
        let tunnel = Tunnel(connection: self, request: head, host: host, port: port, server: server)
        exchange = tunnel
        tunnel.start()
    }

    /// The tunnel answered 200: the machine lets go of the connection and
    /// hands over the bytes it buffered after the CONNECT head.
    func tunnelOpened(_ tunnel: Tunnel) {
        guard exchange === tunnel else { return }
        drive(.tunnelOpened)
    }
}
