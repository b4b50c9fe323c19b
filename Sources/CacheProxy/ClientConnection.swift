import CacheHTTP
import CacheIO
import CacheLoading
import CacheStorage
import Logging

/// One client connection: parses requests in order and writes one response
/// at a time. Kept alive by its socket until the socket closes; closing
/// releases the reader (and with it any download nobody else wants).
final class ClientConnection: SocketDelegate {
    private let socket: Socket
    private unowned let server: ProxyServer
    private var buffer: [UInt8] = []
    private var exchange: ProxyExchange?
    /// Set when the current exchange has queued everything: keep-alive or not.
    private var finishedKeepAlive: Bool?
    /// An admin request answering asynchronously (export/import).
    private var adminBusy = false
    private var timer: LoopTimer?
    /// Data files with sendfile ranges still queued on the socket.
    private var filesInFlight: [DataFile] = []
    private var closing = false
    private var peerDone = false

    init(socket: Socket, server: ProxyServer) {
        self.socket = socket
        self.server = server
        socket.delegate = self
        socket.startReading()
        timer = LoopTimer(on: server.loop, after: server.configuration.requestHeadTimeout) { [weak self] in
            self?.timedOut()
        }
    }

    // MARK: requests

    private func processBuffer() {
        while exchange == nil && !adminBusy && !closing {
            if buffer.isEmpty {
                if peerDone { finishConnection(); return }
                timer?.reset(milliseconds: server.configuration.keepAliveTimeout)
                return
            }
            let parsed = buffer.withUnsafeBytes { RequestHeadParser.parse($0) }
            switch parsed {
            case .failure(let error):
                server.logger.info("bad request: \(error)")
                reject(error.status, reason(of: error))
                return
            case .success(nil):
                if peerDone { finishConnection(); return }
                timer?.reset(milliseconds: server.configuration.requestHeadTimeout)
                return
            case .success(let (head, consumed)?):
                buffer.removeFirst(consumed)
                handle(head)
            }
        }
    }

    private func reason(of error: HeadParseError) -> String {
        switch error {
        case .badRequest(let why): return "Bad request: \(why)\n"
        case .uriTooLong: return "Request line too long\n"
        case .headersTooLarge: return "Request header fields too large\n"
        case .versionNotSupported: return "HTTP version not supported\n"
        }
    }

    private func handle(_ head: HTTPRequestHead) {
        timer?.reset(milliseconds: server.configuration.keepAliveTimeout)
        let isHead = head.method == "HEAD"
        if head.target.hasPrefix("/admin/") && (head.method == "GET" || head.method == "POST") {
            return handleAdmin(head)
        }
        guard head.method == "GET" || isHead else {
            // The request may carry a body we will not read: answer and close.
            return reject(405, "Method not allowed\n", extra: [("Allow", "GET, HEAD")])
        }
        if head.headers.contains("transfer-encoding") || (head.headers["content-length"].map { $0 != "0" } ?? false) {
            return reject(400, "Bad request: GET and HEAD take no body\n")
        }
        // The route depends on the path only (before any query), scanned in place.
        let target = head.target.utf8
        let path = target[..<(target.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)]
        if path.elementsEqual("/ping".utf8) {
            return respondSimple(200, "pong\n", head: head)
        }
        guard path.starts(with: "/p/".utf8) else {
            return respondSimple(404, "Not found: proxy URLs look like /p/<encoded origin>/<name>\n", head: head)
        }
        guard let origin = server.targets.entry(for: head.target) else {
            return respondSimple(400, "Bad request: the proxy URL does not carry an http or https URL\n", head: head)
        }
        let exchange = ProxyExchange(connection: self, request: head, url: origin.url, urlString: origin.urlString,
                                     server: server)
        self.exchange = exchange
        exchange.start()
    }

    private func handleAdmin(_ head: HTTPRequestHead) {
        if head.headers.contains("transfer-encoding") || (head.headers["content-length"].map { $0 != "0" } ?? false) {
            return reject(400, "Bad request: admin requests take no body\n")
        }
        adminBusy = true
        AdminRoutes.handle(head, server: server) { [weak self] status, json in
            guard let self, !self.closing else { return }
            let bytes = self.server.heads.simple(status, json + "\n", keepAlive: head.keepAlive,
                                                 contentType: "application/json")
            self.socket.write(bytes)
            self.adminBusy = false
            if head.keepAlive { self.processBuffer() } else { self.close(afterDrain: true) }
        }
    }

