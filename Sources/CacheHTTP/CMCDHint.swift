/// What a player says it fetches next (CMCD `nor`, next object request, and
/// `nrr`, next range request): an origin URL and maybe a byte range, on the
/// origin of the request that carried it. Pure: where it is fetched from is
/// the caller's.
package struct CMCDHint: Sendable, Equatable {
    /// The origin URL of the next object.
    package var url: OriginURL
    /// The bytes named by `nrr`, when it names a range.
    package var range: Range<Int64>?

    package init(url: OriginURL, range: Range<Int64>?) {
        self.url = url
        self.range = range
    }

    /// The hint of `cmcd` for a request of `origin`; nil when it names none,
    /// a malformed one, or one on another origin (a hint never widens what
    /// the player could have asked for itself).
    ///
    /// `nor` is a URL-encoded reference relative to the request's URL. Through
    /// a proxy URL (`proxyTarget`, the request's target) it is resolved against
    /// that target first, and the proxy URL it names decoded; a reference that
    /// stays in the request's own proxy URL (`/p/…/seg-2.ts`: only the name,
    /// which decoding ignores, changed) is resolved against the origin URL.
    /// Without `nor`, `nrr` names a range of the object being requested.
    package init?(_ cmcd: CMCD, origin: OriginURL, proxyTarget: String? = nil) {
        let range = cmcd.string(.nextRange).flatMap(Self.range)
        if cmcd.string(.nextRange) != nil && range == nil { return nil }
        guard let reference = cmcd.string(.nextObject) else {
            guard let range else { return nil }
            self.init(url: origin, range: range)
            return
        }
        let decoded = String(decoding: CMCD.percentDecoded(Array(reference.utf8)), as: UTF8.self)
        guard !decoded.isEmpty, let next = Self.resolve(decoded, origin: origin, proxyTarget: proxyTarget),
              next.scheme == origin.scheme, next.host == origin.host, next.port == origin.port,
              next != origin || range != nil else { return nil }
        self.init(url: next, range: range)
    }

    private static func resolve(_ reference: String, origin: OriginURL, proxyTarget: String?) -> OriginURL? {
        if let proxyTarget, let proxyBase = OriginURL.parse("http://127.0.0.1" + proxyTarget),
           let named = proxyBase.resolving(reference), ProxyURL.isProxyTarget(named.pathAndQuery),
           let decoded = ProxyURL.originURL(fromTarget: named.pathAndQuery), decoded != origin {
            return decoded
        }
        return origin.resolving(reference)
    }

    /// `first-last` (inclusive, as CTA-5004 writes a range) as a range.
    static func range(_ text: String) -> Range<Int64>? {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ (1...18).contains($0.utf8.count) && $0.utf8.allSatisfy(ASCII.isDigit) }),
              let first = Int64(parts[0]), let last = Int64(parts[1]), first <= last else { return nil }
        return first..<(last + 1)
    }
}
