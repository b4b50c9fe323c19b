import CacheHTTP
import CacheUpstream

/// Why a reader cannot deliver.
package enum LoadError: Error, CustomStringConvertible, Sendable, Equatable {
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
    /// The stored response needs the origin, which could not be asked or reached
    /// (only-if-cached, must-revalidate offline): 504 (RFC 9111 §4.2.4, §5.2.1.7).
    case notCached(String)
    /// The host's decryption choice failed (lookup threw, unusable key): nothing is served
    /// or touched.
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

/// What the client's response head is built from. Passed along a response's whole path,
/// so its fields live in one immutable box: a copy is one reference count, a (rare)
/// change makes a new box.
package struct ContentInfo: Sendable {
    private final class Box: Sendable {
        let totalLength: Int64?
        let contentType: String?
        let etag: String?
        let lastModified: String?
        let headers: HTTPHeaders
        let replayedLines: [UInt8]?
        let age: Int?
        let status: Int
        let ttl: Int?

        init(totalLength: Int64?, contentType: String?, etag: String?, lastModified: String?,
             headers: HTTPHeaders, replayedLines: [UInt8]?, age: Int?, status: Int = 200, ttl: Int? = nil) {
            self.status = status
            self.ttl = ttl
            self.totalLength = totalLength
            self.contentType = contentType
            self.etag = etag
            self.lastModified = lastModified
            self.headers = headers
            self.replayedLines = replayedLines
            self.age = age
        }
    }

    private var box: Box

    package init(totalLength: Int64?, contentType: String?, etag: String?, lastModified: String?,
                 headers: HTTPHeaders = HTTPHeaders()) {
        box = Box(totalLength: totalLength, contentType: contentType, etag: etag, lastModified: lastModified,
                  headers: headers, replayedLines: nil, age: nil)
    }

    /// A copy of the box with one field changed.
    private mutating func change(totalLength: Int64?? = nil, contentType: String?? = nil, etag: String?? = nil,
                                 headers: HTTPHeaders? = nil,
                                 replayedLines: [UInt8]?? = nil, age: Int?? = nil, status: Int? = nil,
                                 ttl: Int?? = nil) {
        box = Box(totalLength: totalLength ?? box.totalLength, contentType: contentType ?? box.contentType,
                  etag: etag ?? box.etag, lastModified: box.lastModified,
                  headers: headers ?? box.headers, replayedLines: replayedLines ?? box.replayedLines,
                  age: age ?? box.age, status: status ?? box.status, ttl: ttl ?? box.ttl)
    }

    /// Seconds fresh from now (negative: stale), for Cache-Status's ttl (RFC 9211 §2.5).
    package var ttl: Int? { box.ttl }

    /// 200, or another status the transparent modes stored (a 404…), replayed whole.
    package var status: Int { box.status }

    /// Nil while the origin sends a body of unknown length.
    package var totalLength: Int64? {
        get { box.totalLength }
        set { change(totalLength: .some(newValue)) }
    }
    package var contentType: String? {
        get { box.contentType }
        set { change(contentType: .some(newValue)) }
    }
    package var etag: String? {
        get { box.etag }
        set { change(etag: .some(newValue)) }
    }
    package var lastModified: String? { box.lastModified }
    /// The stored end-to-end fields to replay; framing and the fields above are the plan's.
    package var headers: HTTPHeaders { box.headers }
    /// `headers` but the plan's own and Age, rendered once per stored head for hits to copy.

    package var replayedLines: [UInt8]? {
        get { box.replayedLines }
        set { change(replayedLines: .some(newValue)) }
    }
    /// The Age sent with `replayedLines`.
    package var age: Int? {
        get { box.age }
        set { change(age: .some(newValue)) }
    }

    /// The served fields in one change (a hit sets all three).
    package mutating func setServing(headers: HTTPHeaders, replayedLines: [UInt8]?, age: Int?, status: Int = 200,
                                     ttl: Int? = nil) {
        change(headers: headers, replayedLines: .some(replayedLines), age: .some(age), status: status, ttl: .some(ttl))
    }
}
