import CacheHTTP
import CacheIO

extension ClientConnection {
    func handle(_ head: HTTPRequestHead, body: [UInt8]? = nil) {
        sentBefore = socket.bytesSent
        record = ResponseRecord(client: peerText, method: head.method, target: head.target, status: 0, cache: .bypass,
                                bytesSent: 0, startedAt: WallClock.monotonicNanoseconds())
        if server.isDraining { return respondDraining(head, path: head.target.utf8.prefix { $0 != UInt8(ascii: "?") }) }
        let host = hostMemo.facts(for: head)
        if head.method == "PURGE" { return handlePurge(head, host: host) }
        switch admission(head, host: host) {
        case .refuse(let status, let reason, let keepAlive):
            return respondSimple(status, reason, keepAlive: keepAlive, head: head)
        case .transparent(let origin):
            return handleTransparent(head, origin: origin, body: body)
        case .tunnel(let host, let port):
            return openTunnel(head, host: host, port: port)
        case .local:
            break
        }
        // `/_httpcache/…` is routed as the path after the prefix (another loop routes it again, prefix and all).
        let received = head
        var head = head
        if let own = OwnRoutes.unprefixed(head.target) { head.target = own }
        let route = LocalRoute.resolve(method: head.method, target: head.target, hasBody: head.announcesBody)
        if route.isHomeOnly && !server.isHome { return handOver(received, to: 0) }
        switch route {
        case .proxyURL: proxy(head)
        case .admin: handleAdmin(head)
        case .refuse(let status, let reason, let allow):
            respondSimple(status, reason, keepAlive: false, head: head, extra: allow.map { [("Allow", $0)] } ?? [])
        case .ping: respondSimple(200, "pong\n", keepAlive: head.keepAlive, head: head)
        case .health:
            let path = head.target.utf8.prefix { $0 != UInt8(ascii: "?") }
            let (status, body) = healthAnswer(path: path) ?? (404, "Not found\n")
            respondSimple(status, body, keepAlive: head.keepAlive, head: head)
        case .page: handlePage(head)
        case .stats: handleStats(head)
        // Reverse mode's `/` is the origin's (admission sent it there); only `/_httpcache/` gets here.
        case .root where server.access.mode == .loopback: respondToRoot(head, prefixed: received.target != head.target)
        case .root, .notFound:
            respondSimple(404, "Not found: proxy URLs look like /p/<encoded origin>/<name>\n", keepAlive: head.keepAlive, head: head)
        }
    }

    func proxy(_ head: HTTPRequestHead) {
        let engine = server.engine
        guard let origin = server.targets.entry(for: head.target, storeKey: { engine.storeKey(for: $0) }) else {
            return respondSimple(400, "Bad request: the proxy URL does not carry an http or https URL\n",
                                 keepAlive: head.keepAlive, head: head)
        }
        readCMCD(head, origin: origin.url, proxyTarget: head.target)
        let owner = server.owner(of: origin.storeKey)
        if owner != server.index {
            return answerFromCopy(head, url: origin.url, urlString: origin.urlString, storeKey: origin.storeKey,
                                  owner: owner)
        }
        if let hit = localCopy(head, url: origin.url, storeKey: origin.storeKey) {
            return serve(hit, head: head, url: origin.url, urlString: origin.urlString, storeKey: origin.storeKey,
                         transparent: false, owner: owner)
        }
        // The CMCD a player appended to its proxy URL goes to the origin with a miss (the key stays the
        // entry's); `urlString` stays the proxy URL's own: what decryption and rewriting look up.
        let carried = record?.cmcd == nil ? nil
            : CMCD.carried(from: head.target, to: origin.urlString).flatMap(OriginURL.parse)
        startExchange(head, url: carried ?? origin.url, urlString: origin.urlString,
                      storeKey: origin.storeKey)
    }

    private func startExchange(_ head: HTTPRequestHead, url: OriginURL, urlString: String, storeKey: String,
                               transparent: Bool = false) {
        let exchange = ProxyExchange(connection: self, request: head, url: url, urlString: urlString,
                                     storeKey: storeKey, server: server, transparent: transparent)
        self.exchange = exchange
        exchange.start()
    }

