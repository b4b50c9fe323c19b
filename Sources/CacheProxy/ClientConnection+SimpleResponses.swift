import CacheHTTP
import CacheIO

// Responses written at once: stats, admin routes, short answers, rejections of unparsable heads.

extension ClientConnection {
    func handleStats(_ head: HTTPRequestHead) {
        let loopback = peer?.isLoopback ?? false
        server.snapshot { [weak self] snapshot in
            guard let self, !self.socket.isClosed,
                  let stats = StatsRoutes.response(target: head.target, peerIsLoopback: loopback, snapshot: snapshot)
            else { return }
            self.respondSimple(stats.status, stats.body, keepAlive: head.keepAlive, head: head,
                               contentType: stats.contentType)
        }
    }

    func handleAdmin(_ head: HTTPRequestHead) {
        if head.announcesBody {
            return respondSimple(400, "Bad request: admin requests take no body\n", keepAlive: false, head: head)
        }
        if head.target.hasPrefix("/admin/downloads/events"), head.method == "GET", AdminRoutes.isAuthorized(head, server: server) {
            return streamDownloadEvents(head)
        }
        AdminRoutes.handle(head, server: server) { [weak self] status, json in
            guard let self, !self.socket.isClosed else { return }
            self.respondSimple(status, json + "\n", keepAlive: head.keepAlive, head: head, contentType: "application/json")
        }
    }

    func respondSimple(_ status: Int, _ body: String, keepAlive: Bool, head: HTTPRequestHead,
                       extra: [(String, String)] = [], contentType: String = "text/plain; charset=utf-8") {
        record?.status = status
        let bytes = server.heads.simple(status, body, keepAlive: keepAlive, extra: extra,
                                        includeBody: head.method != "HEAD", contentType: contentType)
        socket.write(bytes)
        exchangeFinished(keepAlive: keepAlive)
    }

    /// The machine closes after it.
    func reject(_ error: HeadParseError) {
        server.logger.info("bad request", metadata: ["client": "\(peerText)", "error": "\(error)"])
        server.responded(ResponseRecord(client: peerText, method: "-", target: "-", status: error.status, cache: .bypass,
                                        bytesSent: 0, startedAt: WallClock.monotonicNanoseconds()))
        socket.write(server.heads.simple(error.status, Self.reason(of: error), keepAlive: false))
    }

    private static func reason(of error: HeadParseError) -> String {
        switch error {
        case .badRequest(let why): return "Bad request: \(why)\n"
        case .uriTooLong: return "Request line too long\n"
        case .headersTooLarge: return "Request header fields too large\n"
        case .versionNotSupported: return "HTTP version not supported\n"
        case .contentTooLarge: return "Request body too large for this proxy\n"
        case .codingNotImplemented: return "Not implemented: request bodies may only be chunked\n"
        }
    }
}
