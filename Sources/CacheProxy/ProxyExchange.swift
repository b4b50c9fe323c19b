import CacheHTTP
import CacheLoading
import CacheStorage
import CacheUpstream

/// Drives one proxied request: a `BodySource` gives the body, an `ExchangeStateMachine` decides the response,
/// this class acts on the connection. Events raised while acting are queued, never re-entrant.
final class ProxyExchange: BodySink {
    private unowned let connection: ClientConnection
    private unowned let server: ProxyServer
    private let request: HTTPRequestHead
    private let url: OriginURL
    private let urlString: String
    private let bodyRequest: BodyRequest
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (a share of every hit).
    @exclusivity(unchecked) private var machine: ExchangeStateMachine
    @exclusivity(unchecked) private var queue: [ExchangeStateMachine.Event] = []
    private var pendingBytes = 0
    private var draining = false
    private var source: BodySource?
    private var reader: ResourceReader? { source?.reader }
    /// Instead of a source: the owner loop's copy of a plain hit (see PlainHit).
    private var copy: PlainHit?
    private var released = false
    /// For the access log and metrics: status sent, body bytes cached when planned, body bytes queued.
    private var status = 0
    private var cachedAtStart: Int64 = 0
    private var plannedBytes: Int64 = 0
    private var bodyBytes: Int64 = 0
    private var headWasKnown = false
    private var sentCacheStatus = CacheStatusField.bypass
    /// A prefetch stored (or is storing) what this request asks for.
    private var fromPrefetch = false

    private let storeKey: String
    /// Forward or reverse proxy: end-to-end fields go to the origin, redirects are relayed (RFC 9110 §7.6).
    private let transparent: Bool

    init(connection: ClientConnection, request: HTTPRequestHead, url: OriginURL, urlString: String, storeKey: String,
         server: ProxyServer, transparent: Bool = false) {
        self.storeKey = storeKey
        self.transparent = transparent
        self.connection = connection
        self.request = request
        self.url = url
        self.urlString = urlString
        self.server = server
        bodyRequest = BodyRequest(request)
        machine = ExchangeStateMachine(request: bodyRequest)
    }

    /// Once the entry is at hand: its first use reads metadata on the pool, never on the loop.
    func start() {
        notePrefetch()
        server.engine.store.whenAtHand(storeKey: storeKey) { [weak self] in
            guard let self, !self.released else { return }
            self.begin()
        }
    }

    private func begin() {
        let fields = transparent
            ? OriginFields(UpstreamHeaders.transparent(from: request.headers))
            : OriginFields(forwarding: request.headers, extra: server.engine.configuration.upstream.forwardedHeaders)
        let reader = server.engine.reader(url: url, spec: bodyRequest.range, fields: fields, storeKey: storeKey,
                                          request: request.headers)
        reader.followsRedirects = !transparent
        headWasKnown = reader.resource.totalLength != nil
        let source = BodySource(reader: reader, sink: self, loop: server.loop, logger: server.logger)
        self.source = source
        source.start()
    }

    /// Answers from a copy of a plain hit: the stored response as is, no reader, no transform.
    func start(copy hit: PlainHit) {
        headWasKnown = true
        copy = hit
        notePrefetch()
        let ttl: Int? = transparent ? hit.transparentTTL ?? 0 : hit.info.ttl
        sentCacheStatus = CacheStatusField(hit: true, ttl: ttl)
        if fromPrefetch {
            sentCacheStatus.detail = CacheStatusField.prefetched
            machine.cacheStatus = sentCacheStatus.value(name: server.cacheStatusName)
        } else {
            machine.cacheStatus = server.heads.hitStatus(ttl: ttl, name: server.cacheStatusName)
        }
        raise(.content(hit.info, transformed: false, date: server.heads.date(), middle: hit.middle))
    }

    /// A player's GET, told to prefetching (which fetches what follows it) once any playlist was
    /// served; a hit says whether a prefetch stored it.
    private func notePrefetch() {
        guard !bodyRequest.isHead, let group = server.engine.group else { return }
        let ledger = group.prefetchLedger
        guard ledger.depth > 0, ledger.playlistsServed else { return }
        fromPrefetch = ledger.isPrefetched(storeKey)
        let url = urlString
        group.run(0) { $0.prefetcher.requested(url) }
    }

