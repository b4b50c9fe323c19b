// The HC_E* codes of include/httpcache.h and their hc_strerror texts.

/// A C API result code; raw values are the header's HC_* constants.
enum HCResult: Int32, Sendable {
    case ok = 0
    case invalid = -1
    case noMemory = -2
    case io = -3
    case busy = -4
    case notFound = -5
    case timedOut = -6
    case canceled = -7
    case upstream = -8
    case tls = -9
    case range = -10
    case closed = -11

    /// Static strings: hc_strerror returns their addresses, never freed.
    var message: StaticString {
        switch self {
        case .ok: "success"
        case .invalid: "invalid argument"
        case .noMemory: "out of memory"
        case .io: "input/output error in the cache folder"
        case .busy: "cache folder is in use by another cache"
        case .notFound: "resource not found"
        case .timedOut: "timed out"
        case .canceled: "canceled"
        case .upstream: "origin server error"
        case .tls: "TLS or certificate error"
        case .range: "offset or length out of range"
        case .closed: "cache is closed"
        }
    }

    /// The C return value.
    var code: Int32 { rawValue }
}

@c public func hc_strerror(_ code: Int32) -> UnsafePointer<CChar> {
    let message: StaticString = HCResult(rawValue: code)?.message ?? "unknown error"
    return message.cString
}
