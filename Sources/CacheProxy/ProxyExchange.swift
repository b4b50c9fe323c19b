import CacheHTTP
import CacheLoading
import CacheStorage
import CacheUpstream
import Glibc
import Logging

/// Drives one proxied request: a `ResourceReader` is the body's source, an
/// `ExchangeStateMachine` decides the response, and this class performs its
/// actions on the client connection (the writer).
final class ProxyExchange: ResourceReaderDelegate {
    private unowned let connection: ClientConnection
    private unowned let server: ProxyServer
    private let request: HTTPRequestHead
    private let url: OriginURL
    private let urlString: String
    private let bodyRequest: BodyRequest
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (a share of every hit).
    @exclusivity(unchecked) private var machine: ExchangeStateMachine
    private var reader: ResourceReader?
    /// Instead of a reader: the owner loop's copy of a plain hit (another
    /// loop answering by itself, see PlainHit) and the body range still to send.
    private var copy: (hit: PlainHit, body: Range<Int64>)?
    private var transformed = false
    /// Where a transform's input is read (allocated on first use).
    private var readBuffer: UnsafeMutableRawBufferPointer?
    private var released = false
    /// For the access log and metrics: the status sent, body bytes already
    /// cached when the response was planned, and body bytes queued.
    private var status = 0
    private var cachedAtStart: Int64 = 0
    private var plannedBytes: Int64 = 0
    private var bodyBytes: Int64 = 0
    private var headWasKnown = false

