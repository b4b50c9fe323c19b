// Proxy URL paths that carry the origin URL:
//
//   /p/<base64url, no padding, of the origin URL's exact UTF-8>/<name>
//
// The origin travels byte-exact (fragment included, if the caller gave one;
// OriginURL drops it when fetching). <name> is only for humans and players
// that sniff the file extension; decoding ignores it, as it ignores any query
// a player appends to the proxy URL.
//
// Signed (LAN mode), the signature of the origin is one more segment:
//
//   /p/<base64url origin>/<43 base64url characters of HMAC-SHA256>/<name>
//
// The origin is decoded the same way from both forms; only the proxy's access
// policy looks at the signature.

package enum ProxyURL {
    private static let prefix = "/p/"

    /// nil unless `origin` parses as an http/https OriginURL. With a
    /// `signature` (see URLSigner), the signed form.
    package static func path(forOrigin origin: String, signature: String? = nil) -> String? {
        guard let url = OriginURL.parse(origin) else { return nil }
        var out: [UInt8] = Array(prefix.utf8)
        Base64URL.encode(origin.utf8, into: &out)
        out.append(UInt8(ascii: "/"))
        if let signature {
            out.append(contentsOf: signature.utf8)
            out.append(UInt8(ascii: "/"))
        }
        appendName(of: url.pathAndQuery, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The origin URL string carried by a proxy request target, or nil when
    /// the target is not a well-formed proxy path for an http/https origin.
    package static func origin(fromTarget target: String) -> String? {
        guard let origin = decodedOrigin(target), OriginURL.parse(origin) != nil else { return nil }
        return origin
    }

    /// The parsed origin URL a proxy request target carries, or nil as
    /// `origin(fromTarget:)`. Parses the URL once (the proxy's per-request path).
    package static func originURL(fromTarget target: String) -> OriginURL? {
        decodedOrigin(target).flatMap(OriginURL.parse)
    }

    /// The segment after the encoded origin when another segment follows it
    /// (the signed form), else nil. Not checked here: the policy verifies it.
    package static func signature(fromTarget target: String) -> Substring? {
        let end = target.firstIndex(of: "?") ?? target.endIndex
        let path = target[..<end]
        guard path.hasPrefix(prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        guard let first = rest.firstIndex(of: "/") else { return nil }
        let afterOrigin = rest[rest.index(after: first)...]
        guard let second = afterOrigin.firstIndex(of: "/") else { return nil }
        return afterOrigin[..<second]
    }

    /// The decoded (not yet URL-checked) UTF-8 string of a proxy path.
    private static func decodedOrigin(_ target: String) -> String? {
        let t = target.utf8
        let end = t.firstIndex(of: UInt8(ascii: "?")) ?? t.endIndex
        let path = t[..<end]
        guard path.starts(with: prefix.utf8) else { return nil }
        let encoded = path.dropFirst(prefix.utf8.count)
        // The name segment must be present (possibly empty): "/p/<b64>/".
        guard let slash = encoded.firstIndex(of: UInt8(ascii: "/")), slash > encoded.startIndex,
              let bytes = Base64URL.decode(encoded[..<slash])
        else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Last path segment (before the query), made safe as one path segment:
    /// RFC 3986 unreserved bytes and existing valid %XX escapes are kept,
    /// everything else is percent-encoded. "index" stands in for an empty name.
    private static func appendName(of pathAndQuery: String, to out: inout [UInt8]) {
        let u = Array(pathAndQuery.utf8)
        let pathEnd = u.firstIndex(of: UInt8(ascii: "?")) ?? u.count
        let start = (u[..<pathEnd].lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
        let name = u[start..<pathEnd]
        if name.isEmpty {
            out.append(contentsOf: "index".utf8)
            return
        }
        // "." and ".." would be collapsed by clients as dot-segments.
        if name.allSatisfy({ $0 == UInt8(ascii: ".") }) && name.count <= 2 {
            for _ in name { out.append(contentsOf: "%2E".utf8) }
            return
        }
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var i = name.startIndex
        while i < name.endIndex {
            let c = name[i]
            if isUnreserved(c) {
                out.append(c)
            } else if c == UInt8(ascii: "%"), i + 2 < name.endIndex,
                      ASCII.hexValue(name[i + 1]) != nil, ASCII.hexValue(name[i + 2]) != nil {
                out.append(contentsOf: name[i...(i + 2)])
                i += 3
                continue
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(c >> 4)])
                out.append(hex[Int(c & 15)])
            }
            i += 1
        }
    }

    @inline(__always)
    private static func isUnreserved(_ c: UInt8) -> Bool {
        (c &- 0x30) < 10 || (ASCII.lower(c) &- 0x61) < 26
            || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "~")
    }
}
