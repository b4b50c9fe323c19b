// Which stored responses a request makes unusable: RFC 9111 §4.4
// (invalidating stored responses after an unsafe method).

/// RFC 9111 §4.4 as one decision.
package enum Invalidation {
    /// The methods RFC 9110 §9.2.1 defines as safe. Any other — PUT, POST,
    /// DELETE, PATCH, a method this cache does not know — is unsafe.
    package static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// Whether `method` is safe (RFC 9110 §9.2.1); unknown methods are not.
    package static func isSafe(_ method: String) -> Bool { safeMethods.contains(method) }

    /// The URIs whose stored responses a `status` response to a `method`
    /// request for `target` invalidates: none for a safe method or an error
    /// (1xx are interim, 4xx and 5xx errors); else the target URI, and the
    /// Location and Content-Location URIs when they are on the target's
    /// origin (§4.4: other origins could be attacked that way).
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
