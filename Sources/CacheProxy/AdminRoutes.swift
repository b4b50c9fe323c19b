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

    /// Runs on the first loop's server (`ProxyServer.isHome`).

    static func handle(_ head: HTTPRequestHead, server: ProxyServer, respond: @escaping Respond) {
        // Compared in constant time: the time taken must not tell how much of a guess was right.
        guard let token = head.headers["x-httpcache-token"],
              ConstantTime.equal(Array(token.utf8), Array(server.adminToken.utf8)) else {
            return respond(403, #"{"error":"missing or wrong X-HTTPCache-Token"}"#)
        }
        let parts = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts[0]
        let query = parts.count > 1 ? QueryString.parse(parts[1]) : [:]
        let isPost = head.method == "POST"
        // Each resource is its owner loop's: a request about one URL runs
        // there, a request about all of them on every loop (see ProxyServer).
        func onOwner<T: Sendable>(of url: String, _ work: @escaping @Sendable (ResourceStore, String, @escaping @Sendable (T) -> Void) -> Void,
                                  _ done: @escaping (T?) -> Void) {
            let cacheKey = server.engine.cacheKey(for: url)
            server.onLoop(server.owner(of: ResourceStore.key(for: cacheKey)), { server, answer in
                work(server.engine.store, cacheKey, answer)
            }, done)
        }
        func result(_ outcome: Outcome?) {
            switch outcome {
            case .ok?: respond(200, #"{"ok":true}"#)
            case .notCached?: respond(404, #"{"error":"not cached"}"#)
            case .failed(let message)?: respond(409, #"{"error":"# + JSONText.string(message) + "}")
            case nil: respond(503, #"{"error":"the proxy is stopping"}"#)
            }
        }
        switch (path, isPost) {
        case ("/admin/cache", false):
            server.everyLoop({ server, answer in
                let store = server.engine.store
                answer(Listing(items: store.list(), total: store.totalBytes, limit: store.maxBytes))
            }) { listings in
                respond(200, listJSON(listings.compactMap { $0 }))
            }
        case ("/admin/cache/clear", true):
            server.everyLoop({ server, answer in
                server.engine.store.removeAll()
                answer(true)
            }) { _ in respond(200, #"{"ok":true}"#) }
        case ("/admin/cache/remove", true):
            guard let url = query["url"] else { return respond(404, #"{"error":"not cached"}"#) }
            onOwner(of: url, { store, cacheKey, answer in
                guard let resource = store.find(cacheKey: cacheKey, url: url) else { return answer(Outcome.notCached) }
                store.remove(resource)
                answer(.ok)
            }, result)
        case ("/admin/cache/export", true):
            guard let url = query["url"] else { return respond(404, #"{"error":"not cached"}"#) }
            guard let target = query["path"] else { return respond(400, #"{"error":"path missing"}"#) }
            onOwner(of: url, { store, cacheKey, answer in
                guard let resource = store.find(cacheKey: cacheKey, url: url) else { return answer(Outcome.notCached) }
                store.export(resource, to: target) { answer(Outcome($0)) }
            }, result)
        case ("/admin/cache/import", true):
            guard let url = query["url"], let source = query["path"], OriginURL.parse(url) != nil else {
                return respond(400, #"{"error":"url (http or https) and path are required"}"#)
            }
            let type = query["type"]
            onOwner(of: url, { store, cacheKey, answer in
                store.importFile(source, url: url, cacheKey: cacheKey, contentType: type) { answer(Outcome($0)) }
            }, result)
        default:
            if AdminPreloadRoutes.handle(path: path, query: query, isPost: isPost, server: server, respond: respond) { return }
            respond(404, #"{"error":"unknown admin request"}"#)
        }
    }

    /// How a request about one resource ended, on its owner's loop.
    enum Outcome: Sendable {
        case ok
        case notCached
        case failed(String)

        init(_ result: Result<Void, StorageError>) {
            switch result {
            case .success: self = .ok
            case .failure(let error): self = .failed(error.description)
            }
        }
    }

    /// One loop's part of the list.
    struct Listing: Sendable {
        var items: [CachedResourceInfo]
        var total: Int64
        var limit: Int64
    }

    /// The list of every loop's entries, most recently used first.
    static func listJSON(_ listings: [Listing]) -> String {
        let all = listings.flatMap(\.items).sorted { ($0.lastAccess, $0.url) > ($1.lastAccess, $1.url) }
        let items = all.map { info in
            "{\"url\":\(JSONText.string(info.url)),\"length\":\(JSONText.optional(info.totalLength))," +
                "\"type\":\(JSONText.optional(info.contentType)),\"cached\":\(info.cachedBytes)," +
                "\"ranges\":\(JSONText.string(info.ranges.description)),\"lastAccess\":\(info.lastAccess)," +
                "\"complete\":\(info.isComplete),\"inUse\":\(info.inUse)}"
        }
        let total = listings.reduce(0) { $0 + $1.total }
        let limit = listings.first?.limit ?? 0
        return "{\"total\":\(total),\"limit\":\(limit),\"resources\":[" + items.joined(separator: ",") + "]}"
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
