import CacheHTTP
import CacheStorage

/// `/admin/cache…`: cache management for `httpcache cache …` while a proxy
/// serves the folder (the proxy is then its only writer). Every request
/// must carry the token from the folder's lock file.
///
///     GET  /admin/cache                        list (JSON)
///     POST /admin/cache/remove?url=U           remove one
///     POST /admin/cache/clear                  remove all
///     POST /admin/cache/export?url=U&path=P    export a complete resource
///     POST /admin/cache/import?url=U&path=P[&type=T]
enum AdminRoutes {
    typealias Respond = (_ status: Int, _ json: String) -> Void

    static func handle(_ head: HTTPRequestHead, server: ProxyServer, respond: @escaping Respond) {
        guard head.headers["x-httpcache-token"] == server.adminToken else {
            return respond(403, #"{"error":"missing or wrong X-HTTPCache-Token"}"#)
        }
        let parts = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts[0]
        let query = parts.count > 1 ? QueryString.parse(parts[1]) : [:]
        let store = server.loader.store
        let isPost = head.method == "POST"
        func resource() -> Resource? {
            guard let url = query["url"] else { return nil }
            return store.find(cacheKey: server.engine.cacheKey(for: url), url: url)
        }
        func result(_ outcome: Result<Void, StorageError>) {
            switch outcome {
            case .success: respond(200, #"{"ok":true}"#)
            case .failure(let error): respond(409, #"{"error":"# + JSONText.string(error.description) + "}")
            }
        }
        switch (path, isPost) {
        case ("/admin/cache", false):
            respond(200, listJSON(store))
        case ("/admin/cache/clear", true):
            store.removeAll()
            respond(200, #"{"ok":true}"#)
        case ("/admin/cache/remove", true):
            guard let resource = resource() else { return respond(404, #"{"error":"not cached"}"#) }
            store.remove(resource)
            respond(200, #"{"ok":true}"#)
        case ("/admin/cache/export", true):
            guard let resource = resource() else { return respond(404, #"{"error":"not cached"}"#) }
            guard let target = query["path"] else { return respond(400, #"{"error":"path missing"}"#) }
            store.export(resource, to: target, completion: result)
        case ("/admin/cache/import", true):
            guard let url = query["url"], let source = query["path"], OriginURL.parse(url) != nil else {
                return respond(400, #"{"error":"url (http or https) and path are required"}"#)
            }
            store.importFile(source, url: url, cacheKey: server.engine.cacheKey(for: url),
                             contentType: query["type"], completion: result)
        default:
            if AdminPreloadRoutes.handle(path: path, query: query, isPost: isPost, server: server, respond: respond) { return }
            respond(404, #"{"error":"unknown admin request"}"#)
        }
    }

    static func listJSON(_ store: ResourceStore) -> String {
        let items = store.list().map { info in
            "{\"url\":\(JSONText.string(info.url)),\"length\":\(JSONText.optional(info.totalLength))," +
                "\"type\":\(JSONText.optional(info.contentType)),\"cached\":\(info.cachedBytes)," +
                "\"ranges\":\(JSONText.string(info.ranges.description)),\"lastAccess\":\(info.lastAccess)," +
                "\"complete\":\(info.isComplete),\"inUse\":\(info.inUse)}"
        }
        return "{\"total\":\(store.totalBytes),\"limit\":\(store.maxBytes),\"resources\":[" + items.joined(separator: ",") + "]}"
    }
}

/// Decodes `a=1&b=x%20y` (form encoding: '+' is a space).
enum QueryString {
    static func parse(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { continue }
            result[name] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                guard iterator.count >= 2, let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16) else {
                    return nil
                }
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
