/// One member of a Cache-Status field (RFC 9211): how this cache handled a
/// response, as the value `name; hit; ttl=120` or
/// `name; fwd=uri-miss; fwd-status=200; stored`.
package struct CacheStatusField: Sendable, Equatable {
    /// Why the request went forward (RFC 9211 §2.2). The raw values are the
    /// words of the field, the access log and /metrics.
    package enum Forward: String, Sendable, CaseIterable {
        /// The cache had to be bypassed: a local route, an error found before
        /// any lookup, a request the cache was told not to handle.
        case bypass
        /// The method is not cacheable (POST, PUT, DELETE…): passed through.
        case method
        /// Nothing stored for the URI.
        case uriMiss = "uri-miss"
        /// Something stored for the URI, but not this request's variant (Vary).
        case varyMiss = "vary-miss"
        /// Stored, but stale: validated with the origin.
        case stale
        /// Stored, but only some of the bytes asked for: the rest fetched.
        case partial
        /// A stored response could have answered, but the request (no-cache,
        /// max-age…) wanted the origin.
        case request
    }

    /// The response came from the cache (no origin request for it).
    package var hit = false
    package var forward: Forward?
    /// The status the origin answered the forwarded request with.
    package var forwardStatus: Int?
    /// Seconds the response is still fresh (negative: stale by that much).
    package var ttl: Int?
    /// The forwarded response was stored.
    package var stored = false
    /// The request joined another's origin request for the same response.
    package var collapsed = false
    /// More on how (RFC 9211 §2.8), an sf-token: `prefetched` for a hit a
    /// prefetch stored ahead of the player.
    package var detail: String?

    /// The detail of a hit a prefetch stored.
    package static let prefetched = "prefetched"

    package init(hit: Bool = false, forward: Forward? = nil, forwardStatus: Int? = nil, ttl: Int? = nil,
                 stored: Bool = false, collapsed: Bool = false) {
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttl = ttl
        self.stored = stored
        self.collapsed = collapsed
    }

    /// A response answered without the cache (RFC 9211 `fwd=bypass`).
    package static let bypass = CacheStatusField(forward: .bypass)

    /// The field value with this cache's `name` (an sf-token, see `isValidName`).
    package func value(name: String) -> String {
        var text = name
        if hit { text += "; hit" }
        if let forward { text += "; fwd=" + forward.rawValue }
        if let forwardStatus { text += "; fwd-status=\(forwardStatus)" }
        if let ttl { text += "; ttl=\(ttl)" }
        if stored { text += "; stored" }
        if collapsed { text += "; collapsed" }
        if let detail { text += "; detail=" + detail }
        return text
    }

    /// The word the access log and /metrics use for this outcome: `hit`, or
    /// the forward reason (`uri-miss`, `stale`, `partial`, …).
    package var word: String { hit ? "hit" : forward?.rawValue ?? "hit" }

    /// The access log's word: `word`, with the detail when there is one (`hit;detail=prefetched`).
    package var logWord: String { detail.map { word + ";detail=" + $0 } ?? word }

    /// Every word `word` gives, in a fixed order (for /metrics).
    package static let words = ["hit"] + Forward.allCases.map(\.rawValue)

    /// Whether `name` can stand as a cache name: an sf-token (RFC 8941
    /// §3.3.4), a letter or `*` then token characters, `:` or `/`.
    package static func isValidName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard let first = u.first, (first | 0x20) >= UInt8(ascii: "a") && (first | 0x20) <= UInt8(ascii: "z")
            || first == UInt8(ascii: "*") else { return false }
        return u.dropFirst().allSatisfy { ASCII.isTokenChar($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") }
    }

    /// `head` (a serialized response head, possibly followed by a body) with
    /// a `Cache-Status: value` line added at the end of its fields.
    package static func inserting(_ value: String, into head: [UInt8]) -> [UInt8] {
        let end = Array("\r\n\r\n".utf8)
        guard head.count >= 4, let at = (0...(head.count - 4)).first(where: { head[$0..<($0 + 4)].elementsEqual(end) })
        else { return head }
        var out = head
        out.insert(contentsOf: Array(("\r\nCache-Status: " + value).utf8), at: at)
        return out
    }
}
