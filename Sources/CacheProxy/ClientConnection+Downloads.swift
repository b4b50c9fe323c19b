import CacheHTTP
import CacheIO
import CacheLoading

// The downloads' event stream (Server-Sent Events), the `/ui/` page and `/`'s pointer to it.

extension ClientConnection {
    /// `GET /admin/downloads/events` (token checked): every download's
    /// record now, then one event at each change, until the client goes.
    /// The response has no length: the connection closes after it. A client
    /// that stops reading is cut off once `maxQueuedEventBytes` wait for it
    /// (it reconnects and gets every record again): events never pile up.
    func streamDownloadEvents(_ head: HTTPRequestHead) {
        record?.status = 200
        var headers = HTTPHeaders()
        headers.add("Server", "HTTPCache")
        headers.add("Content-Type", "text/event-stream")
        headers.add("Cache-Control", "no-store")
        headers.add("Connection", "close")
        var bytes = HTTPResponseHead(version: .http11, status: 200, reason: "OK", headers: headers).serialized()
        let downloads = server.engine.downloads
        for record in downloads.records { bytes += AdminDownloadRoutes.event(record) }
        socket.write(bytes)
        var token = 0
        var closing = 0
        var heartbeat: LoopTimer?
        let stop = { [weak self] in
            downloads.unsubscribe(token)
            downloads.forgetOnClose(closing)
            heartbeat?.cancel()
            heartbeat = nil
            self?.socket.close()
        }
        token = downloads.subscribe { [weak self] record in
            guard let self, !self.socket.isClosed, self.socket.queuedBytes < Self.maxQueuedEventBytes else { return stop() }
            self.socket.write(AdminDownloadRoutes.event(record))
        }
        closing = downloads.onClose(stop)
        // A comment line now and then: a client gone quietly is noticed, and proxies keep the stream open.
        heartbeat = LoopTimer(on: server.loop, after: 10_000, repeat: 10_000) { [weak self] in
            guard let self, !self.socket.isClosed, self.socket.queuedBytes < Self.maxQueuedEventBytes else { return stop() }
            self.socket.write(Array(": keep-alive\n\n".utf8))
        }
    }

    /// Event bytes a stream's client may leave unread before it is cut off.
    static let maxQueuedEventBytes = 1 << 20

    /// `GET /ui/`: the downloads and cache page, for loopback clients of a
    /// loopback proxy only (the admin routes' policy; a LAN-mode proxy never
    /// serves it). It carries the admin token for its own requests: only a
    /// same-origin page can read it (no CORS headers are ever sent), and the
    /// Host check keeps rebinding pages out.
    func handlePage(_ head: HTTPRequestHead) {
        guard server.access.mode == .loopback else {
            return respondSimple(404, "Not found\n", keepAlive: head.keepAlive, head: head)
        }
        respondSimple(200, DownloadsPage.html(token: server.adminToken), keepAlive: head.keepAlive, head: head,
                      extra: [("Cache-Control", "no-store"),
                              ("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:"),
                              ("X-Frame-Options", "DENY")],
                      contentType: "text/html; charset=utf-8")
    }

    /// `GET /` of a loopback proxy (`/_httpcache/` in reverse mode, whose
    /// `/` is the origin's): a redirect to the page, with a link for clients
    /// that do not follow it. It carries nothing of the page's: no token.
    func respondToRoot(_ head: HTTPRequestHead, prefixed: Bool) {
        let page = (prefixed ? OwnRoutes.prefix : "") + "/ui/"
        respondSimple(302, DownloadsPage.rootHTML(pagePath: page), keepAlive: head.keepAlive, head: head,
                      extra: [("Location", page), ("Cache-Control", "no-store"),
                              ("Content-Security-Policy", "default-src 'none'"), ("X-Frame-Options", "DENY")],
                      contentType: "text/html; charset=utf-8")
    }
}
