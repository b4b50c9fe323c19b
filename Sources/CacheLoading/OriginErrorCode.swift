import CacheUpstream

/// The stable set of origin error codes used as the `code` label.
package enum OriginErrorCode {
    /// Connect or read deadline passed (the client got 504).
    package static let timeout = "timeout"
    /// The origin's name did not resolve.
    package static let resolve = "resolve"
    /// The TCP connection could not be opened.
    package static let connect = "connect"
    /// The connection closed before the response was complete.
    package static let closed = "closed"
    /// TLS handshake or certificate verification failed.
    package static let tls = "tls"
    /// A malformed response head or body framing.
    package static let protocolError = "protocol"
    /// Redirect loop, too many hops or an unusable Location.
    package static let redirect = "redirect"
    /// The origin answered 4xx (passed on to the client).
    package static let status4xx = "status_4xx"
    /// The origin answered 5xx (passed on to the client).
    package static let status5xx = "status_5xx"
    /// The origin answered something else than asked (range, length).
    package static let mismatch = "mismatch"
    /// The resource changed at the origin (validators differ) mid-use.
    package static let changed = "changed"
    /// The upstream configuration cannot be used (bad CA file…).
    package static let configuration = "configuration"
    /// The destination is outside the allowed origins.
    package static let forbidden = "forbidden"

    /// The code for a failed load, or nil when the origin is not to blame
    /// (the cache could not store bytes).
    package static func code(for error: LoadError) -> String? {
        switch error {
        case .originStatus(let status, _, _): return status >= 500 ? status5xx : status4xx
        case .upstream(let upstream):
            switch upstream {
            case .resolve: return resolve
            case .connect: return connect
            case .timeout: return timeout
            case .protocolViolation: return protocolError
            case .closedEarly: return closed
            case .tls: return tls
            case .redirect: return redirect
            case .configuration: return configuration
            case .forbidden: return forbidden
            }
        case .storage, .notCached, .decryption: return nil
        case .mismatch: return mismatch
        case .changed: return changed
        }
    }
}
