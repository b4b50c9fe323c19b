import CacheHTTP

/// Knobs of the origin client.
package struct UpstreamConfiguration: Sendable {
    /// Milliseconds to establish a connection (TCP connect and TLS handshake).
    package var connectTimeout: UInt64 = 10_000
    /// Milliseconds without a byte from the origin while waiting for one.
    package var readTimeout: UInt64 = 30_000
    /// Idle keep-alive connections kept per origin.
    package var maxIdlePerOrigin = 8
    /// Origin connections open at once (any origin, any stage); more wait. `DescriptorBudget` sets it.
    package var maxConnections = 1024
    /// Milliseconds an idle keep-alive connection is kept.
    package var idleTimeout: UInt64 = 60_000
    package var userAgent = "HTTPCache/" + HTTPCacheVersion.text.description
    /// Redirects followed for one request before giving up.
    package var maxRedirects = 10
    /// How https origins are verified.
    package var tls = TLSSettings()
    /// Fields added to every origin request; they win over forwarded client fields.
    package var extraHeaders: [(name: String, value: String)] = []
    /// Lowercased client fields sent on besides `UpstreamHeaders.defaultForwarded`.
    package var forwardedHeaders: [String] = []
    /// Where requests may go (`--allow-origin`), checked before every hop and redirect.
    package var destinations = DestinationPolicy.any
    /// `--strip-cmcd`: origin requests lose the player's CTA-5004 CMCD query argument and `CMCD-*` fields.
    package var stripsCMCD = false
    /// The parent proxy origin requests go through (`--upstream-proxy`), if any.
    package var parentProxy: ParentProxy?

    /// The parent proxy used for `host`, or nil (straight to the origin).
    package func parent(for host: String) -> ParentProxy? {
        parentProxy.flatMap { $0.isUsed(for: host) ? $0 : nil }
    }

    package init() {}
}

/// How origin certificates are checked.
package struct TLSSettings: Sendable, Hashable {
    /// A PEM file of CA certificates trusted besides the system store.
    package var caFile: String?
    /// False only when the user asked for it by name (`--insecure`).
    package var verifyCertificates = true
}

/// Why an origin request failed.
package enum UpstreamError: Error, Sendable, Equatable, CustomStringConvertible {
    case resolve(String)
    case connect(String)
    case timeout(String)
    case protocolViolation(String)
    case closedEarly(String)
    /// The TLS handshake failed or the origin's certificate was refused.
    case tls(String)
    /// A redirect could not be followed (loop, too many hops, bad Location).
    case redirect(String)
    /// The configuration cannot be used (bad CA file, reserved header name…).
    case configuration(String)
    /// The destination is outside the allowed origins (`--allow-origin`): 403.
    case forbidden(String)

    /// Timeouts become 504 for the client; everything else 502.
    package var isTimeout: Bool { if case .timeout = self { true } else { false } }

    package var description: String {
        switch self {
        case .resolve(let reason): return "cannot resolve host: \(reason)"
        case .connect(let reason): return "cannot connect: \(reason)"
        case .timeout(let reason): return "timed out: \(reason)"
        case .protocolViolation(let reason): return "bad response: \(reason)"
        case .closedEarly(let reason): return "connection closed early: \(reason)"
        case .tls(let reason): return "TLS failed: \(reason)"
        case .redirect(let reason): return "redirect not followed: \(reason)"
        case .configuration(let reason): return "bad configuration: \(reason)"
        case .forbidden(let reason): return "destination not allowed: \(reason)"
        }
    }
}

/// The release, in the User-Agent and `hc_version` (`HC_VERSION_*` in include/httpcache.h must match it).
package enum HTTPCacheVersion {
    package static let major: Int32 = 0
    package static let minor: Int32 = 2
    package static let patch: Int32 = 0
    /// Static and NUL-terminated: hc_version hands out its address.
    package static let text: StaticString = "0.2.0"
}
