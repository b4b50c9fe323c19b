import CacheHTTP

/// A client's preconditions answered from a fresh stored response (RFC 9110 §13.2), with no origin request.
package enum Preconditions {
    /// The precondition fields a cache evaluates itself (If-Range is the plan's).
    static let fields = ["If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"]

    /// 304 or 412 when the request's preconditions say so, nil to answer normally.
    package static func answer(_ request: BodyRequest, info: ContentInfo, date: String) -> (status: Int, head: [UInt8])? {
        // Preconditions apply to a 2xx the server would send (RFC 9110 §13.2.1): a stored 200 only.
        guard request.preconditions.count > 0, info.status == 200 else { return nil }
        let method = request.isHead ? "HEAD" : "GET"
        switch ConditionalRequest.evaluate(method: method, requestHeaders: request.preconditions,
                                           etag: info.etag, lastModified: info.lastModified) {
        case .proceed:
            return nil
        case .notModified:
            return (304, notModifiedHead(info, date: date, keepAlive: request.keepAlive))
        case .preconditionFailed:
            var head = HeadBuilder(status: 412)
            head.add("Server", "HTTPCache")
            head.add("Date", date)
            head.add("Content-Length", decimal: 0)
            head.add("Connection", request.keepAlive ? "keep-alive" : "close")
            return (412, head.finish())
        }
    }

    /// A 304 carries the fields a 200 would (RFC 9110 §15.4.5), no body, no Content-Length.
    static func notModifiedHead(_ info: ContentInfo, date: String, keepAlive: Bool) -> [UInt8] {
        var head = HeadBuilder(status: 304)
        head.add("Server", "HTTPCache")
        head.add("Date", info.headers["Date"] ?? date)
        if let etag = info.etag { head.add("ETag", etag) }
        if let lastModified = info.lastModified { head.add("Last-Modified", lastModified) }
        for field in info.headers where !ResponsePlan.ownFields.contains(field.name.lowercased())
            && !representationFields.contains(field.name.lowercased()) {
            head.add(name: field.name, field.value)
        }
        head.add("Connection", keepAlive ? "keep-alive" : "close")
        return head.finish()
    }

    /// Fields describing the body a 304 does not carry.
    private static let representationFields: Set<String> = ["content-encoding", "content-language"]
}
