import CacheHTTP

// The downloads' event stream (Server-Sent Events), the `/ui/` page and `/`'s pointer to it.

extension ClientConnection {
    /// `GET /admin/downloads/events` (token checked): the stream is the response in flight.
    func streamDownloadEvents(_ head: HTTPRequestHead) {
        let stream = DownloadEventStream(connection: self, downloads: server.engine.downloads)
        exchange = stream
        stream.start(loop: server.loop)
    }

    /// `GET /ui/`, loopback clients of a loopback proxy only: it carries the admin token, which only a
    /// same-origin page can read (no CORS headers), and the Host check keeps rebinding pages out.
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

    /// `GET /`: a redirect to the page (with a link for clients that do not follow it), and no token.
    func respondToRoot(_ head: HTTPRequestHead, prefixed: Bool) {
        let page = (prefixed ? OwnRoutes.prefix : "") + "/ui/"
        respondSimple(302, DownloadsPage.rootHTML(pagePath: page), keepAlive: head.keepAlive, head: head,
                      extra: [("Location", page), ("Cache-Control", "no-store"),
                              ("Content-Security-Policy", "default-src 'none'"), ("X-Frame-Options", "DENY")],
                      contentType: "text/html; charset=utf-8")
    }
}
