import CacheHTTP

/// The proxy's own routes (`RequestRoute.local`), by method and path (after `OwnRoutes`' prefix,
/// before any query): the one table the connection routes by, proxy URLs first (the hot path). Pure.
enum LocalRoute: Equatable {
    case proxyURL, admin, ping, health, page, stats, root, notFound
    /// Answered at once; the connection closes after it (the request may carry a body that is not read).
    case refuse(status: Int, reason: String, allow: String?)

    /// The admin, stats and page state live on the first loop's server: another loop hands the request over.
    var isHomeOnly: Bool { self == .admin || self == .page || self == .stats }

    static func resolve(method: String, target: String, hasBody: Bool) -> LocalRoute {
        let isGet = method == "GET" || method == "HEAD"
        if isGet && !hasBody && ProxyURL.isProxyTarget(target) { return .proxyURL }
        let path = target.utf8.prefix { $0 != UInt8(ascii: "?") }
        if path.starts(with: "/admin/".utf8) && (method == "GET" || method == "POST") { return .admin }
        guard isGet else { return .refuse(status: 405, reason: "Method not allowed\n", allow: "GET, HEAD") }
        if hasBody { return .refuse(status: 400, reason: "Bad request: GET and HEAD take no body\n", allow: nil) }
        if path.elementsEqual("/ping".utf8) { return .ping }
        if path.elementsEqual("/livez".utf8) || path.elementsEqual("/readyz".utf8) { return .health }
        if path.elementsEqual("/ui/".utf8) || path.elementsEqual("/ui".utf8) { return .page }
        if path.elementsEqual("/stats".utf8) || path.elementsEqual("/metrics".utf8) { return .stats }
        if path.elementsEqual("/".utf8) { return .root }
        return .notFound
    }
}
