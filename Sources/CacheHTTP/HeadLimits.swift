// Limits and errors shared by the request and response head parsers.

package struct HeadLimits: Sendable {
    /// Longest start line, without its line terminator.
    package var maxRequestLine = 8192
    /// Largest field section: every byte after the start line's terminator,
    /// through the blank line that ends the head. The start line is excluded
    /// (it has its own limit).
    package var maxHeaderBytes = 16384
    package var maxHeaderCount = 100

    package init() {}

    package init(maxRequestLine: Int, maxHeaderBytes: Int, maxHeaderCount: Int) {
        self.maxRequestLine = maxRequestLine
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
    }
}

package enum HeadParseError: Error, Equatable, Sendable {
    /// The reason is short and safe to put in a response body or a log.
    case badRequest(String)
    case uriTooLong
    case headersTooLarge
    case versionNotSupported
    /// A request body larger than the proxy buffers (RFC 9110 §15.5.14).
    case contentTooLarge
    /// A request transfer coding the proxy does not implement (RFC 9112 §6.1: 501).
    case codingNotImplemented

    /// The response status a server answers this error with.
    package var status: Int {
        switch self {
        case .badRequest: return 400
        case .uriTooLong: return 414
        case .headersTooLarge: return 431
        case .versionNotSupported: return 505
        case .contentTooLarge: return 413
        case .codingNotImplemented: return 501
        }
    }
}
