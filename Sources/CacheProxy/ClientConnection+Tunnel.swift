import CacheHTTP

// CONNECT: the connection becomes a byte tunnel to the origin (`Tunnel`).

extension ClientConnection {
    /// Starts reaching `host:port` for an admitted CONNECT; the tunnel answers (200 or a refusal).
    func openTunnel(_ head: HTTPRequestHead, host: String, port: Int) {
        guard server.tunnelQuota.admit(clientKey) else {
            let quota = server.tunnelQuota
            if let count = server.tunnelWarnings.occurred(now: Int64(server.loop.nowMilliseconds)) {
                server.logger.warning("tunnel limit reached: 503 to new CONNECTs", metadata: [
                    "client": "\(clientKey)", "open": "\(quota.open)", "limit": "\(quota.total)",
                    "perClient": "\(quota.perClient)", "times": "\(count)"])
            }
            return respondSimple(503, "Service unavailable: too many tunnels open\n", keepAlive: false, head: head,
                                 extra: [("Retry-After", "1")])
        }
        let tunnel = Tunnel(connection: self, request: head, host: host, port: port, server: server)
        exchange = tunnel
        tunnel.start()
    }

    /// Refused, failed or closed: its place is free.
    func tunnelEnded() { server.tunnelQuota.release(clientKey) }

    /// The tunnel answered 200: the machine lets go and hands over what it buffered after the head.
    func tunnelOpened(_ tunnel: Tunnel) {
        guard exchange === tunnel else { return }
        drive(.tunnelOpened)
    }
}
