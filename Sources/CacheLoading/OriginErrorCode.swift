import CacheUpstream

/// The `code` label of origin errors in /stats and /metrics (raw values are stable).
package enum OriginErrorCode: String, Sendable, CaseIterable, Comparable {
    /// Connect or read deadline passed (the client got 504).
    case timeout
    case resolve
    case connect
    /// The connection closed before the response was complete.
    case closed
    /// TLS handshake or certificate verification failed.
    case tls
    /// A malformed response head or body framing.
    case protocolError = "protocol"
    /// Redirect loop, too many hops or an unusable Location.
    case redirect
    /// The origin's 4xx or 5xx, passed on to the client.
    case status4xx = "status_4xx"
    case status5xx = "status_5xx"
    /// The origin answered something else than asked (range, length).
    case mismatch
    /// The resource changed at the origin (validators differ) mid-use.
    case changed
    /// The upstream configuration cannot be used (bad CA file…).
    case configuration
    /// The destination is outside the allowed origins.
    case forbidden

    package static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// Nil when the origin is not to blame (the cache could not store bytes).
    package init?(_ error: LoadError) {
        switch error {
        case .originStatus(let status, _, _): self = status >= 500 ? .status5xx : .status4xx
        case .upstream(let upstream):
            switch upstream {
            case .resolve: self = .resolve
            case .connect: self = .connect
            case .timeout: self = .timeout
            case .protocolViolation: self = .protocolError
            case .closedEarly: self = .closed
            case .tls: self = .tls
            case .redirect: self = .redirect
            case .configuration: self = .configuration
            case .forbidden: self = .forbidden
            }
        case .storage, .notCached, .decryption: return nil
        case .mismatch: self = .mismatch
        case .changed: self = .changed
        }
    }
}
