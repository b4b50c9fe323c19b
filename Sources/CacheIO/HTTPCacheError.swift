/// An error from HTTPCache: a stable code and a readable message. The codes are shared by the
/// Swift API, the C API (`HC_E…`, same numbers) and the CLI (`exitStatus`). It lives in the
/// lowest layer so every layer reports in it; the admin routes send it as is (Codable), so the
/// CLI shows the same error whether it opened the folder or asked the proxy serving it.
public struct HTTPCacheError: Error, CustomStringConvertible, Sendable, Equatable, Codable {
    /// Stable error codes. Never renumbered; new ones are only added.
    public enum Code: Int32, Sendable, CaseIterable, Codable {
        /// A bad argument: an unknown option, a URL that is not http(s), a bad value.
        case invalidArgument = -1
        case noMemory = -2
        /// The cache folder or a file could not be read or written.
        case io = -3
        /// The cache folder is in use by another process (or another cache in this one).
        case busy = -4
        /// Not cached, or the origin answered 404/410.
        case notFound = -5
        case timedOut = -6
        case canceled = -7
        /// The origin failed: unreachable, an error status, a response that contradicts the request.
        case upstream = -8
        /// The TLS handshake failed or the origin's certificate was refused.
        case tls = -9
        /// A byte range outside the resource, or an incomplete resource where a whole one is needed.
        case range = -10
        /// The cache (or the reader, or the proxy) is closed.
        case closed = -11
        /// The folder's key is wrong, missing, or given for a folder made without encryption.
        case key = -12
        /// A download does not fit in the cache's size limit (with what other downloads hold).
        case tooLarge = -13
        /// Something else listens on the proxy's port already.
        case addressInUse = -14

        /// A short fixed text for the code.
        public var text: String { staticText.description }

        /// NUL-terminated: `hc_strerror` hands out its address, no copy.
        public var staticText: StaticString {
            switch self {
            case .invalidArgument: "invalid argument"
            case .noMemory: "out of memory"
            case .io: "input/output error in the cache folder"
            case .busy: "cache folder in use"
            case .notFound: "not found"
            case .timedOut: "timed out"
            case .canceled: "canceled"
            case .upstream: "origin failed"
            case .tls: "TLS failed"
            case .range: "range not satisfiable"
            case .closed: "closed"
            case .key: "wrong or missing encryption key for the cache folder"
            case .tooLarge: "does not fit in the cache limit"
            case .addressInUse: "address already in use"
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The CLI's exit status for this error: 10 + |code| (11 … 24).
    public var exitStatus: Int32 { 10 - code.rawValue }
}
