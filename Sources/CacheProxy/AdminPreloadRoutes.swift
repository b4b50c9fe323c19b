import CacheHTTP
import CacheIO
import CacheLoading

/// `/admin/preload…`: `httpcache preload` while a proxy serves the folder
/// (token-protected like every admin route; see `AdminRoutes`).
///
///     POST /admin/preload?url=U[&range=A-B][&variant=all|highest|lowest|BPS][&duration=S][&language=L][&pin=1]
///                                              → AdminPreloadStarted
///     GET  /admin/preload?id=N                 → AdminPreloadStatus
///     POST /admin/preload/cancel?id=N
enum AdminPreloadRoutes {
    /// Handles the request when it is one of these routes; false otherwise.
    static func handle(path: Substring, query: [String: String], isPost: Bool, server: ProxyServer,
                       respond: @escaping AdminRoutes.Respond) -> Bool {
        let engine = server.engine
        switch (path, isPost) {
        case ("/admin/preload", true):
            switch request(from: query) {
            case .success(let request):
                respond(200, JSONText.encode(AdminPreloadStarted(id: engine.preloader.start(request))))
            case .failure(let error):
                AdminRoutes.fail(error, respond)
            }
        case ("/admin/preload", false):
            guard let id = query["id"].flatMap({ Int($0) }), let status = engine.preloader.status(id) else {
                AdminRoutes.fail(HTTPCacheError(.notFound, "no such preload"), respond)
                return true
            }
            respond(200, JSONText.encode(AdminPreloadStatus(status)))
        case ("/admin/preload/cancel", true):
            guard let id = query["id"].flatMap({ Int($0) }) else {
                AdminRoutes.fail(HTTPCacheError(.invalidArgument, "id missing"), respond)
                return true
            }
            engine.preloader.cancel(id)
            respond(200, #"{"ok":true}"#)
        default:
            return false
        }
        return true
    }

    /// The request, checked as `MediaCache.preload` checks it (same codes and texts).
    static func request(from query: [String: String]) -> Result<PreloadRequest, HTTPCacheError> {
        guard let url = query["url"], OriginURL.parse(url) != nil else {
            return .failure(HTTPCacheError(.invalidArgument, "not an http or https URL: \(query["url"] ?? "")"))
        }
        var request = PreloadRequest(url: url)
        if let text = query["range"] {
            guard let range = PreloadRequest.parseRange(text) else { return .failure(HTTPCacheError(.invalidArgument, "bad range \(text)")) }
            request.range = range
        }
        if let text = query["variant"] {
            guard let variants = PreloadRequest.parseVariants(text) else { return .failure(HTTPCacheError(.invalidArgument, "bad variant \(text)")) }
            request.variants = variants
        }
        if let text = query["duration"] {
            guard let seconds = Double(text), seconds > 0 else { return .failure(HTTPCacheError(.invalidArgument, "bad duration \(text)")) }
            request.duration = seconds
        }
        if let text = query["language"] {
            guard !text.isEmpty else { return .failure(HTTPCacheError(.invalidArgument, "bad language \(text)")) }
            request.language = text
        }
        request.pin = query["pin"] == "1" || query["pin"] == "true"
        return .success(request)
    }
}

/// `POST /admin/preload`'s answer.
package struct AdminPreloadStarted: Codable, Sendable {
    package var id: Int
}

/// `GET /admin/preload?id=N`'s answer: `state` is running, done or failed;
/// a failure has its `HTTPCacheError` code and text.
package struct AdminPreloadStatus: Codable, Sendable {
    package var id: Int
    package var url: String
    package var state: String
    package var failure: HTTPCacheError?
    package var bytesDone: Int64
    package var bytesTotal: Int64?
    package var segmentsDone: Int
    package var segmentsTotal: Int
    package var resourcesDone: Int
    package var resourcesTotal: Int
    /// A live DASH manifest: what was available when it was read.
    package var live: Bool?

    init(_ status: PreloadStatus) {
        id = status.id
        url = status.url
        switch status.phase {
        case .running: state = "running"
        case .finished(nil): state = "done"
        case .finished(let failure?):
            state = "failed"
            self.failure = HTTPCacheError(HTTPCacheError.Code(rawValue: failure.code) ?? .upstream, failure.message)
        }
        bytesDone = status.bytesDone
        bytesTotal = status.bytesTotal
        segmentsDone = status.counts.segmentsDone
        segmentsTotal = status.counts.segmentsTotal
        resourcesDone = status.counts.resourcesDone
        resourcesTotal = status.counts.resourcesTotal
        live = status.counts.live
    }
}
