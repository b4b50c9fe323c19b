import CacheHTTP
import CacheIO
import CacheLoading

/// `/admin/cache…`: cache management for `httpcache cache …` while a proxy
/// serves the folder (the proxy is then its only writer). Every request
/// must carry the token from the folder's lock file.
///
///     GET  /admin/cache                        list (JSON)
///     POST /admin/cache/remove?url=U           remove one
///     POST /admin/cache/clear                  remove all
///     POST /admin/cache/export?url=U&path=P    export a complete resource
///     POST /admin/cache/import?url=U&path=P[&type=T]
///     POST /admin/cache/unpin?url=U            → {"unpinned":N}
///     POST /admin/cache/purge?url=U            → {"purged":N}, 404 when nothing was stored
///     POST /admin/cache/purge?prefix=P         → {"purged":N}, every URL starting with P
///     POST /admin/cache/purge?download=ID      → {"purged":N}, every entry the download holds; the download is removed
enum AdminRoutes {
    typealias Respond = (_ status: Int, _ json: String) -> Void

    /// Runs on the first loop's server (`ProxyServer.isHome`). Answers are
    /// the wire types of `CacheOperations`; a failure is the `HTTPCacheError`
    /// itself, so that `httpcache cache …` reports it as it does without a proxy.
    static func handle(_ head: HTTPRequestHead, server: ProxyServer, respond: @escaping Respond) {
        guard isAuthorized(head, server: server) else {
            return fail(HTTPCacheError(.invalidArgument, "missing or wrong X-HTTPCache-Token"), status: 403, respond)
        }
        let parts = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts[0]
        let query = parts.count > 1 ? QueryString.parse(parts[1]) : [:]
        let isPost = head.method == "POST"
        guard let operations = server.operations else { return fail(HTTPCacheError(.closed, "the proxy is stopping"), respond) }
        // The operations answer on a store's loop; the client is this one's.
        let reply = LoopBound(respond, loop: server.loop)
        @Sendable func answer(_ result: Result<String, HTTPCacheError>) {
            reply.loop.execute {
                switch result {
                case .success(let json): reply.value(200, json)
                case .failure(let error): fail(error, reply.value)
                }
            }
        }
        let done: @Sendable (Result<Void, HTTPCacheError>) -> Void = { answer($0.map { #"{"ok":true}"# }) }
        let missing = HTTPCacheError(.invalidArgument, "url and path are required")
        switch (path, isPost) {
        case ("/admin/cache", false):
            operations.list { answer(.success(JSONText.encode($0))) }
        case ("/admin/cache/clear", true):
            operations.removeAll { done(.success(())) }
        case ("/admin/cache/remove", true):
            guard let url = query["url"] else { return fail(missing, respond) }
            operations.remove(url: url, done)
        case ("/admin/cache/export", true):
            guard let url = query["url"], let target = query["path"] else { return fail(missing, respond) }
            operations.export(url: url, to: target, done)
        case ("/admin/cache/import", true):
            guard let url = query["url"], let source = query["path"] else { return fail(missing, respond) }
            operations.importFile(source, url: url, contentType: query["type"], done)
        case ("/admin/cache/unpin", true):
            guard let url = query["url"] else { return fail(missing, respond) }
            operations.unpin(url: url) { answer(.success(JSONText.encode(AdminUnpinned(unpinned: $0)))) }
        case ("/admin/cache/purge", true):
            if let url = query["url"] {
                operations.purge(url: url) { answer($0.map { JSONText.encode(AdminPurged(purged: $0)) }) }
            } else if let prefix = query["prefix"], !prefix.isEmpty {
                operations.purge(prefix: prefix) { answer(.success(JSONText.encode(AdminPurged(purged: $0)))) }
            } else if let id = query["download"], !id.isEmpty {
                // Its entries first (while they still carry its tag), then the download itself.
                let downloads = LoopBound(server.engine.downloads, loop: server.loop)
                operations.purge(holder: DownloadRecord.holder(of: id)) { purged in
                    downloads.loop.execute {
                        answer(downloads.value.remove(id).map { _ in JSONText.encode(AdminPurged(purged: purged)) })
                    }
                }
            } else {
                fail(HTTPCacheError(.invalidArgument, "url, prefix or download is required"), respond)
            }
        default:
            if AdminPreloadRoutes.handle(path: path, query: query, isPost: isPost, server: server, respond: respond) { return }
            if AdminDownloadRoutes.handle(path: path, query: query, isPost: isPost, server: server, respond: respond) { return }
            fail(HTTPCacheError(.invalidArgument, "unknown admin request"), status: 404, respond)
        }
    }

    /// Whether the request carries the folder's admin token (compared in
    /// constant time: the time taken must not tell how much of a guess was right).
    static func isAuthorized(_ head: HTTPRequestHead, server: ProxyServer) -> Bool {
        guard let token = head.headers["x-httpcache-token"] else { return false }
        return ConstantTime.equal(Array(token.utf8), Array(server.adminToken.utf8))
    }

    /// An error answer: the error as JSON, with the status its code suggests.
    static func fail(_ error: HTTPCacheError, status: Int? = nil, _ respond: Respond) {
        let suggested = switch error.code {
        case .notFound: 404
        case .invalidArgument, .range: 400
        case .tooLarge: 413
        case .closed: 503
        default: 409
        }
        respond(status ?? suggested, JSONText.encode(error))
    }
}

/// `POST /admin/cache/unpin`'s answer.
package struct AdminUnpinned: Codable, Sendable {
    package var unpinned: Int
}

/// `POST /admin/cache/purge`'s and `PURGE`'s answer.
package struct AdminPurged: Codable, Sendable {
    package var purged: Int
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
