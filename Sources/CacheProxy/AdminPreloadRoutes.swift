import CacheHTTP
import CacheLoading

/// `/admin/preload…` and `/admin/cache/unpin`: `httpcache preload` and
/// `httpcache cache unpin` while a proxy serves the folder (token-protected
/// like every admin route; see `AdminRoutes`).
///
///     POST /admin/preload?url=U[&range=A-B][&variant=all|highest|lowest|BPS][&duration=S][&pin=1]
///                                              → {"id":N}
///     GET  /admin/preload?id=N                 → status (below)
///     POST /admin/preload/cancel?id=N
///     POST /admin/cache/unpin?url=U            → {"ok":true,"unpinned":N}
///
/// A status: {"id","url","state":"running"|"done"|"failed","bytesDone",
/// "bytesTotal","segmentsDone","segmentsTotal","resourcesDone",
/// "resourcesTotal"[,"code","error"]}, code being the HTTPCacheError code.
enum AdminPreloadRoutes {
    /// Handles the request when it is one of these routes; false otherwise.
    static func handle(path: Substring, query: [String: String], isPost: Bool, server: ProxyServer,
                       respond: @escaping AdminRoutes.Respond) -> Bool {
        let engine = server.engine
        switch (path, isPost) {
        case ("/admin/preload", true):
            switch request(from: query) {
            case .success(let request):
                let id = engine.preloader.start(request)
                respond(200, "{\"id\":\(id)}")
            case .failure(let problem):
                respond(400, #"{"error":"# + JSONText.string(problem.message) + "}")
            }
        case ("/admin/preload", false):
            guard let id = query["id"].flatMap({ Int($0) }), let status = engine.preloader.status(id) else {
                respond(404, #"{"error":"no such preload"}"#)
                return true
            }
            respond(200, json(status))
        case ("/admin/preload/cancel", true):
            guard let id = query["id"].flatMap({ Int($0) }) else {
                respond(400, #"{"error":"id missing"}"#)
                return true
            }
            engine.preloader.cancel(id)
            respond(200, #"{"ok":true}"#)
        case ("/admin/cache/unpin", true):
            guard let url = query["url"] else {
                respond(400, #"{"error":"url missing"}"#)
                return true
            }
            // What a preload pinned may sit on every loop (segments hash apart).
            server.everyLoop({ server, answer in
                answer(server.engine.store.unpin(url: url, cacheKey: server.engine.cacheKey(for: url)))
            }) { counts in
                let count = counts.reduce(0) { $0 + ($1 ?? 0) }
                respond(200, "{\"ok\":true,\"unpinned\":\(count)}")
            }
        default:
            return false
        }
        return true
    }

    struct Problem: Error { var message: String }

    static func request(from query: [String: String]) -> Result<PreloadRequest, Problem> {
        guard let url = query["url"], OriginURL.parse(url) != nil else { return .failure(Problem(message: "url (http or https) is required")) }
        var request = PreloadRequest(url: url)
        if let text = query["range"] {
            guard let range = PreloadRequest.parseRange(text) else { return .failure(Problem(message: "bad range \(text)")) }
            request.range = range
        }
        if let text = query["variant"] {
            guard let variants = PreloadRequest.parseVariants(text) else { return .failure(Problem(message: "bad variant \(text)")) }
            request.variants = variants
        }
        if let text = query["duration"] {
            guard let seconds = Double(text), seconds > 0 else { return .failure(Problem(message: "bad duration \(text)")) }
            request.duration = seconds
        }
        request.pin = query["pin"] == "1" || query["pin"] == "true"
        return .success(request)
    }

    static func json(_ status: PreloadStatus) -> String {
        var fields = ["\"id\":\(status.id)", "\"url\":\(JSONText.string(status.url))"]
        switch status.phase {
        case .running: fields.append(#""state":"running""#)
        case .finished(nil): fields.append(#""state":"done""#)
        case .finished(let failure?):
            fields.append(#""state":"failed""#)
            fields.append("\"code\":\(failure.code)")
            fields.append("\"error\":" + JSONText.string(failure.message))
        }
        fields.append("\"bytesDone\":\(status.bytesDone)")
        fields.append("\"bytesTotal\":\(JSONText.optional(status.bytesTotal))")
        fields.append("\"segmentsDone\":\(status.counts.segmentsDone)")
        fields.append("\"segmentsTotal\":\(status.counts.segmentsTotal)")
        fields.append("\"resourcesDone\":\(status.counts.resourcesDone)")
        fields.append("\"resourcesTotal\":\(status.counts.resourcesTotal)")
        return "{" + fields.joined(separator: ",") + "}"
    }
}
