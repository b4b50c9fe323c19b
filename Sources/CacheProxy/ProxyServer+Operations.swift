import CacheHTTP
import CacheLoading

// What an operator does to a running server: reload, log rotation, drain, and the health it reports.

extension ProxyServer {
    /// Every loop's server joined, not draining nor stopped (`/readyz` answers 503 otherwise).
    var isReady: Bool { joined && !isDraining && !stopped }

    /// Connections with a request in flight (idle keep-alive ones not counted).
    package var busyConnections: Int { connections.values.reduce(0) { $0 + ($1.isIdle ? 0 : 1) } }

    /// A reload on this loop: the allowed destinations and the shared access log (see `accessLog(at:)`).
    package func reconfigure(destinations: DestinationPolicy, accessLog: AccessLogWriter?) {
        loop.assertInLoop()
        access.destinations = destinations
        self.accessLog = accessLog
    }

    /// On the first loop's server: the writer every server is to use for `path` (nil: none). The one
    /// open reopens at the new path (earlier lines go to the old file); none open: one starts.
    package func accessLog(at path: String?) throws -> AccessLogWriter? {
        loop.assertInLoop()
        guard let path else {
            accessLog?.close()
            return nil
        }
        if let accessLog {
            if accessLog.path != path { accessLog.reopen(path: path) }
            return accessLog
        }
        return try AccessLogWriter(path: path, logger: logger)
    }

    package func reopenLogs() {
        loop.assertInLoop()
        if isHome { accessLog?.reopen() }
    }

    /// Drain: stop listening; later requests get their health answer or 503 and a close; responses in flight
    /// go on. Idle keep-alive connections stay, so a health checker sees `/readyz` go 503.
    package func beginDrain() {
        loop.assertInLoop()
        guard !isDraining, !stopped else { return }
        isDraining = true
        listener?.close()
        listener = nil
    }
}

extension ProxyServer {
    /// The cache operations over every loop's store (admin routes, PURGE); nil once stopping.
    var operations: CacheOperations? {
        engine.group.map { CacheOperations(stores: $0.storesByShard, group: $0.stores, cacheKey: engine.configuration.cacheKey) }
    }
}
