import CacheHTTP
import CacheLoading
import CacheUpstream

/// What the client connection needs of the response in flight, whichever kind it is.
protocol ActiveExchange: AnyObject {
    func socketDrained()
    func fill(_ record: inout ResponseRecord)
    /// The response is on the wire (or given up): drop what it holds.
    func release()
    /// The client finished sending (EOF): most go on (a half-closed client still reads); endless ones end.
    func clientFinished()
}

extension ActiveExchange {
    func clientFinished() {}
}

extension ProxyExchange: ActiveExchange {}

/// A request passed through uncached (RFC 9110 §7.6) with its body, the origin's response relayed as it
/// comes; a successful unsafe method invalidates the URL's entries (RFC 9111 §4.4). Loop thread only.
final class PassthroughExchange: ActiveExchange, UpstreamResponseDelegate {
    private unowned let connection: ClientConnection
    private unowned let server: ProxyServer
    private let request: HTTPRequestHead
    private let url: OriginURL
    private let body: [UInt8]
    private var task: UpstreamTask?
    private var status = 0
    private var chunked = false
    private var sendsBody = true
    private var keepAlive: Bool
    private var released = false
    private var paused = false
    private var bodyBytes: UInt64 = 0

    /// Past this many bytes queued for a slow client, the origin waits.
    static let queueLimit = 4 << 20

    init(connection: ClientConnection, request: HTTPRequestHead, url: OriginURL, body: [UInt8], server: ProxyServer) {
        self.connection = connection
        self.request = request
        self.url = url
        self.body = body
        self.server = server
        keepAlive = request.keepAlive
    }

    /// Besides hop-by-hop fields: Host (set per hop) and the body's framing (the proxy sends its own).
    private static let dropped = ["host", "content-length", "expect"]

    func start() {
        var headers = Intermediary.removingHopByHop(request.headers)
        for name in Self.dropped { headers.remove(name) }
        headers = Intermediary.appendingVia(headers, receivedWith: request.version,
                                            pseudonym: server.loader.policy.viaPseudonym)
        task = server.engine.client.send(request.method, url, headers: headers, body: body, delegate: self)
    }

    // MARK: UpstreamResponseDelegate

    /// Relayed to HTTP/1.1 clients (RFC 9110 §15.2), e.g. 103; never 101, which would switch protocols.
    func upstreamDidReceiveInterim(_ head: HTTPResponseHead) {
        guard !released, status == 0, request.version != .http10, head.status != 101 else { return }
        connection.socket.write(Intermediary.interimHead(head, pseudonym: server.loader.policy.viaPseudonym))
    }

    /// A forward for its method, or (a HEAD of something not stored) a miss of the URI; never stored.
    private var cacheStatus: CacheStatusField {
        CacheStatusField(forward: Invalidation.isSafe(request.method) ? .uriMiss : .method,
                         forwardStatus: status == 0 ? nil : status)
    }

    func upstreamDidReceiveHead(_ head: HTTPResponseHead) {
        guard !released else { return }
        status = head.status
        let bodiless = request.method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status)
        var headers = Intermediary.removingHopByHop(head.headers)
        headers.remove("Content-Length")
        let length = head.headers["Content-Length"].flatMap { Int64($0) }
        if bodiless {
            sendsBody = false
            // A HEAD or 304 may state the length of the body it does not carry; a 204 may not.
            if let length, status != 204 { headers.add("Content-Length", String(length)) }
        } else if let length {
            headers.add("Content-Length", String(length))
        } else if request.version == .http10 {
            keepAlive = false  // the body ends when the connection does
        } else {
            chunked = true
            headers.add("Transfer-Encoding", "chunked")
        }
        headers = Intermediary.appendingVia(headers, receivedWith: head.version,
                                            pseudonym: server.loader.policy.viaPseudonym)
        headers.add("Cache-Status", cacheStatus.value(name: server.cacheStatusName))
        headers.add("Connection", keepAlive ? "keep-alive" : "close")
        connection.socket.write(HTTPResponseHead(version: .http11, status: status, reason: head.reason, headers: headers)
            .serialized())
        let invalidated = Invalidation.targets(method: request.method, status: status, target: url,
                                               responseHeaders: head.headers)
        if !invalidated.isEmpty { server.loader.invalidate(urls: Set(invalidated.map(\.string))) }
    }

    func upstreamDidReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        guard !released, sendsBody, !bytes.isEmpty else { return }
        bodyBytes += UInt64(bytes.count)
        if chunked { connection.socket.write(Array((String(bytes.count, radix: 16) + "\r\n").utf8)) }
        connection.socket.write(bytes)
        if chunked { connection.socket.write(Array("\r\n".utf8)) }
        if connection.socket.queuedBytes > Self.queueLimit && !paused {
            paused = true
            task?.pause()
        }
    }

    func upstreamDidFinish(_ error: UpstreamError?) {
        task = nil
        guard !released else { return }
        if let error {
            guard status == 0 else {
                // The head is out: end the connection early, the client sees a short body.
                server.logger.warning("pass-through response cut short", metadata: [
                    "url": "\(url.string)", "method": "\(request.method)", "error": "\(error)"])
                return connection.abort()
            }
            // Nothing reached the client: a clean 502 (504 on a timeout).
            let failure = LoadError.upstream(error)
            status = ErrorResponse.status(for: failure)
            connection.socket.write(ErrorResponse.bytes(for: failure, url: url.string, keepAlive: keepAlive,
                                                 includeBody: request.method != "HEAD", date: server.heads.date(),
                                                 logger: server.logger,
                                                 via: "1.1 " + server.loader.policy.viaPseudonym,
                                                 cacheStatus: cacheStatus.value(name: server.cacheStatusName)))
            return connection.exchangeFinished(keepAlive: keepAlive)
        }
        if chunked { connection.socket.write(Array("0\r\n\r\n".utf8)) }
        connection.exchangeFinished(keepAlive: keepAlive)
    }

    // MARK: ActiveExchange

    func socketDrained() {
        guard paused else { return }
        paused = false
        task?.resume()
    }

    func fill(_ record: inout ResponseRecord) {
        if status != 0 { record.status = status }
        record.cache = .bypass
        record.cacheStatus = cacheStatus
        record.bytesFromOrigin = bodyBytes
    }

    func release() {
        released = true
        task?.cancel()
        task = nil
    }
}
