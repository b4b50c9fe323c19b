/// Knobs of the origin client.
package struct UpstreamConfiguration: Sendable {
    /// Milliseconds to establish a connection.
    package var connectTimeout: UInt64 = 10_000
    /// Milliseconds without a byte from the origin while waiting for one.
    package var readTimeout: UInt64 = 30_000
    /// Idle keep-alive connections kept per origin.
    package var maxIdlePerOrigin = 8
    /// Milliseconds an idle keep-alive connection is kept.
    package var idleTimeout: UInt64 = 60_000
    package var userAgent = "HTTPCache/0.1"

    package init() {}
}

/// Why an origin request failed.
package enum UpstreamError: Error, Sendable, CustomStringConvertible {
    case resolve(String)
    case connect(String)
    case timeout(String)
    case protocolViolation(String)
    case closedEarly(String)

    /// Timeouts become 504 for the client; everything else 502.
    package var isTimeout: Bool {
        if case .timeout = self { return true }
        return false
    }

    package var description: String {
        switch self {
        case .resolve(let reason): return "cannot resolve host: \(reason)"
        case .connect(let reason): return "cannot connect: \(reason)"
        case .timeout(let reason): return "timed out: \(reason)"
        case .protocolViolation(let reason): return "bad response: \(reason)"
        case .closedEarly(let reason): return "connection closed early: \(reason)"
        }
    }
}
