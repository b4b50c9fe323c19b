/// One member of a Cache-Status field (RFC 9211), as `name; hit; ttl=120` or
/// `name; fwd=uri-miss; fwd-status=200; stored`.
package struct CacheStatusField: Sendable, Equatable {
    /// Why the request went forward (§2.2); the raw values are the words of the field, the
    /// access log and /metrics.
    package enum Forward: String, Sendable, CaseIterable {
        case bypass  // a local route, an error before any lookup, a request the cache must not handle
        case method  // not a cacheable method: passed through
        case uriMiss = "uri-miss"
        case varyMiss = "vary-miss"  // stored for the URI, but not this request's variant (Vary)
        case stale  // validated with the origin
        case partial  // only some of the bytes asked for were stored
        case request  // a stored response could have answered, but the request (no-cache…) wanted the origin
    }

    package var hit = false  // no origin request for the response
    package var forward: Forward?
    package var forwardStatus: Int?
    package var ttl: Int?  // seconds still fresh (negative: stale by that much)
    package var stored = false
    package var collapsed = false  // joined another request's origin request
    /// An sf-token (§2.8): `prefetched` for a hit a prefetch stored ahead of the player.
    package var detail: String?

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

    /// The outcome's word in the access log and /metrics: `hit` or the forward reason.
    package var word: String { hit ? "hit" : forward?.rawValue ?? "hit" }
    /// `word` with any detail (`hit;detail=prefetched`), for the access log.
    package var logWord: String { detail.map { word + ";detail=" + $0 } ?? word }
    /// Every `word`, in a fixed order (for /metrics).
    package static let words = ["hit"] + Forward.allCases.map(\.rawValue)

    /// An sf-token (RFC 8941 §3.3.4): a letter or `*`, then token characters, `:` or `/`.
    package static func isValidName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard let first = u.first, (first | 0x20) >= UInt8(ascii: "a") && (first | 0x20) <= UInt8(ascii: "z")
            || first == UInt8(ascii: "*") else { return false }
        return u.dropFirst().allSatisfy { ASCII.isTokenChar($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") }
    }

    /// A serialized head (maybe followed by a body) with `Cache-Status: value` as its last field.
    package static func inserting(_ value: String, into head: [UInt8]) -> [UInt8] {
        guard let at = head.firstRange(of: Array("\r\n\r\n".utf8))?.lowerBound else { return head }
        var out = head
        out.insert(contentsOf: Array(("\r\nCache-Status: " + value).utf8), at: at)
        return out
    }
}
