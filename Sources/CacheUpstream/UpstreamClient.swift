import CacheHTTP
import CacheIO
import Logging

/// HTTP/1.1 client for origins: http(s), a keep-alive pool per origin, redirects, at
/// most `maxConnections` open (a request beyond waits for a slot). Loop thread only.
package final class UpstreamClient {
    private let loop: EventLoop
    package private(set) var configuration: UpstreamConfiguration
    private let logger: Logger
    /// Made at the first https origin (the system CA store costs memory), or at start
    /// with a CA file, so a bad one stops the start.
    private var tlsContext: TLSContext?
    private var idle: [String: [UpstreamConnection]] = [:]
    private var live: [ObjectIdentifier: UpstreamConnection] = [:]
    private var pendingAddresses: [ObjectIdentifier: ArraySlice<SocketAddress>] = [:]
    /// Where URLs were last redirected to (tasks remember and forget them).
    var redirects = RedirectMemory()
    /// Tasks waiting for a connection slot, the one due first (a player's CMCD `dl`) at the front.
    private var waiting = WaitingTasks()
    /// Slots held by tasks resolving their origin's name (no connection yet).
    private var resolving = 0
    /// Idle connections closed to make room for a waiting task, not yet gone.
    private var closingForWaiters: Set<ObjectIdentifier> = []
    private var servingWaiters = false
    private var serveAgain = false
    private var waitWarnings = LogThrottle()

    /// Client tunnels (CONNECT) open or opening; those waiting for a slot, oldest first.
    private var tunnels: [ObjectIdentifier: OriginTunnel] = [:]
    private var waitingTunnels: [OriginTunnel] = []

    /// Counted against `maxConnections`: live connections (any stage), names being resolved, tunnels.
    private var slotsTaken: Int { live.count + resolving + tunnels.count }

    /// Fails when the CA file cannot be used (header fields were checked by `validate()`).
    package init(loop: EventLoop, configuration: UpstreamConfiguration, logger: Logger) throws(UpstreamError) {
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        if configuration.tls.caFile != nil { tlsContext = try TLSContext(settings: configuration.tls) }
        if !configuration.tls.verifyCertificates {
            logger.warning("TLS certificate verification is OFF (insecure): any https origin is trusted, including impostors")
        }
    }

    /// A reload: later requests use `configuration`; TLS and the connection cap stay.
    package func reconfigure(_ configuration: UpstreamConfiguration) {
        loop.assertInLoop()
        var updated = configuration
        updated.tls = self.configuration.tls
        updated.maxConnections = self.configuration.maxConnections
        self.configuration = updated
    }

    /// Starts a GET for `url` with the given fields (Range, forwarded client fields).
    /// Without `followsRedirects` (transparent modes), a redirect goes to the delegate.
    package func get(_ url: OriginURL, headers: HTTPHeaders, delegate: UpstreamResponseDelegate,
                     followsRedirects: Bool = true) -> UpstreamTask {
        loop.assertInLoop()
        let start = followsRedirects ? redirects.target(for: url) ?? url : url
        if start != url { logger.debug("going straight to the remembered redirect target", metadata: ["url": "\(url.string)", "target": "\(start.string)"]) }
        let task = UpstreamTask(url: url, start: start, method: "GET", headers: headers, delegate: delegate, client: self)
        task.followsRedirects = followsRedirects
        dispatch(task)
        return task
    }

    /// Any method, with a body (Content-Length), for a transparent pass-through:
    /// redirects are the delegate's; a non-idempotent request is never sent twice (RFC
    /// 9110 §9.2.2), not even when a reused connection dies before the answer.
    package func send(_ method: String, _ url: OriginURL, headers: HTTPHeaders, body: [UInt8]?,
                      delegate: UpstreamResponseDelegate) -> UpstreamTask {
        loop.assertInLoop()
        let task = UpstreamTask(url: url, start: url, method: method, headers: headers, delegate: delegate, client: self,
                                body: body)
        task.followsRedirects = false
        task.mayRetry = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(method)
        dispatch(task)
        return task
    }

    func requestBytes(for task: UpstreamTask) -> [UInt8] {
        UpstreamHeaders.request(method: task.method, url: task.url, originalURL: task.originalURL,
                                headers: task.headers, configuration: configuration, body: task.body)
    }

    /// Runs the task's current hop on an idle connection to its origin, or a new one.
    func dispatch(_ task: UpstreamTask) {
        // Checked at every hop: a redirect from an allowed origin must not lead anywhere else.
        guard configuration.destinations.allows(task.url) else {
            logger.info("destination not allowed", metadata: ["url": "\(task.url.string)",
                                                               "asked": "\(task.originalURL.string)"])
            return task.fail(.forbidden("\(task.url.hostHeader) is not among the allowed origins"))
        }
        let key = task.url.authorityKey
        while var list = idle[key], let connection = list.popLast() {
            idle[key] = list.isEmpty ? nil : list
            if connection.isIdle { return connection.run(task) }
        }
        open(for: task)
    }

    private func open(for task: UpstreamTask) {
        guard slotsTaken < configuration.maxConnections else { return wait(task) }
        let url = task.url
        resolving += 1
        // Through the parent proxy, it is the parent's name that is resolved.
        let parent = configuration.parent(for: url.host)
        loop.resolve(host: parent?.host ?? url.host, port: parent?.port ?? url.port) { [weak self] result in
            guard let self else { return }
            self.resolving -= 1
            guard !task.isFinished, task.url == url else { return self.serveWaiting() }
            switch result {
            case .failure(let error):
                task.fail(.resolve("\(parent?.host ?? url.host): \(error)"))
                self.serveWaiting()
            case .success(let addresses):
                self.connect(task, addresses[...])
            }
        }
    }

    /// Every slot is taken: the task waits, and an idle connection nobody waits for is closed to make room.
    private func wait(_ task: UpstreamTask) {
        waiting.append(task, now: loop.nowMilliseconds, deadline: task.playerDeadline)
        if let count = waitWarnings.occurred(now: Int64(loop.nowMilliseconds)) {
            logger.debug("origin connection limit reached; requests wait for a connection", metadata: [
                "limit": "\(configuration.maxConnections)", "waiting": "\(waiting.count)", "times": "\(count)"])
        }
        serveWaiting()
    }

    /// Starts waiting tasks, the one due first first, while their origin has an idle
    /// connection or a slot is free; else an idle connection elsewhere is closed.
    private func serveWaiting() {
        // A dispatch below that ends in a call back here: the loop goes round again.
        guard !servingWaiters else { return serveAgain = true }
        servingWaiters = true
        defer { servingWaiters = false }
        repeat {
            serveAgain = false
            while let tunnel = waitingTunnels.first {
                guard tunnel.isClosed || slotsTaken < configuration.maxConnections else {
                    if closingForWaiters.isEmpty { closeSpareIdle() }
                    break
                }
                waitingTunnels.removeFirst()
                if !tunnel.isClosed { begin(tunnel) }
            }
            while let task = waiting.first {
                guard task.isFinished || idle[task.url.authorityKey]?.contains(where: \.isIdle) == true
                        || slotsTaken < configuration.maxConnections else {
                    if closingForWaiters.isEmpty { closeSpareIdle() }
                    break
                }
                waiting.removeFirst()
                if !task.isFinished { dispatch(task) }
            }
        } while serveAgain
    }

    /// Closes the idle connection of some origin (its slot goes to a waiter once it is gone).
    private func closeSpareIdle() {
        guard let key = idle.first(where: { !$0.value.isEmpty })?.key, var list = idle[key] else { return }
        let connection = list.removeFirst()
        idle[key] = list.isEmpty ? nil : list
        closingForWaiters.insert(ObjectIdentifier(connection))
        connection.close()
    }

    private func connect(_ task: UpstreamTask, _ addresses: ArraySlice<SocketAddress>) {
        guard let address = addresses.first else {
            task.fail(.connect("\(task.url.hostHeader): no address"))
            serveWaiting()
            return
        }
        let url = task.url
        var tls: TLSSession?
        if url.scheme == "https" {
            do {
                if tlsContext == nil { tlsContext = try TLSContext(settings: configuration.tls) }
                tls = try TLSSession(context: tlsContext!, host: url.host, isIPLiteral: url.isIPLiteral)
            } catch {
                task.fail(error)
                serveWaiting()
                return
            }
        }
        let connection = UpstreamConnection(poolKey: url.authorityKey, label: url.hostHeader,
                                            loop: loop, configuration: configuration, client: self)
        live[ObjectIdentifier(connection)] = connection
        task.connection = connection
        pendingAddresses[ObjectIdentifier(connection)] = addresses.dropFirst()
        // https through the parent: a CONNECT tunnel, then TLS with the origin inside it.
        let tunnelRequest = url.scheme == "https" && configuration.parent(for: url.host) != nil
            ? ParentProxy.connectRequest(host: url.host, port: url.port, via: task.headers.values("Via")) : nil
        connection.connect(to: address, tls: tls, tunnelRequest: tunnelRequest, for: task)
    }

    /// Tries the next address, else fails the task (not after a timeout or a bad certificate).
    func connectionFailed(_ connection: UpstreamConnection, task: UpstreamTask, error: UpstreamError) {
        let rest = pendingAddresses.removeValue(forKey: ObjectIdentifier(connection)) ?? []
        guard !task.isFinished else { return }
        switch error {
        case .connect where !rest.isEmpty, .closedEarly where !rest.isEmpty:
            logger.debug("trying the next address", metadata: ["host": "\(task.url.hostHeader)", "error": "\(error)"])
            connect(task, rest)
        default:
            task.fail(error)
        }
    }

    /// A `retryable` failure (the connection machine's call) is retried once on a fresh connection.
    func exchangeFailed(_ connection: UpstreamConnection, task: UpstreamTask, error: UpstreamError, retryable: Bool) {
        guard !task.isFinished else { return }
        if retryable && task.mayRetry {
            task.mayRetry = false
            task.connection = nil
            logger.debug("retrying on a fresh connection", metadata: ["url": "\(task.url.string)", "error": "\(error)"])
            open(for: task)
        } else {
            task.fail(error)
        }
    }

    /// Returns a connection to the idle pool. Waiters get it on the next loop turn, so a
    /// redirect of the task just finished takes it first; while tasks wait, the pool
    /// keeps it whatever its size (closing it would make a waiter open another).
    func release(_ connection: UpstreamConnection) {
        pendingAddresses[ObjectIdentifier(connection)] = nil
        var list = idle[connection.poolKey] ?? []
        if list.count >= configuration.maxIdlePerOrigin && waiting.isEmpty { return connection.close() }
        list.append(connection)
        idle[connection.poolKey] = list
        if !waiting.isEmpty || !waitingTunnels.isEmpty { loop.executeLater { [weak self] in self?.serveWaiting() } }
    }

    /// The connection is gone: its slot is free for a waiting task.
    func forget(_ connection: UpstreamConnection) {
        live[ObjectIdentifier(connection)] = nil
        pendingAddresses[ObjectIdentifier(connection)] = nil
        closingForWaiters.remove(ObjectIdentifier(connection))
        if var list = idle[connection.poolKey], let index = list.firstIndex(where: { $0 === connection }) {
            list.remove(at: index)
            idle[connection.poolKey] = list.isEmpty ? nil : list
        }
        if !waiting.isEmpty || !waitingTunnels.isEmpty { serveWaiting() }
    }

    /// Opens a connection to `host:port` for a client's CONNECT tunnel (through the parent's CONNECT when one
    /// is used for `host`). It takes a connection slot like a request, its destination checked; the result
    /// comes to `delegate`, never from inside this call. `via`: the `Via` values for the parent.
    /// `refusingPort`: the client's listening port; this machine on it is refused (a tunnel into the proxy).
    package func openTunnel(host: String, port: Int, via: [String], refusingPort: Int? = nil,
                            delegate: OriginTunnelDelegate) -> OriginTunnel {
        loop.assertInLoop()
        let tunnel = OriginTunnel(host: host, port: port, via: via, delegate: delegate, client: self, loop: loop)
        tunnel.refusedPort = refusingPort
        guard configuration.destinations.allows(host: host, port: port) else {
            tunnel.fail(.forbidden("\(tunnel.label) is not among the allowed origins"))
            return tunnel
        }
        if slotsTaken < configuration.maxConnections {
            begin(tunnel)
        } else {
            waitingTunnels.append(tunnel)
            serveWaiting()
        }
        return tunnel
    }

    private func begin(_ tunnel: OriginTunnel) {
        tunnels[ObjectIdentifier(tunnel)] = tunnel
        let parent = configuration.parent(for: tunnel.host)
        let request = parent.map { _ in ParentProxy.connectRequest(host: tunnel.host, port: tunnel.port, via: tunnel.via) }
        loop.resolve(host: parent?.host ?? tunnel.host, port: parent?.port ?? tunnel.port) { [weak tunnel, weak self] result in
            guard let tunnel, let self, !tunnel.isClosed else { return }
            switch result {
            case .failure(let error):
                tunnel.fail(.resolve("\(parent?.host ?? tunnel.host): \(error)"))
            case .success(let addresses):
                // Any spelling or DNS name of this machine on the listening port: checked on what it resolved to.
                // (Through a parent, the parent reaches the host; a parent that is this proxy ends with Via's 508.)
                if parent == nil, let own = tunnel.refusedPort,
                   addresses.contains(where: { $0.port == own && $0.isThisMachine }) {
                    return tunnel.fail(.forbidden("\(tunnel.label) is this proxy"))
                }
                tunnel.connect(addresses[...], tunnelRequest: request, timeout: self.configuration.connectTimeout)
            }
        }
    }

    /// The tunnel is gone (or gave up): its slot is free.
    func forget(_ tunnel: OriginTunnel) {
        guard tunnels.removeValue(forKey: ObjectIdentifier(tunnel)) != nil else { return }
        if !waiting.isEmpty || !waitingTunnels.isEmpty { serveWaiting() }
    }

    func logRedirect(_ status: Int, from: OriginURL, to: OriginURL) {
        logger.debug("redirect", metadata: ["status": "\(status)", "from": "\(from.string)", "to": "\(to.string)"])
    }

    /// Where `url` was last redirected to (the final location), if it was.
    package func redirectTarget(for url: OriginURL) -> OriginURL? { redirects.target(for: url) }

    func forgetRedirect(from url: OriginURL) {
        logger.debug("forgetting the redirect target", metadata: ["url": "\(url.string)"])
        redirects.forget(url)
    }

    /// Closes every connection (shutdown).
    package func closeAll() {
        while let task = waiting.first {
            waiting.removeFirst()
            if !task.isFinished { task.fail(.closedEarly("the origin client is closing")) }
        }
        for connection in live.values { connection.close() }
        for tunnel in Array(tunnels.values) + waitingTunnels { tunnel.close() }
        waitingTunnels.removeAll()
        idle.removeAll()
    }
}
