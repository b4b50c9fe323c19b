import CacheHTTP
import CacheIO
import CacheLoading

/// `/admin/cache…`, `/admin/preload…` (`AdminRequest`) and `/admin/downloads…` (`DownloadAction`): the CLI's
/// cache management while a proxy serves (then only writes) the folder; token required.
enum AdminRoutes {
    typealias Respond = (_ status: Int, _ json: String) -> Void

    /// On the first loop's server. A failure is the `HTTPCacheError`: the CLI reports it as without proxy.
    static func handle(_ head: HTTPRequestHead, server: ProxyServer, respond: @escaping Respond) {
        guard isAuthorized(head, server: server) else {
            return fail(HTTPCacheError(.invalidArgument, "missing or wrong X-HTTPCache-Token"), status: 403, respond)
        }
        let parts = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts[0]
        let query = parts.count > 1 ? QueryString.parse(parts[1]) : [:]
        switch AdminRequest.decode(method: head.method, path: path, query: query) {
        case .success(let request)?: perform(request, server: server, respond: respond)
        case .failure(let error)?: fail(error, respond)
        case nil:
            guard !AdminDownloadRoutes.handle(path: path, query: query, isPost: head.method == "POST",
                                              server: server, respond: respond) else { return }
            fail(HTTPCacheError(.invalidArgument, "unknown admin request"), status: 404, respond)
        }
    }

    private static func perform(_ request: AdminRequest, server: ProxyServer, respond: @escaping Respond) {
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
        let preloader = server.engine.preloader
        switch request {
        case .list: operations.list { answer(.success(JSONText.encode($0))) }
        case .clear: operations.removeAll { done(.success(())) }
        case .remove(let url): operations.remove(url: url, done)
        case .export(let url, let target): operations.export(url: url, to: target, done)
        case .importFile(let url, let source, let type): operations.importFile(source, url: url, contentType: type, done)
        case .unpin(let url): operations.unpin(url: url) { answer(.success(JSONText.encode(AdminUnpinned(unpinned: $0)))) }
        case .purge(.url(let url)): operations.purge(url: url) { answer($0.map { JSONText.encode(AdminPurged(purged: $0)) }) }
        case .purge(.prefix(let prefix)): operations.purge(prefix: prefix) { answer(.success(JSONText.encode(AdminPurged(purged: $0)))) }
        case .purge(.download(let id)):
            // Its entries first (while they still carry its tag), then the download itself.
            let downloads = LoopBound(server.engine.downloads, loop: server.loop)
            operations.purge(holder: DownloadRecord.holder(of: id)) { purged in
                downloads.loop.execute {
                    answer(downloads.value.remove(id).map { _ in JSONText.encode(AdminPurged(purged: purged)) })
                }
            }
        case .preload(let preload): respond(200, JSONText.encode(AdminPreloadStarted(id: preloader.start(preload))))
        case .preloadStatus(let id):
            guard let status = preloader.status(id) else { return fail(HTTPCacheError(.notFound, "no such preload"), respond) }
            respond(200, JSONText.encode(AdminPreloadStatus(status)))
        case .preloadCancel(let id):
            preloader.cancel(id)
            respond(200, #"{"ok":true}"#)
        }
    }

    /// Compared in constant time: the time taken must not tell how much of a guess was right.
    static func isAuthorized(_ head: HTTPRequestHead, server: ProxyServer) -> Bool {
        guard let token = head.headers["x-httpcache-token"] else { return false }
        return ConstantTime.equal(Array(token.utf8), Array(server.adminToken.utf8))
    }

    /// The error as JSON, with the status its code suggests.
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
