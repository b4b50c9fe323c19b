import CacheIO
import CacheLoading

/// `/admin/downloads…`: `httpcache download …` and the `/ui/` page while a proxy serves the folder.
///
///     GET  /admin/downloads[?id=ID]            → AdminDownloadList (one or all)
///     POST /admin/downloads/add?url=U[&name=N][&variant=V][&duration=S][&range=A-B] → the record
///     POST /admin/downloads/pause?id=ID        → the record
///     POST /admin/downloads/resume?id=ID       → the record
///     POST /admin/downloads/remove?id=ID       → the record (state removed)
///     GET  /admin/downloads/events             Server-Sent Events: `data: <record JSON>` at each change
enum AdminDownloadRoutes {
    static func handle(path: Substring, query: [String: String], isPost: Bool, server: ProxyServer,
                       respond: @escaping AdminRoutes.Respond) -> Bool {
        let downloads = server.engine.downloads
        if isPost, let action = DownloadAction(path: path) {
            switch action.perform(on: downloads, query) {
            case .success(let record): respond(200, JSONText.encode(record))
            case .failure(let error): AdminRoutes.fail(error, respond)
            }
            return true
        }
        guard path == "/admin/downloads", !isPost else { return false }
        let id = query["id"] ?? ""
        let records = query["id"].map { id in downloads.records.filter { $0.id == id } } ?? downloads.records
        if query["id"] != nil && records.isEmpty {
            AdminRoutes.fail(HTTPCacheError(.notFound, "no download \(id)"), respond)
        } else {
            respond(200, JSONText.encode(AdminDownloadList(downloads: records, maxBytes: server.engine.store.maxBytes)))
        }
        return true
    }
}

/// `GET /admin/downloads`'s answer.
package struct AdminDownloadList: Codable, Sendable {
    package var downloads: [DownloadRecord]
    package var maxBytes: Int64
}
