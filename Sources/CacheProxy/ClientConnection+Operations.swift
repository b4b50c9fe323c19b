import CacheHTTP
import CacheIO

// The routes an operator uses on a running proxy: PURGE, /livez, /readyz and answers while draining.

extension ClientConnection {
    /// `/livez`: 200 while the process runs; `/readyz`: 200 while serving, else 503. nil for another path.
    func healthAnswer(path: Substring.UTF8View) -> (status: Int, body: String)? {
        if path.elementsEqual("/livez".utf8) { return (200, "live\n") }
        guard path.elementsEqual("/readyz".utf8) else { return nil }
        if server.isReady { return (200, "ready\n") }
        return (503, server.isDraining ? "Not ready: draining\n" : "Not ready: starting\n")
    }

    /// While draining, a request gets its health answer or 503, and the connection closes after it.
    func respondDraining(_ head: HTTPRequestHead, path: Substring.UTF8View) {
        let (status, body) = healthAnswer(path: path) ?? (503, "Service unavailable: the proxy is shutting down\n")
        respondSimple(status, body, keepAlive: false, head: head, extra: status == 503 ? [("Retry-After", "1")] : [])
    }

    /// `PURGE` of a proxy URL, or (forward and reverse mode) of the URL itself: every stored variant
    /// goes at once (200 with `{"purged":N}`, 404 when nothing was stored). `AccessPolicy.purgeVerdict`.
    func handlePurge(_ head: HTTPRequestHead, host: HostFacts) {
        if let error = host.error {
            return respondSimple(400, "Bad request: \(error.rawValue)\n", keepAlive: false, head: head)
        }
        let verdict = AccessPolicy.purgeVerdict(host: server.access.hostKind(host), absoluteForm: !head.target.hasPrefix("/"),
                                                mode: server.access.mode, peerIsLoopback: peer?.isLoopback ?? false,
                                                token: head.headers["x-httpcache-token"], adminToken: server.adminToken)
        guard verdict == .allow else {
            server.logger.info("PURGE refused", metadata: ["target": "\(head.target)", "status": "\(verdict.status)",
                                                           "host": "\(host.value ?? "")"])
            return respondSimple(verdict.status, verdict.body, keepAlive: false, head: head)
        }
        if head.announcesBody {
            return respondSimple(400, "Bad request: PURGE takes no body\n", keepAlive: false, head: head)
        }
        guard let url = purgedURL(head.target), let operations = server.operations else {
            return respondSimple(400, "Bad request: PURGE needs a proxy URL, an absolute URL or (reverse mode) a path\n",
                                 keepAlive: head.keepAlive, head: head)
        }
        let reply = LoopBound(self, loop: server.loop)
        operations.purge(url: url.string) { result in
            reply.loop.execute {
                let connection = reply.value
                guard !connection.socket.isClosed else { return }
                let (status, json) = switch result {
                case .success(let count): (200, JSONText.encode(AdminPurged(purged: count)))
                case .failure(let error): (error.code == .notFound ? 404 : 503, JSONText.encode(error))
                }
                connection.respondSimple(status, json + "\n", keepAlive: head.keepAlive, head: head,
                                         contentType: "application/json")
            }
        }
    }

    /// A proxy URL's origin (either form, also under `/_httpcache/`), an absolute target, or a reverse path.
    private func purgedURL(_ target: String) -> OriginURL? {
        let proxyTarget = OwnRoutes.unprefixed(target) ?? target
        if ProxyURL.isProxyTarget(proxyTarget) { return ProxyURL.originURL(fromTarget: proxyTarget) }
        return RequestRoute.originURL(target: target, reverseOrigin: server.configuration.reverseOrigin)
    }
}
