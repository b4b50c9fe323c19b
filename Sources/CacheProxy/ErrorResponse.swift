import CacheHTTP
import CacheLoading
import Logging

/// The response a client gets when a resource cannot be served: the origin's
/// own error status and body, or 502/504 with the reason.
enum ErrorResponse {
    /// The status a failure is answered with.
    static func status(for error: LoadError) -> Int {
        switch error {
        case .originStatus(let status, _, _): return status
        case .upstream(let upstream): return upstream.isTimeout ? 504 : 502
        case .changed, .mismatch, .storage: return 502
        case .decryption: return 500
        }
    }

    static func bytes(for error: LoadError, url: String, keepAlive: Bool, includeBody: Bool, date: String,
                      logger: Logger) -> [UInt8] {
        let status: Int
        var body: [UInt8]
        var contentType = "text/plain; charset=utf-8"
        switch error {
        case .originStatus(let originStatus, let headers, let originBody):
            status = originStatus
            body = originBody
            contentType = headers["content-type"] ?? contentType
        case .upstream(let upstream):
            status = Self.status(for: error)
            body = Array("Origin failed: \(upstream)\n".utf8)  // logged once, by the loader
        case .changed(let what):
            status = 502
            body = Array("Origin resource changed (\(what)); retry\n".utf8)
        case .mismatch(let reason):
            status = 502
            body = Array("Origin response rejected: \(reason)\n".utf8)  // logged by the loader
        case .decryption(let reason):
            status = 500
            body = Array("Cannot decrypt: \(reason)\n".utf8)
            logger.error("decryption unavailable", metadata: ["url": "\(url)", "reason": "\(reason)"])
        case .storage(let reason):
            status = 502
            body = Array("Cache storage failed: \(reason)\n".utf8)
            logger.error("storage failure", metadata: ["url": "\(url)", "reason": "\(reason)"])
        }
        var head = HeadBuilder(status: status)
        head.add("Server", "HTTPCache")
        head.add("Date", date)
        head.add("Content-Type", contentType)
        head.add("Content-Length", decimal: Int64(body.count))
        head.add("Connection", keepAlive ? "keep-alive" : "close")
        var bytes = head.finish()
        if includeBody { bytes.append(contentsOf: body) }
        return bytes
    }
}