    private func respondSimple(_ status: Int, _ body: String, head: HTTPRequestHead) {
        let bytes = server.heads.simple(status, body, keepAlive: head.keepAlive, includeBody: head.method != "HEAD")
        socket.write(bytes)
        if !head.keepAlive { close(afterDrain: true) }
    }

    /// Answers a request we cannot serve and closes the connection.
    private func reject(_ status: Int, _ body: String, extra: [(String, String)] = []) {
        socket.write(server.heads.simple(status, body, keepAlive: false, extra: extra))
        close(afterDrain: true)
    }

    // MARK: used by the exchange

    var loop: EventLoop { server.loop }

    func write(_ bytes: [UInt8]) { socket.write(bytes) }

    func write(_ bytes: UnsafeRawBufferPointer) { socket.write(bytes) }

    var queuedBytes: Int { socket.queuedBytes }

    /// A response head and the first file range of its body, in one packet when small.
    func write(head: [UInt8], thenSendFile file: DataFile, _ range: Range<Int64>) {
        if filesInFlight.last !== file { filesInFlight.append(file) }
        socket.send(head: head, fileDescriptor: file.fd, offset: range.lowerBound, count: Int(range.count))
    }

    func sendFile(_ file: DataFile, _ range: Range<Int64>) {
        if filesInFlight.last !== file { filesInFlight.append(file) }
        socket.sendFile(file.fd, offset: range.lowerBound, count: Int(range.count))
    }

    /// The exchange queued its whole response. It stays current (its resource
    /// in use, the next request waiting) until the socket has sent it.
    func exchangeFinished(keepAlive: Bool) {
        finishedKeepAlive = keepAlive
        if socket.queuedBytes == 0 { completeExchange() }
    }

    private func completeExchange() {
        guard let keepAlive = finishedKeepAlive else { return }
        finishedKeepAlive = nil
        exchange?.release()
        exchange = nil
        if !keepAlive {
            close(afterDrain: true)
            return
        }
        processBuffer()
    }

    /// Ends a response that cannot be completed: the bytes already queued
    /// (all of them right) still go out, then the connection closes, so the
    /// client gets every byte the proxy had and sees a short body.
    func abort() {
        exchange?.release()
        exchange = nil
        close(afterDrain: true)
    }

    private func close(afterDrain: Bool) {
        guard !closing else { return }
        closing = true
        timer?.cancel()
        timer = nil
        if afterDrain { socket.closeAfterDrain() } else { socket.close() }
    }

    private func finishConnection() {
        close(afterDrain: true)
    }

    private func timedOut() {
        // A response in progress is never cut by the idle timer.
        if exchange != nil || socket.queuedBytes > 0 {
            timer?.reset(milliseconds: server.configuration.keepAliveTimeout)
            return
        }
        close(afterDrain: false)
    }

    // MARK: SocketDelegate

    func socketDidRead(_ socket: Socket, _ bytes: UnsafeRawBufferPointer) {
        guard !closing else { return }
        if buffer.isEmpty && exchange == nil,
           case .success(let (head, consumed)?) = RequestHeadParser.parse(bytes), consumed == bytes.count {
            // The usual case: exactly one whole request in one read. Parse it
            // where it lies instead of copying it into the buffer and out again;
            // anything else (partial, pipelined, malformed) takes the buffer path.
            handle(head)
            processBuffer()
            return
        }
        buffer.append(contentsOf: bytes)
        if exchange == nil {
            processBuffer()
        } else if buffer.count > server.headLimits.maxHeaderBytes * 4 {
            // A client pipelining far ahead of us: stop reading until we catch up.
            socket.stopReading()
        }
    }

    func socketDidReachEOF(_ socket: Socket) {
        peerDone = true
        if exchange == nil { processBuffer() }
    }

    func socketDidDrain(_ socket: Socket) {
        filesInFlight.removeAll()
        exchange?.socketDrained()
        if finishedKeepAlive != nil { completeExchange() }
        if !closing && exchange == nil { socket.startReading() }
    }

    func socketDidClose(_ socket: Socket, error: IOError?) {
        closing = true
        timer?.cancel()
        timer = nil
        exchange?.cancel()
        exchange = nil
        filesInFlight.removeAll()
        server.connectionClosed(self)
    }
}
