import CacheHTTP
import CacheUpstream

/// Why a reader cannot deliver.
package enum LoadError: Error, CustomStringConvertible, Sendable {
    /// The origin answered with an error status; passed to the client, not cached.
    case originStatus(status: Int, headers: HTTPHeaders, body: [UInt8])
    /// The origin could not be reached or misbehaved.
    case upstream(UpstreamError)
    /// The cache could not store bytes.
    case storage(String)
    /// The origin's response contradicts what was asked or what is cached.
    case mismatch(String)
    /// The resource changed at the origin while this response was using the old version.
    case changed(String)
    /// The stored response may not be used without the origin, and the
    /// origin could not be asked or reached (only-if-cached, must-revalidate
    /// offline): 504 (RFC 9111 §4.2.4, §5.2.1.7).
    case notCached(String)
    /// The host's decryption choice for the resource failed (key lookup threw,
    /// or gave an unusable key): nothing is served, nothing cached is touched.
    case decryption(String)

    package var description: String {
        switch self {
        case .originStatus(let status, _, _): return "origin answered \(status)"
        case .upstream(let error): return error.description
        case .storage(let reason): return "storage: \(reason)"
        case .mismatch(let reason): return reason
        case .changed(let what): return "the resource changed at the origin (\(what))"
        case .notCached(let why): return "no usable cached response: \(why)"
        case .decryption(let reason): return reason
        }
    }
}

/// What the client's response head is built from.
package struct ContentInfo: Sendable {
    /// Nil while the origin sends a body of unknown length.
    package var totalLength: Int64?
    package var contentType: String?
    package var etag: String?
    package var lastModified: String?
    /// The other end-to-end fields of the stored response to replay (Date,
    /// Age, Cache-Control, Content-Encoding, Vary, Via…); the framing and the
    /// fields above are the plan's own.
    package var headers = HTTPHeaders()
    /// `headers` but the plan's own fields and Age, rendered as head lines
    /// once per stored head (a hit copies them instead of filtering fields).
    package var replayedLines: [UInt8]?
    /// The Age sent with `replayedLines`.
    package var age: Int?

    package init(totalLength: Int64?, contentType: String?, etag: String?, lastModified: String?,
                 headers: HTTPHeaders = HTTPHeaders()) {
        self.totalLength = totalLength
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.headers = headers
    }
}
