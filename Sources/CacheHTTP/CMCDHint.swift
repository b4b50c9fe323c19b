/// What a player says it fetches next (CMCD `nor`, `nrr`): an origin URL and maybe a byte
/// range, on the origin of the request that carried it.
package struct CMCDHint: Sendable, Equatable {
    package var url: OriginURL
    package var range: Range<Int64>?

    package init(url: OriginURL, range: Range<Int64>?) {
        self.url = url
        self.range = range
    }

    /// Nil for none, a malformed one, or one on another origin (a hint never widens what the
    /// player could ask itself). `nor` is URL-encoded, relative to the request's URL: through a
    /// proxy URL (`proxyTarget`) resolved against it and the named proxy URL decoded, unless it
    /// stays in the same proxy URL (`/p/…/seg-2.ts`: only the ignored name changed), then
    /// against the origin. Without `nor`, `nrr` is a range of the requested object.
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

    /// `first-last`, inclusive.
    static func range(_ text: String) -> Range<Int64>? {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ (1...18).contains($0.utf8.count) && $0.utf8.allSatisfy(ASCII.isDigit) }),
              let first = Int64(parts[0]), let last = Int64(parts[1]), first <= last else { return nil }
        return first..<(last + 1)
    }
}