    /// A playlist or MPD served whole: prefetching reads what it lists.
    private func noteManifest(_ info: ContentInfo) {
        guard !bodyRequest.isHead, bodyRequest.range == nil, info.status == 200, let resource = reader?.resource,
              server.engine.group.map({ $0.prefetchLedger.depth > 0 }) ?? false else { return }
        let path = url.pathAndQuery
        guard Self.isPlaylist(resource, info: info, path: path) || Self.isManifest(resource, info: info, path: path)
        else { return }
        server.engine.noteManifestServed(urlString)
    }

    func fill(_ record: inout ResponseRecord) {
        if status != 0 { record.status = status }
        record.cacheStatus = sentCacheStatus
        let fromCache = min(cachedAtStart, bodyBytes)
        record.bytesFromCache = UInt64(max(0, fromCache))
        record.bytesFromOrigin = UInt64(max(0, bodyBytes - fromCache))
        if copy == nil && reader?.resource.isTransient ?? false {
            record.cache = .bypass
        } else if !headWasKnown {
            record.cache = .miss  // the origin had to describe it first
        } else {
            // Judged on what was planned, so a response cut short keeps its kind.
            record.cache = CacheStatus.classify(fromCache: UInt64(cachedAtStart),
                                                fromOrigin: UInt64(plannedBytes - cachedAtStart))
        }
    }

    // MARK: BodySink

    /// The most body bytes queued in memory on the socket: past it the source pauses until the
    /// socket drains (a client that does not read holds no more than this of a transformed body).
    static let queueLimit = 4 << 20

    /// Counts events queued here too: a source pumping inside an action raises them before the socket.
    var room: Int { max(0, Self.queueLimit - connection.socket.queuedBytes - pendingBytes) }

    var takesFiles: Bool { true }

    func transform(for info: ContentInfo) -> Result<BodyTransform, DecryptionSetupError> {
        server.engine.transform(url: urlString) { manifestRewrite(info).map { .rewriteManifest($0) } }
    }

    /// Absolute-form targets are forward-proxy requests, origin-form ones reverse-proxy ones.
    private var rewriteMode: ManifestRewriteMode {
        !transparent ? .proxyURLs : request.target.hasBytePrefix("/") ? .reverse(originHost: url.hostHeader) : .forward
    }

    /// How a playlist or MPD is rewritten for this client (nil: neither, or unchanged). In LAN mode the
    /// proxy URLs written are signed, for the destinations the policy allows only.
    private func manifestRewrite(_ info: ContentInfo) -> ManifestTransform? {
        guard let resource = reader?.resource else { return nil }
        let path = url.pathAndQuery
        let (engine, access, manifestURL, lan) = (server.engine, server.access, url, server.access.mode == .lan)
        let format: ManifestTransform.Format
        if Self.isPlaylist(resource, info: info, path: path) {
            var proxyPath: (@Sendable (String) -> String?)?
            if lan { proxyPath = { access.signedPath(forOrigin: $0, inPlaylist: manifestURL) } }
            format = .hls(hook: engine.configuration.playlistURIHook, proxyPath: proxyPath)
        } else if Self.isManifest(resource, info: info, path: path) {
            var proxyPath: (@Sendable (String, Bool) -> String?)?
            if lan { proxyPath = { access.signedBasePath(forOrigin: $0, template: $1, inManifest: manifestURL) } }
            format = .dash(hook: engine.configuration.manifestURLHook, proxyPath: proxyPath)
        } else {
            return nil
        }
        return ManifestTransform.choose(
            url: engine.client.redirectTarget(for: url)?.string ?? urlString, mode: rewriteMode,
            clientHost: request.headers["host"] ?? server.address, format: format, logger: server.logger)
    }

