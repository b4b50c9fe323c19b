import CacheHTTP
import CacheLoading
import Logging

/// The answer when a resource cannot be served: the origin's own error status and body, or 502/504.
enum ErrorResponse {
    static func status(for error: LoadError) -> Int {
        switch error {
        case .originStatus(let status, _, _): return status
        case .upstream(.forbidden): return 403
        case .upstream(let upstream): return upstream.isTimeout ? 504 : 502
        case .changed, .mismatch, .storage: return 502
        case .notCached: return 504
        case .decryption: return 500
        }
    }

    /// `via` is this proxy's Via member, added after the origin's (RFC 9110 §7.6.3).
    static func bytes(for error: LoadError, url: String, keepAlive: Bool, includeBody: Bool, date: String,
                      logger: Logger, via: String? = nil, cacheStatus: String? = nil) -> [UInt8] {
        let status = Self.status(for: error)
        let body: [UInt8]
        var contentType = "text/plain; charset=utf-8"
        var relayed = HTTPHeaders()
        var server = "HTTPCache"
        switch error {
        case .originStatus(_, let headers, let originBody):
            body = originBody
            contentType = headers["content-type"] ?? contentType
            // The origin's end-to-end fields go on (Location, Cache-Control…); framing is ours.
            relayed = Intermediary.removingHopByHop(headers)
            server = headers["server"] ?? server
            for name in ["content-length", "content-type", "server", "date"] { relayed.remove(name) }
        case .upstream(.forbidden(let why)):
            body = Array("Forbidden: \(why)\n".utf8)
        case .upstream(let upstream):
            body = Array("Origin failed: \(upstream)\n".utf8)  // logged once, by the loader
        case .changed(let what):
            body = Array("Origin resource changed (\(what)); retry\n".utf8)
        case .mismatch(let reason):
            body = Array("Origin response rejected: \(reason)\n".utf8)  // logged by the loader
        case .notCached(let why):
            body = Array("Gateway timeout: \(why)\n".utf8)
        case .decryption(let reason):
            body = Array("Cannot decrypt: \(reason)\n".utf8)
            logger.error("decryption unavailable", metadata: ["url": "\(url)", "reason": "\(reason)"])
        case .storage(let reason):
            body = Array("Cache storage failed: \(reason)\n".utf8)
            logger.error("storage failure", metadata: ["url": "\(url)", "reason": "\(reason)"])
        }
        // 204 and 304 carry no body, nor the length of one (RFC 9110 §6.4.1, §8.6).
        let bodiless = status == 204 || status == 304 || (100..<200).contains(status)
        var head = HeadBuilder(status: status)
        head.add("Server", server)
        head.add("Date", date)
        if !bodiless { head.add("Content-Type", contentType) }
        for field in relayed { head.add(name: field.name, field.value) }
        if let via { head.add("Via", via) }
        if let cacheStatus { head.add("Cache-Status", cacheStatus) }
        if !bodiless { head.add("Content-Length", decimal: Int64(body.count)) }
        head.add("Connection", keepAlive ? "keep-alive" : "close")
        var bytes = head.finish()
        if includeBody && !bodiless { bytes.append(contentsOf: body) }
        return bytes
    }
}
