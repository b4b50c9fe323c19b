import CacheHTTP
import CacheIO
import CacheLoading

/// `GET /admin/downloads/events` (token checked): every record now, then a Server-Sent Event per change until
/// the client or the cache goes (no length: the connection closes after it). Loop thread only.
final class DownloadEventStream: ActiveExchange {
    /// Unread event bytes that cut a client off (it reconnects and gets every record again).
    static let maxQueuedBytes = 1 << 20
    /// A comment line this often: a client gone quietly is noticed; proxies in between keep the stream.
    static let heartbeatMilliseconds: UInt64 = 10_000

    private unowned let connection: ClientConnection
    private let downloads: DownloadManager
    private var listening: (records: Int, close: Int)?
    private var heartbeat: LoopTimer?

    init(connection: ClientConnection, downloads: DownloadManager) {
        self.connection = connection
        self.downloads = downloads
    }

    func start(loop: EventLoop) {
        var headers = HTTPHeaders()
        headers.add("Server", "HTTPCache")
        headers.add("Content-Type", "text/event-stream")
        headers.add("Cache-Control", "no-store")
        headers.add("Connection", "close")
        var bytes = HTTPResponseHead(version: .http11, status: 200, reason: "OK", headers: headers).serialized()
        for record in downloads.records { bytes += Self.event(record) }
        connection.socket.write(bytes)
        let records = downloads.subscribe { [weak self] record in self?.send(Self.event(record)) }
        listening = (records, downloads.onClose { [weak self] in self?.cutOff() })
        guard listening != nil else { return }  // the cache closed during onClose: already cut off
        heartbeat = LoopTimer(on: loop, after: Self.heartbeatMilliseconds, repeat: Self.heartbeatMilliseconds) { [weak self] in
            self?.send(Array(": keep-alive\n\n".utf8))
        }
    }

    /// One Server-Sent Event carrying a record.
    static func event(_ record: DownloadRecord) -> [UInt8] {
        Array(("event: download\ndata: " + JSONText.encode(record) + "\n\n").utf8)
    }

    private func send(_ bytes: [UInt8]) {
        guard !connection.socket.isClosed, connection.socket.queuedBytes < Self.maxQueuedBytes else { return cutOff() }
        connection.socket.write(bytes)
    }

    /// The socket closes, and with it the response (the connection then releases this exchange).
    private func cutOff() {
        stopListening()
        connection.socket.close()
    }

    private func stopListening() {
        if let listening {
            downloads.unsubscribe(listening.records)
            downloads.forgetOnClose(listening.close)
        }
        listening = nil
        heartbeat?.cancel()
        heartbeat = nil
    }

    // MARK: ActiveExchange

    func socketDrained() {}
    func fill(_ record: inout ResponseRecord) { record.status = 200 }
    func release() { stopListening() }

    /// A stream's client never half-closes to go on reading (EventSource does not): its EOF means it
    /// left, and the stream ends now rather than at the next heartbeat's failed write.
    func clientFinished() { cutOff() }
}