    func bodyHead(_ result: Result<ContentInfo, LoadError>) {
        switch result {
        case .success(let info):
            let transformed = !(source?.transform.isNone ?? true)
            sentCacheStatus = cacheStatusField(info, transformed: transformed)
            if fromPrefetch && sentCacheStatus.hit { sentCacheStatus.detail = CacheStatusField.prefetched }
            noteManifest(info)
            machine.cacheStatus = sentCacheStatus.value(name: server.cacheStatusName)
            raise(.content(info, transformed: transformed, date: server.heads.date()))
        case .failure(let error):
            raise(.contentFailed(error))
        }
    }

    /// Relayed to HTTP/1.1 clients before the head (RFC 9110 §15.2), e.g. 103; never 101 (a protocol switch).
    func bodyInterim(_ head: HTTPResponseHead) {
        guard !released, status == 0, request.version != .http10, head.status != 101 else { return }
        connection.socket.write(Intermediary.interimHead(head, pseudonym: server.viaPseudonym))
    }

    func bodyFile(_ file: DataFile, _ range: Range<Int64>) { raise(.file(file, range)) }

    func bodyBytes(_ bytes: [UInt8]) {
        pendingBytes += bytes.count
        raise(.bytes(bytes))
    }

    func bodyEnded() { raise(.bodyEnded) }

    func bodyFailed(_ error: LoadError) { raise(.failed(error)) }

    func socketDrained() {
        source?.resume()
    }

    private func raise(_ event: ExchangeStateMachine.Event) {
        guard !released else { return }
        guard !draining else {
            if queue.capacity == 0 { queue.reserveCapacity(4) }  // a hit's body events: one allocation
            return queue.append(event)
        }
        draining = true
        defer { draining = false }
        // The first event is handled at once; only those raised while acting wait in `queue`.
        var first: ExchangeStateMachine.Event? = event
        repeat {
            while !released, let next = first ?? (queue.isEmpty ? nil : queue.removeFirst()) {
                first = nil
                if case .bytes(let bytes) = next { pendingBytes -= bytes.count }
                perform(machine.handle(next))
            }
            // The source waits for room; the socket may have taken these bytes (no drain will come): go on.
            if !released, let source, source.waitsForRoom, room > 0 { source.resume() }
        } while !queue.isEmpty && !released
        queue.removeAll()
        pendingBytes = 0
    }

    private func perform(_ actions: [ExchangeStateMachine.Action]) {
        for action in actions {
            switch action {
            case .deliver(let range):
                if let hit = copy {
                    // A copy is of a complete resource: everything planned is cached.
                    let planned = range.clamped(to: 0..<max(0, hit.info.totalLength ?? 0))
                    plannedBytes = Int64(planned.count)
                    cachedAtStart = plannedBytes
                    if planned.isEmpty {
                    } else if let body = hit.body {
                        server.metrics.hitsFromMemory += 1
                        // A small object from memory: head and body in one send, the body the copy's storage.
                        raise(.bytes(planned.count == body.count
                            ? body : Array(body[Int(planned.lowerBound)..<Int(planned.upperBound)])))
                    } else {
                        raise(.file(hit.file, planned))
                    }
                    raise(.bodyEnded)
                } else if let source {
                    let total = source.reader.resource.totalLength ?? range.upperBound
                    let planned = range.clamped(to: 0..<max(0, total))
                    plannedBytes = Int64(planned.count)
                    cachedAtStart = source.reader.resource.available.intersection(planned)
                        .reduce(0) { $0 + Int64($1.count) }
                    source.deliver(range)
                }
            case .write(let bytes):
                if status == 0 { status = Self.status(of: bytes) } else { bodyBytes += Int64(bytes.count) }
                connection.socket.write(bytes)
            case .writeHead(let head, let body):
                status = Self.status(of: head)
                bodyBytes += Int64(body.count)
                connection.socket.write(head: head, body: body)
            case .sendFile(let file, let range, let head?):
                status = Self.status(of: head)
                bodyBytes += Int64(range.count)
                connection.write(head: head, thenSendFile: file, range)
            case .sendFile(let file, let range, nil):
                bodyBytes += Int64(range.count)
                connection.sendFile(file, range)
            case .respondError(let error):
                status = ErrorResponse.status(for: error)
                closeReader()
                var field = CacheStatusField(forward: reader?.forwardReason ?? .bypass)
                if case .originStatus(let originStatus, _, _) = error { field.forwardStatus = originStatus }
                sentCacheStatus = field
                connection.socket.write(ErrorResponse.bytes(for: error, url: urlString, keepAlive: machine.keepAlive,
                                                     includeBody: !bodyRequest.isHead, date: server.heads.date(),
                                                     logger: server.logger,
                                                     via: "1.1 " + server.viaPseudonym,
                                                     cacheStatus: field.value(name: server.cacheStatusName)))
            case .finish(let keepAlive):
                connection.exchangeFinished(keepAlive: keepAlive)
            case .abort(let error):
                // The head is out: end the connection early (a short body, never a wrong byte).
                server.logger.warning("response cut short", metadata: [
                    "url": "\(urlString)", "offset": "\(reader?.offset ?? -1)", "error": "\(error)"])
                closeReader()
                connection.abort()
            }
        }
    }

