// Turning a URI written in a playlist into the absolute URL it names
// (RFC 3986 §5.2, through OriginURL), or deciding to leave it alone.

/// Resolves playlist URIs against the playlist's own (final) URL.
struct HLSURIResolver {
    let base: OriginURL

    init(playlistURL: String) throws(HLSError) {
        guard let base = OriginURL.parse(playlistURL) else { throw .invalidPlaylistURL(playlistURL) }
        self.base = base
    }

    /// The absolute http(s) URL of `reference`, or nil when it must stay as
    /// written: empty, another scheme (`skd:`, `data:`, …), or not a URL
    /// OriginURL accepts (blanks, userinfo, a bad host).
    func resolve(_ reference: String) -> String? {
        guard !reference.isEmpty else { return nil }
        if let scheme = Self.scheme(of: reference) {
            guard ASCII.equalsIgnoringCase(scheme, "http") || ASCII.equalsIgnoringCase(scheme, "https") else {
                return nil
            }
            return OriginURL.parse(reference)?.string
        }
        return base.resolving(reference)?.string
    }

    /// The scheme of an absolute reference: letters, digits, "+-." before
    /// the first ":", starting with a letter (RFC 3986 §3.1).
    static func scheme(of reference: String) -> String? {
        let u = reference.utf8
        guard let first = u.first, (ASCII.lower(first) &- 0x61) < 26 else { return nil }
        for i in u.indices.dropFirst() {
            let c = u[i]
            if c == ASCII.colon { return String(reference[..<i]) }
            let ok = (ASCII.lower(c) &- 0x61) < 26 || ASCII.isDigit(c)
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
            if !ok { return nil }
        }
        return nil
    }
}
