package struct HeadLimits: Sendable {
    package var maxRequestLine = 8192  // the start line, without its terminator
    package var maxHeaderBytes = 16384  // after the start line's terminator, through the blank line
    package var maxHeaderCount = 100

    package init() {}

    package init(maxRequestLine: Int, maxHeaderBytes: Int, maxHeaderCount: Int) {
        self.maxRequestLine = maxRequestLine
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
    }
}

package enum HeadParseError: Error, Equatable, Sendable {
    case badRequest(String)  // short and safe for a response body or a log
    case uriTooLong
    case headersTooLarge
    case versionNotSupported
    case contentTooLarge  // a request body past the proxy's buffer (RFC 9110 §15.5.14)
    case codingNotImplemented  // an unimplemented request transfer coding (RFC 9112 §6.1)

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