    private let storeKey: String
    /// Forward or reverse proxy mode: every end-to-end field goes to the
    /// origin and redirects are relayed (RFC 9110 §7.6).
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
        machine = ExchangeStateMachine(request: bodyRequest, transform: nil)
    }

    func start() {
        let fields = transparent
            ? OriginFields(UpstreamHeaders.transparent(from: request.headers))
            : OriginFields(forwarding: request.headers, extra: server.engine.configuration.upstream.forwardedHeaders)
        let reader = server.engine.reader(url: url, spec: bodyRequest.range, fields: fields, storeKey: storeKey,
                                          request: request.headers)
        reader.followsRedirects = !transparent
        self.reader = reader
        headWasKnown = reader.resource.totalLength != nil
        reader.delegate = self
        reader.start()
    }

    /// Answers from a copy of a plain hit: the stored response as is, no
    /// reader, no transform.
    func start(copy hit: PlainHit) {
        headWasKnown = true
        copy = (hit, 0..<0)
        perform(machine.contentReady(hit.info, date: server.heads.date(), middle: hit.middle))
        pump()
    }

    /// What this response was, for the record.
    func fill(_ record: inout ResponseRecord) {
        if status != 0 { record.status = status }
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

    // MARK: ResourceReaderDelegate

    func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>) {
        switch result {
        case .failure(let error):
            perform(machine.contentFailed(error))
        case .success(let info):
            switch transform(for: reader, info: info) {
            case .failure(let error):
                perform(machine.contentFailed(.decryption(error.description)))
            case .success(let transform):
                if let transform {
                    transformed = true
                    machine = ExchangeStateMachine(request: bodyRequest, transform: transform)
                }
                perform(machine.contentReady(info, date: server.heads.date()))
            }
        }
        pump()
    }

    /// The response's body transform, if any. Nothing could transform a
    /// response that is neither a playlist nor decrypted when the host added
    /// no transforms: that case skips building the context (the zero-copy path).
    private func transform(for reader: ResourceReader, info: ContentInfo) -> Result<BodyTransform?, DecryptionSetupError> {
        let isPlaylist = Self.isPlaylist(reader.resource, info: info, path: url.pathAndQuery)
        let engine = server.engine
        if !isPlaylist && engine.decryption == nil && engine.configuration.transformsOnlyPlaylists {
            return .success(nil)
        }
        var context = TransformContext(url: urlString, path: url.pathAndQuery, info: info,
                                       clientHost: request.headers["host"] ?? server.address)
        context.isPlaylist = isPlaylist
        if server.access.mode == .lan {
            // LAN clients fetch signed URLs only: sign the playlist's URIs the policy allows, and only those.
            let access = server.access
            let playlist = url
            context.proxyPath = { access.signedPath(forOrigin: $0, inPlaylist: playlist) }
        }
        if transparent {
            // Absolute-form targets are forward-proxy requests; origin-form ones reverse-proxy ones.
            context.requestMode = request.target.hasPrefix("/") ? .reverse(originHost: url.hostHeader) : .forward
        }
        if isPlaylist {  // only a playlist needs where it really came from
            context.finalURL = engine.client.redirectTarget(for: url)?.string
            context.bodyPrefix = reader.resource.derived.headSample
        }
        return engine.transform(for: context)
    }

    func readerCanContinue(_ reader: ResourceReader) {
        pump()
    }

    /// Bytes passed through (the disk is full). Past a few megabytes queued,
    /// the download waits for the client (`socketDrained`).
    func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !released else { return true }
        perform(machine.bytes(bytes, at: reader.offset - Int64(bytes.count)))
        return connection.queuedBytes < Self.passThroughQueueLimit
    }

    static let passThroughQueueLimit = 4 << 20

    /// Everything queued was sent.
    func socketDrained() {
        reader?.resumeFollowing()
        if heldForClient {
            heldForClient = false
            pump()
        }
    }

    // MARK: the body

    /// The body waits for the client (see `pump`).
    private var heldForClient = false

    private func pump() {
        while !released {
            switch machine.state {
            case .awaitingBody, .streaming, .collecting: break
            case .awaitingContent, .done: return
            }
            // A body of unknown length is still being downloaded: taking more of it
            // than the client accepts would let the download run ahead unpaced.
            if let reader, reader.resource.totalLength == nil,
               connection.queuedBytes >= Self.passThroughQueueLimit {
                heldForClient = true
                return
            }
            switch nextChunk() {
            case .file(let file, let range):
                if transformed {
                    readThrough(file, range)
                } else {
                    perform(machine.filePiece(file, range))
                }
            case .pending:
                return
            case .finished:
                perform(machine.bodyFinished(date: server.heads.date()))
            case .failed(let error):
                perform(machine.failed(error))
            }
        }
    }

    /// The next piece of the body: from the reader, or the whole range from a copy.
    private func nextChunk() -> ReadChunk {
        if let reader { return reader.next() }
        guard let (hit, body) = copy else { return .finished }
        guard !body.isEmpty else { return .finished }
        copy = (hit, body.upperBound..<body.upperBound)
        return .file(hit.file, body)
    }

    /// A transform needs the bytes themselves: read them from the data file.
    private func readThrough(_ file: DataFile, _ range: Range<Int64>) {
        // One buffer per response: a download in progress arrives in many small pieces.
        let buffer = readBuffer ?? {
            let made = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            readBuffer = made
            return made
        }()
        var offset = range.lowerBound
        while offset < range.upperBound, !released {
            let want = min(buffer.count, Int(range.upperBound - offset))
            let n = pread(file.fd, buffer.baseAddress, want, off_t(offset))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                perform(machine.failed(.storage("read of the data file failed at \(offset)")))
                return
            }
            perform(machine.bytes(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), at: offset))
            offset += Int64(n)
        }
    }

    private func perform(_ actions: [ExchangeStateMachine.Action]) {
        for action in actions {
            switch action {
            case .deliver(let range):
                if let (hit, _) = copy {
                    // A copy is of a complete resource: everything planned is cached.
                    let planned = range.clamped(to: 0..<max(0, hit.info.totalLength ?? 0))
                    copy = (hit, planned)
                    plannedBytes = Int64(planned.count)
                    cachedAtStart = plannedBytes
                } else if let reader {
                    reader.deliver(range)
                    let total = reader.resource.totalLength ?? range.upperBound
                    let planned = range.clamped(to: 0..<max(0, total))
                    plannedBytes = Int64(planned.count)
                    cachedAtStart = reader.resource.available.intersection(planned).reduce(0) { $0 + Int64($1.count) }
                }
            case .write(let bytes):
                if status == 0 { status = Self.status(of: bytes) } else { bodyBytes += Int64(bytes.count) }
                connection.write(bytes)
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
                connection.write(ErrorResponse.bytes(for: error, url: urlString, keepAlive: machine.keepAlive,
                                                     includeBody: !bodyRequest.isHead, date: server.heads.date(),
                                                     logger: server.logger,
                                                     via: "1.1 " + server.viaPseudonym))
            case .finish(let keepAlive):
                connection.exchangeFinished(keepAlive: keepAlive)
            case .abort(let error):
                // The head is out: all we can do is end the connection early,
                // so the client sees a short body, never a wrong byte.
                server.logger.warning("response cut short", metadata: [
                    "url": "\(urlString)", "offset": "\(reader?.offset ?? -1)", "error": "\(error)"])
                closeReader()
                connection.abort()
            }
        }
    }

    /// The first bytes of the body when they are cached (for transforms that sniff).
    /// Whether the resource is an HLS playlist, decided once per version
    /// (a generic type is decided by its first bytes, once they are cached).
    static func isPlaylist(_ resource: Resource, info: ContentInfo, path: String) -> Bool {
        if let known = resource.derived.isPlaylist { return known }
        let prefix = cachedPrefix(of: resource)
        let verdict = HLS.isPlaylist(contentType: info.contentType, path: path, bodyPrefix: prefix ?? [])
        if prefix != nil || verdict { resource.derived.isPlaylist = verdict }
        return verdict
    }

    private static func cachedPrefix(of resource: Resource) -> [UInt8]? {
        if let sample = resource.derived.headSample { return sample }
        guard let total = resource.totalLength, total > 0 else { return nil }
        let count = Int(min(total, 16))
        guard resource.available.covers(0..<Int64(count)), let file = try? resource.dataFile() else { return nil }
        var prefix = [UInt8](repeating: 0, count: count)
        let n = prefix.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, count, 0) }
        guard n == count else { return nil }
        resource.derived.headSample = prefix
        return prefix
    }

    /// The status code of a head written by this exchange ("HTTP/1.1 206 …").
    private static func status(of head: [UInt8]) -> Int {
        guard head.count > 12 else { return 0 }
        return head[9..<12].reduce(0) { $0 * 10 + Int($1) - 48 }
    }

    private func closeReader() {
        reader?.close()
        reader = nil
    }

    deinit { readBuffer?.deallocate() }

    /// The response is on the wire (or given up): the resource is no longer in use by it.
    func release() {
        released = true
        copy = nil
        closeReader()
    }
}
