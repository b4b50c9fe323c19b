/// Which stored responses an unsafe request makes unusable (RFC 9111 §4.4).
package enum Invalidation {
    /// RFC 9110 §9.2.1; any other method, unknown ones too, is unsafe.
    private static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]
    package static func isSafe(_ method: String) -> Bool { safeMethods.contains(method) }

    /// None for a safe method or a status outside 2xx-3xx; else the target, and Location and
    /// Content-Location on its origin (§4.4: other origins could be attacked that way).
    package static func targets(method: String, status: Int, target: OriginURL,
                                responseHeaders: HTTPHeaders) -> [OriginURL] {
        guard !isSafe(method), (200..<400).contains(status) else { return [] }
        var urls = [target]
        for name in ["Location", "Content-Location"] {
            if let value = responseHeaders[name], let other = target.resolving(value),
               other.authorityKey == target.authorityKey, !urls.contains(other) {
                urls.append(other)
            }
        }
        return urls
    }
}
