import CacheHTTP
import CacheLoading
import CacheStorage
import CacheUpstream

/// One proxied request: asks the loader for the resource, answers with
/// 200/206/416 (or the origin's error) and streams the body as it lands.
final class ProxyExchange: ResourceReaderDelegate {
    private unowned let connection: ClientConnection
    private unowned let server: ProxyServer
    private let request: HTTPRequestHead
    private let url: OriginURL
    private let urlString: String
    /// The Range to plan with: only a single range is honoured (several are
    /// answered with the whole body, as RFC 9110 allows).
    private let rangeSpec: ByteRangeSpec?
    private var reader: ResourceReader?
    private var keepAlive: Bool
    private var headSent = false
    /// The success head, held back until the first body byte is in the file:
    /// if the origin fails before that, the client still gets a clean 502/504.
    private var pendingHead: [UInt8]?
    /// The body goes out chunked: its length is unknown and the client speaks HTTP/1.1,
    /// so a cut-short body is visible to it as a missing last chunk.
    private var chunked = false
    private var done = false

    init(connection: ClientConnection, request: HTTPRequestHead, url: OriginURL, urlString: String, server: ProxyServer) {
        self.connection = connection
        self.request = request
        self.url = url
        self.urlString = urlString
        self.server = server
        self.keepAlive = request.keepAlive
        if let value = request.headers["range"], let specs = RangeHeaderParser.parse(value), specs.count == 1 {
            rangeSpec = specs[0]
        } else {
            rangeSpec = nil
        }
    }

    private var isHead: Bool { request.method == "HEAD" }

    func start() {
        let key = server.configuration.cacheKey(urlString)
        let forwarded = UpstreamHeaders.forwarded(from: request.headers,
                                                  extra: server.configuration.upstream.forwardedHeaders)
        let reader = server.loader.reader(url: url, cacheKey: key, spec: rangeSpec, headers: forwarded)
        self.reader = reader
        reader.delegate = self
        reader.start()
    }

    /// The client went away: release the reader.
    func cancel() { release() }

    // MARK: ResourceReaderDelegate

