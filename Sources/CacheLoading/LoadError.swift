import CacheHTTP
import CacheUpstream

/// Why a reader cannot deliver.
package enum LoadError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The origin answered with an error status; passed to the client, not cached.
    case originStatus(status: Int, headers: HTTPHeaders, body: [UInt8])
    /// The origin could not be reached or misbehaved.
    case upstream(UpstreamError)
    case storage(String)
    /// The origin's response contradicts what was asked or what is cached.
    case mismatch(String)
    /// The resource changed at the origin while this response was using the old version.
    case changed(String)
    /// The stored response needs the origin, which could not be asked or reached
    /// (only-if-cached, must-revalidate offline): 504 (RFC 9111 §4.2.4, §5.2.1.7).
    case notCached(String)
    /// The host's decryption choice failed (lookup threw, unusable key): nothing is served or touched.
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

/// What the client's response head is built from. Passed along a response's whole path, so its fields live in
/// one immutable box: a copy is one reference count, a (rare) change makes a new box.
package struct ContentInfo: Sendable {
    private struct Fields {
        var totalLength: Int64?
        var contentType: String?
        var etag: String?
        var lastModified: String?
        var headers: HTTPHeaders
        var replayedLines: [UInt8]?
        var age: Int?
        var status = 200
        var ttl: Int?
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    package init(totalLength: Int64?, contentType: String?, etag: String?, lastModified: String?,
                 headers: HTTPHeaders = HTTPHeaders()) {
        box = Box(Fields(totalLength: totalLength, contentType: contentType, etag: etag,
                         lastModified: lastModified, headers: headers))
    }

    private mutating func change(_ edit: (inout Fields) -> Void) {
        var fields = box.fields
        edit(&fields)
        box = Box(fields)
    }

    /// Seconds fresh from now (negative: stale), for Cache-Status's ttl (RFC 9211 §2.5).
    package var ttl: Int? { box.fields.ttl }

    /// 200, or another status the transparent modes stored (a 404…), replayed whole.
    package var status: Int { box.fields.status }

    /// Nil while the origin sends a body of unknown length.
    package var totalLength: Int64? {
        get { box.fields.totalLength }
        set { change { $0.totalLength = newValue } }
    }
    package var contentType: String? {
        get { box.fields.contentType }
        set { change { $0.contentType = newValue } }
    }
    package var etag: String? {
        get { box.fields.etag }
        set { change { $0.etag = newValue } }
    }
    package var lastModified: String? { box.fields.lastModified }
    /// The stored end-to-end fields to replay; framing and the fields above are the plan's.
    package var headers: HTTPHeaders { box.fields.headers }
    /// `headers` but the plan's own and Age, rendered once per stored head for hits to copy.
    package var replayedLines: [UInt8]? {
        get { box.fields.replayedLines }
        set { change { $0.replayedLines = newValue } }
    }
    /// The Age sent with `replayedLines`.
    package var age: Int? {
        get { box.fields.age }
        set { change { $0.age = newValue } }
    }

    /// The served fields in one change (a hit sets all three).
    package mutating func setServing(headers: HTTPHeaders, replayedLines: [UInt8]?, age: Int?, status: Int = 200,
                                     ttl: Int? = nil) {
        change { fields in
            fields.headers = headers
            fields.replayedLines = replayedLines
            fields.age = age
            fields.status = status
            fields.ttl = ttl
        }
    }
}