    /// Forward and reverse modes: GET and HEAD without a body go through the cache; anything else passes
    /// through with its body (a HEAD of something not stored too: it never fetches a body).
    enum Admission {
        case transparent(TargetCache.Entry)
        case tunnel(host: String, port: Int)
        case local
        case refuse(status: Int, reason: String, keepAlive: Bool)
    }

    /// Where a request goes and whether it may (`RequestRoute`, then `AccessPolicy`), from the head alone.
    func admission(_ head: HTTPRequestHead, host: HostFacts) -> Admission {
        let loopback = peer?.isLoopback ?? false
        let own = OwnRoutes.unprefixed(head.target)
        let reverseOrigin = server.configuration.reverseOrigin
        let engine = server.engine
        var entry: TargetCache.Entry?
        let route = RequestRoute.resolve(head, pseudonym: server.viaPseudonym, reverseOrigin: reverseOrigin,
                                         peerIsLoopback: loopback, host: host, ownRoute: own != nil) { target in
            entry = server.targets.transparentEntry(for: target, reverseOrigin: reverseOrigin,
                                                    storeKey: { engine.storeKey(for: $0) })
            return entry?.url
        }
        switch route {
        case .refuse(let status, let reason):
            return .refuse(status: status, reason: reason + "\n", keepAlive: false)
        case .transparent(let url):
            let verdict = server.access.verdict(transparent: url, reverse: head.target.hasBytePrefix("/"),
                                                peerIsLoopback: loopback, host: host)
            let origin = entry ?? TargetCache.Entry(url: url, urlString: url.string, storeKey: engine.storeKey(for: url.string))
            return verdict == .allow ? .transparent(origin) : .refuse(status: verdict.status, reason: verdict.body,
                                                                       keepAlive: head.keepAlive)
        case .tunnel(let name, let port):
            let verdict = server.access.verdict(tunnelTo: name, port: port, peerIsLoopback: loopback, ownPort: server.port)
            return verdict == .allow ? .tunnel(host: name, port: port)
                : .refuse(status: verdict.status, reason: verdict.body, keepAlive: false)
        case .local:
            var local = head
            if let own { local.target = own }
            let verdict = server.access.verdict(for: local, peerIsLoopback: loopback, host: host)
            return verdict == .allow ? .local : .refuse(status: verdict.status, reason: verdict.body,
                                                        keepAlive: head.keepAlive)
        }
    }

    func handleTransparent(_ head: HTTPRequestHead, origin: TargetCache.Entry, body: [UInt8]?) {
        let (url, urlString, primary) = (origin.url, origin.urlString, origin.storeKey)
        // Origin fields unlike a proxy URL's get an entry of their own (with the URL's owner, as variants):
        // what they made the origin answer never reaches proxy-URL (and LAN) clients.
        let apart = proxyURLFields.differs(head.headers, forwarded: server.engine.configuration.upstream.forwardedHeaders)
        let storeKey = apart ? server.engine.store.transparentKey(primary: primary) : primary
        readCMCD(head, origin: url, apart: apart)
        let cacheable = (head.method == "GET" || head.method == "HEAD") && body == nil
        let owner = server.owner(of: primary)
        if cacheable && owner != server.index {
            return answerFromCopy(head, url: url, urlString: urlString, storeKey: storeKey, owner: owner,
                                  transparent: true)
        }
        // The owner's own plain hits come from its copy, as a proxy URL's do (no reader, no planner).
        if cacheable, let hit = localCopy(head, url: url, storeKey: storeKey), hit.transparentTTL != nil {
            return serve(hit, head: head, url: url, urlString: urlString, storeKey: storeKey, transparent: true,
                         owner: owner)
        }
        // Anything else passes through from this loop (every loop has an origin client).
        // A HEAD with nothing stored goes on as a HEAD, unless only-if-cached (504 from the reader).
        let headMiss = head.method == "HEAD" && Freshness.mayForwardMiss(requestHeaders: head.headers)
            && !server.loader.hasStoredHead(storeKey: storeKey, request: head.headers)
        guard cacheable && !headMiss else {
            let passthrough = PassthroughExchange(connection: self, request: head, url: url, body: body ?? [],
                                                  server: server)
            exchange = passthrough
            return passthrough.start()
        }
        startExchange(head, url: url, urlString: urlString, storeKey: storeKey, transparent: true)
    }
}