    func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>) {
        guard !done, !headSent, pendingHead == nil else { return }
        switch result {
        case .failure(let error): sendError(error)
        case .success(let info): sendHead(info, reader)
        }
    }

    func readerCanContinue(_ reader: ResourceReader) {
        pump()
    }

    /// Bytes passed through (the disk is full): copied to the socket. Past a
    /// few megabytes queued, the download waits for the client (`socketDrained`).
    func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !done else { return true }
        flushHead()
        if chunked { connection.write(Array((String(bytes.count, radix: 16) + "\r\n").utf8)) }
        connection.write(bytes)
        if chunked { connection.write(Array("\r\n".utf8)) }
        return connection.queuedBytes < Self.passThroughQueueLimit
    }

    static let passThroughQueueLimit = 4 << 20

    /// Everything queued was sent.
    func socketDrained() {
        reader?.resumeFollowing()
    }

    // MARK: head

    private func sendHead(_ info: ContentInfo, _ reader: ResourceReader) {
        var status = 200
        var body: Range<Int64>
        if let total = info.totalLength {
            body = 0..<total
            if let spec = rangeSpec, honoursRange(info) {
                if let range = spec.resolve(length: total) {
                    status = 206
                    body = range
                } else {
                    status = 416
                    body = 0..<0
                }
            }
        } else {
            // Unknown length (the origin is still streaming it): chunked for
            // HTTP/1.1 clients, else the body ends with the connection.
            body = 0..<Int64.max
            if request.version == .http10 {
                keepAlive = false
            } else {
                chunked = true
            }
        }
        // Written straight into bytes (HeadBuilder): one head per response makes this a hot path.
        var head = HeadBuilder(status: status)
        head.add("Server", "HTTPCache")
        head.add("Date", server.heads.date())
        if status != 416 { head.add("Content-Type", info.contentType ?? "application/octet-stream") }
        head.add("Accept-Ranges", "bytes")
        if let etag = info.etag { head.add("ETag", etag) }
        if let lastModified = info.lastModified { head.add("Last-Modified", lastModified) }
        if let total = info.totalLength {
            if status == 206 { head.addContentRange(body, total: total) }
            if status == 416 { head.addUnsatisfiedRange(total: total) }
            head.add("Content-Length", decimal: Int64(body.count))
        }
        if chunked { head.add("Transfer-Encoding", "chunked") }
        head.add("Connection", keepAlive ? "keep-alive" : "close")
        if status == 416 { head.add("Content-Type", "text/plain") }
        let bytes = head.finish()
        if isHead || status == 416 || body.isEmpty {
            connection.write(bytes)
            headSent = true
            return finish()
        }
        pendingHead = bytes
        reader.deliver(body)
        pump()
    }

    private func honoursRange(_ info: ContentInfo) -> Bool {
        guard let ifRange = request.headers["if-range"] else { return true }
        return IfRange.allowsRange(ifRange, etag: info.etag, lastModified: info.lastModified)
    }

    private func flushHead() {
        if let head = pendingHead {
            connection.write(head)
            pendingHead = nil
            headSent = true
        }
    }

    private func sendError(_ error: LoadError) {
        let status: Int
        var body: [UInt8]
        var contentType = "text/plain; charset=utf-8"
        switch error {
        case .originStatus(let originStatus, let headers, let originBody):
            status = originStatus
            body = originBody
            contentType = headers["content-type"] ?? contentType
        case .upstream(let upstream):
            status = upstream.isTimeout ? 504 : 502
            body = Array("Origin failed: \(upstream)\n".utf8)
            server.logger.warning("\(status) for \(url.string): \(upstream)")
        case .changed(let what):
            status = 502
            body = Array("Origin resource changed (\(what)); retry\n".utf8)
        case .mismatch(let reason):
            status = 502
            body = Array("Origin response rejected: \(reason)\n".utf8)
            server.logger.warning("502 for \(url.string): \(reason)")
        case .storage(let reason):
            status = 502
            body = Array("Cache storage failed: \(reason)\n".utf8)
            server.logger.error("storage failure for \(url.string): \(reason)")
        }
        var headers = HTTPHeaders()
        headers.add("Server", "HTTPCache")
        headers.add("Date", server.heads.date())
        headers.add("Content-Type", contentType)
        headers.add("Content-Length", String(body.count))
        headers.add("Connection", keepAlive ? "keep-alive" : "close")
        var bytes = HTTPResponseHead(version: .http11, status: status, reason: HTTPStatus.reason(status), headers: headers).serialized()
        if !isHead { bytes.append(contentsOf: body) }
        connection.write(bytes)
        headSent = true
        finish()
    }

    // MARK: body

    private func pump() {
        guard !done, let reader else { return }
        while true {
            switch reader.next() {
            case .file(let file, let range):
                if chunked {
                    flushHead()
                    connection.write(Array((String(range.count, radix: 16) + "\r\n").utf8))
                    connection.sendFile(file, range)
                    connection.write(Array("\r\n".utf8))
                } else if let head = pendingHead {
                    pendingHead = nil
                    headSent = true
                    connection.write(head: head, thenSendFile: file, range)
                } else {
                    connection.sendFile(file, range)
                }
            case .pending:
                return
            case .finished:
                flushHead()
                if chunked { connection.write(Array("0\r\n\r\n".utf8)) }
                return finish()
            case .failed(let error) where pendingHead != nil:
                pendingHead = nil
                reader.close()
                self.reader = nil
                sendError(error)
                return
            case .failed(let error):
                // The head is out: all we can do is end the connection early,
                // so the client sees a short body, never a wrong byte.
                server.logger.warning("response for \(url.string) cut at \(reader.offset): \(error)")
                done = true
                reader.close()
                self.reader = nil
                connection.abort()
                return
            }
        }
    }

    /// Everything is queued; the connection calls `release()` once it is sent.
    private func finish() {
        guard !done else { return }
        done = true
        connection.exchangeFinished(keepAlive: keepAlive)
    }

    /// The response is on the wire: the resource is no longer in use by it.
    func release() {
        done = true
        reader?.close()
        reader = nil
    }
}
