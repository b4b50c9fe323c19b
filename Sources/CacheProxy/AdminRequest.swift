import CacheHTTP
import CacheIO
import CacheLoading

/// What `httpcache cache …` and `httpcache preload` ask of the proxy serving a folder: the closed set
/// of `/admin/cache…` and `/admin/preload…` requests, shared by the admin routes (decoding) and the
/// CLI's admin client (encoding), so neither end spells a route or key the other does not know.
/// `wire` spells each one. (`DownloadAction` is the same for `/admin/downloads…`.)
package enum AdminRequest: Equatable, Sendable {
    case list
    case remove(url: String)
    case clear
    case export(url: String, path: String)
    case importFile(url: String, path: String, contentType: String?)
    case unpin(url: String)
    case purge(PurgeTarget)
    case preload(PreloadRequest)
    case preloadStatus(id: Int)
    case preloadCancel(id: Int)

    package enum PurgeTarget: Equatable, Sendable {
        /// Every stored variant of one URL.
        case url(String)
        /// Every URL starting with this (never empty).
        case prefix(String)
        /// Every entry a download holds; the download goes too.
        case download(String)
    }

    /// The request's method, path (without `OwnRoutes.prefix`) and query arguments.
    package var wire: (method: String, path: String, query: [String: String]) {
        switch self {
        case .list: ("GET", "/admin/cache", [:])
        case .remove(let url): ("POST", "/admin/cache/remove", ["url": url])
        case .clear: ("POST", "/admin/cache/clear", [:])
        case .export(let url, let path): ("POST", "/admin/cache/export", ["url": url, "path": path])
        case .importFile(let url, let path, let type):
            ("POST", "/admin/cache/import", ["url": url, "path": path].merging(type.map { ["type": $0] } ?? [:]) { $1 })
        case .unpin(let url): ("POST", "/admin/cache/unpin", ["url": url])
        case .purge(.url(let url)): ("POST", "/admin/cache/purge", ["url": url])
        case .purge(.prefix(let prefix)): ("POST", "/admin/cache/purge", ["prefix": prefix])
        case .purge(.download(let id)): ("POST", "/admin/cache/purge", ["download": id])
        case .preload(let request): ("POST", "/admin/preload", Self.query(of: request))
        case .preloadStatus(let id): ("GET", "/admin/preload", ["id": String(id)])
        case .preloadCancel(let id): ("POST", "/admin/preload/cancel", ["id": String(id)])
        }
    }

    /// nil for none of these (another admin route, or 404); an error for missing or bad arguments.
    package static func decode(method: String, path: Substring, query: [String: String]) -> Result<AdminRequest, HTTPCacheError>? {
        let isPost = method == "POST"
        let missing = HTTPCacheError(.invalidArgument, "url and path are required")
        switch (path, isPost) {
        case ("/admin/cache", false): return .success(.list)
        case ("/admin/cache/clear", true): return .success(.clear)
        case ("/admin/cache/remove", true):
            return query["url"].map { .success(.remove(url: $0)) } ?? .failure(missing)
        case ("/admin/cache/export", true):
            guard let url = query["url"], let path = query["path"] else { return .failure(missing) }
            return .success(.export(url: url, path: path))
        case ("/admin/cache/import", true):
            guard let url = query["url"], let path = query["path"] else { return .failure(missing) }
            return .success(.importFile(url: url, path: path, contentType: query["type"]))
        case ("/admin/cache/unpin", true):
            return query["url"].map { .success(.unpin(url: $0)) } ?? .failure(missing)
        case ("/admin/cache/purge", true):
            if let url = query["url"] { return .success(.purge(.url(url))) }
            if let prefix = query["prefix"], !prefix.isEmpty { return .success(.purge(.prefix(prefix))) }
            if let id = query["download"], !id.isEmpty { return .success(.purge(.download(id))) }
            return .failure(HTTPCacheError(.invalidArgument, "url, prefix or download is required"))
        case ("/admin/preload", true): return preload(from: query).map(AdminRequest.preload)
        case ("/admin/preload", false), ("/admin/preload/cancel", true):
            guard let id = query["id"].flatMap({ Int($0) }) else { return .failure(HTTPCacheError(.invalidArgument, "id missing")) }
            return .success(isPost ? .preloadCancel(id: id) : .preloadStatus(id: id))
        default: return nil
        }
    }

    static func query(of request: PreloadRequest) -> [String: String] {
        var query = ["url": request.url]
        if let range = request.range { query["range"] = "\(range.lowerBound)-\(range.upperBound - 1)" }
        switch request.variants {
        case .all: query["variant"] = "all"
        case .one(.highest): query["variant"] = "highest"
        case .one(.lowest): query["variant"] = "lowest"
        case .one(.closest(let bits)): query["variant"] = String(bits)
        }
        if let duration = request.duration { query["duration"] = String(duration) }
        if let language = request.language { query["language"] = language }
        if request.pin { query["pin"] = "1" }
        return query
    }

    /// The preload a query asks for, checked as `MediaCache.preload` checks it (same codes and texts).
    static func preload(from query: [String: String]) -> Result<PreloadRequest, HTTPCacheError> {
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
