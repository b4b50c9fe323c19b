// Turning a URI written in a playlist into the absolute URL it names
// (RFC 3986 §5.2, through OriginURL), or deciding to leave it alone.

/// Resolves playlist URIs against the playlist's own (final) URL.
struct HLSURIResolver {
    let base: OriginURL
    /// "scheme://host[:port]/dir/" of the base, dot segments removed: a plain
    /// relative reference ("seg-1.ts?x"), by far the most common kind,
    /// resolves to this plus itself.
    private let directory: [UInt8]

    init(playlistURL: String) throws(HLSError) {
        guard let base = OriginURL.parse(playlistURL) else { throw .invalidPlaylistURL(playlistURL) }
        self.base = base
        let path = base.pathAndQuery.utf8.prefix { $0 != UInt8(ascii: "?") }
        let directoryPath = path[...(path.lastIndex(of: UInt8(ascii: "/")) ?? path.startIndex)]
        directory = Array((base.scheme + "://" + base.hostHeader).utf8) + removeDotSegments(directoryPath)
    }

    /// The absolute http(s) URL of `reference`, or nil when it must stay as
    /// written: empty, another scheme (`skd:`, `data:`, …), not a URL
    /// OriginURL accepts (blanks, userinfo, a bad host), or holding an
    /// EXT-X-DEFINE variable reference `{$name}` that only the client can
    /// substitute (RFC 8216bis §4.3).
    func resolve(_ reference: String) -> String? {
        var copy = reference
        return copy.withUTF8 { resolve(bytes: $0) }
    }

    /// `resolve` of the UTF-8 bytes of a reference.
    func resolve(bytes r: UnsafeBufferPointer<UInt8>) -> String? {
        guard !r.isEmpty, !Self.hasVariableReference(r) else { return nil }
        if let schemeLength = OriginURL.schemeLength(r) {
            let scheme = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: r[..<schemeLength]))[...]
            guard ASCII.equalsIgnoringCase(scheme, "http") || ASCII.equalsIgnoringCase(scheme, "https") else { return nil }
            return OriginURL.parse(String(decoding: r, as: UTF8.self))?.string
        }
        if Self.isPlainRelativePath(r) {
            let d = directory
            return String(unsafeUninitializedCapacity: d.count + r.count) { out in
                _ = out.initialize(from: d)
                _ = UnsafeMutableBufferPointer(rebasing: out[d.count...]).initialize(from: r)
                return d.count + r.count
            }
        }
        return base.resolving(String(decoding: r, as: UTF8.self))?.string
    }

    private static func hasVariableReference(_ r: UnsafeBufferPointer<UInt8>) -> Bool {
        guard r.count >= 2 else { return false }
        for i in 0..<(r.count - 1) where r[i] == UInt8(ascii: "{") && r[i + 1] == UInt8(ascii: "$") { return true }
        return false
    }

    /// A relative-path reference that resolution only appends to the base
    /// directory, with nothing OriginURL would refuse or rewrite: no leading
    /// "/" or "?", no "." or ".." segment, no fragment, no blank or control
    /// byte. The same result as `base.resolving(reference)?.string` (a test
    /// holds the two side by side), without its copies.
    static func isPlainRelativePath(_ r: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = r.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "?") else { return false }
        var segmentStart = true, dots = 0, inQuery = false
        for c in r {
            if c <= 0x20 || c == 0x7F || c == UInt8(ascii: "#") { return false }
            if inQuery { continue } // dots in the query are just bytes
            if c == UInt8(ascii: "?") {
                if segmentStart, dots > 0 { return false }
                inQuery = true
            } else if c == UInt8(ascii: "/") {
                if segmentStart, dots > 0 { return false } // "." or ".." segment
                segmentStart = true; dots = 0
            } else if c == UInt8(ascii: "."), segmentStart, dots < 2 {
                dots += 1
            } else {
                segmentStart = false
            }
        }
        return inQuery || !(segmentStart && dots > 0)
    }
}