    /// How the cache answered (RFC 9211): from the origin for the reader's reason, else a hit when
    /// every byte the response needs is stored, a partial forward when some are missing.
    private func cacheStatusField(_ info: ContentInfo, transformed: Bool) -> CacheStatusField {
        guard let reader else { return CacheStatusField(hit: true, ttl: info.ttl) }
        let kept = !reader.resource.isTransient
        if let reason = reader.forwardReason {
            // Served stale because the origin failed: it sent nothing to store, and fwd-status
            // only when it answered (RFC 9211 §2.3-2.5).
            return CacheStatusField(forward: reason, forwardStatus: reader.forwardStatus, ttl: kept ? info.ttl : nil,
                                    stored: kept && !reader.servedStale, collapsed: reader.collapsed)
        }
        let total = info.totalLength ?? Int64.max
        let needed = transformed ? 0..<total : ResponsePlan(bodyRequest, info: info).body.clamped(to: 0..<total)
        if !needed.isEmpty, !reader.resource.available.covers(needed) {
            return CacheStatusField(forward: .partial, ttl: info.ttl, stored: kept)
        }
        return CacheStatusField(hit: true, ttl: info.ttl)
    }

    /// Whether the resource is an HLS playlist, decided once per version (a generic type by its first bytes).
    static func isPlaylist(_ resource: Resource, info: ContentInfo, path: String) -> Bool {
        decide(\.isPlaylist, of: resource) { HLS.isPlaylist(contentType: info.contentType, path: path, bodyPrefix: $0) }
    }

    /// Whether the resource is a DASH manifest, decided as `isPlaylist`.
    static func isManifest(_ resource: Resource, info: ContentInfo, path: String) -> Bool {
        decide(\.isManifest, of: resource) { DASH.isManifest(contentType: info.contentType, path: path, bodyPrefix: $0) }
    }

    /// A per-version fact from type, path and first bytes: kept once they were there (or it is yes).
    private static func decide(_ fact: WritableKeyPath<DerivedFacts, Bool?>, of resource: Resource,
                               _ judge: ([UInt8]) -> Bool) -> Bool {
        if let known = resource.derived[keyPath: fact] { return known }
        let prefix = cachedPrefix(of: resource)
        let verdict = judge(prefix ?? [])
        if prefix != nil || verdict { resource.derived[keyPath: fact] = verdict }
        return verdict
    }

    /// Enough for a playlist's header and an MPD's root element after an XML declaration.
    private static func cachedPrefix(of resource: Resource) -> [UInt8]? {
        if let sample = resource.derived.headSample { return sample }
        guard let total = resource.totalLength, total > 0 else { return nil }
        let count = Int(min(total, 512))
        guard resource.available.covers(0..<Int64(count)), let file = try? resource.dataFile() else { return nil }
        guard let prefix = file.read(0..<Int64(count)) else { return nil }
        resource.derived.headSample = prefix
        return prefix
    }

    private static func status(of head: [UInt8]) -> Int {
        guard head.count > 12 else { return 0 }
        return head[9..<12].reduce(0) { $0 * 10 + Int($1) - 48 }
    }

    private func closeReader() {
        source?.close()
        source = nil
    }

    /// The response is on the wire (or given up): the resource is no longer in use by it.
    func release() {
        released = true
        copy = nil
        closeReader()
    }
}
