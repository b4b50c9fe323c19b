/// Resolves playlist URIs against the playlist's final URL (RFC 3986 §5.2, through OriginURL).
struct HLSURIResolver {
    let base: OriginURL
    /// "scheme://host[:port]/dir/", dot segments removed: a plain relative reference
    /// ("seg-1.ts?x"), by far the most common, resolves to this plus itself.
    private let directory: [UInt8]

    init(playlistURL: String) throws(HLSError) {
        guard let base = OriginURL.parse(playlistURL) else { throw .invalidPlaylistURL(playlistURL) }
        self.base = base
        let path = base.pathAndQuery.utf8.prefix { $0 != UInt8(ascii: "?") }
        let directoryPath = path[...(path.lastIndex(of: UInt8(ascii: "/")) ?? path.startIndex)]
        directory = Array((base.scheme + "://" + base.hostHeader).utf8) + removeDotSegments(directoryPath)
    }

    /// Nil to keep it as written: empty, another scheme (`skd:`, `data:`), refused by OriginURL,
    /// or holding an EXT-X-DEFINE `{$name}` only the client can substitute (RFC 8216bis §4.3).
    func resolve(_ reference: String) -> String? {
        var copy = reference
        return copy.withUTF8 { resolve(bytes: $0) }
    }

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

    /// A reference resolution only appends to `directory`, nothing OriginURL would refuse or
    /// rewrite (leading "/" or "?", "." or ".." segment, fragment, blank, control): the result
    /// of `base.resolving(reference)?.string` (a test compares them) without its copies.
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
