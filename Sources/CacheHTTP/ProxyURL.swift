/// Proxy URL paths that carry the origin URL:
///   /p/<base64url, no padding, of the origin's exact UTF-8>/<name>
///   /p/<base64url origin>/<43 base64url chars of HMAC-SHA256>/<name>      (signed, LAN mode)
/// The origin travels byte-exact (a fragment too; OriginURL drops it when fetching). <name> is
/// for humans and extension-sniffing players; decoding ignores it and any appended query.
/// Base form, for URLs a player builds itself (DASH `$Number$` templates) or resolves:
///   /t/<base64url of "scheme://host[:port]/dir/">/<tail>
///   /t/<base64url base>~<43 base64url chars of HMAC-SHA256>/<tail>        (signed)
/// The origin is base + tail verbatim (query included). A tail may not climb out of its base
/// (no "." or ".." segment, escaped or not); the signature covers the base (`baseSubject`).
package enum ProxyURL {
    private static let prefix = "/p/"
    private static let basePrefix = "/t/"

    /// Whether a request target is a proxy URL (either form).
    package static func isProxyTarget(_ target: String) -> Bool {
        target.hasBytePrefix(prefix) || isBaseForm(target)
    }

    /// The base-form path of `origin`, cut at the last "/" before `cutBefore` (the first
    /// template "$") or the query, so the tail keeps what a player fills in. nil unless an
    /// http(s) OriginURL with a safe tail. With `sign` (given `baseSubject(base)`), signed.
    package static func basePath(forOrigin origin: String, cutBefore: UInt8? = UInt8(ascii: "$"),
                                 sign: ((String) -> String)? = nil) -> String? {
        guard let url = OriginURL.parse(origin) else { return nil }
        let full = Array(url.string.utf8)
        let pathStart = url.scheme.utf8.count + 3 + url.hostHeader.utf8.count
        let path = full[pathStart...]
        var limit = path.firstIndex(of: UInt8(ascii: "?")) ?? full.count
        if let cut = cutBefore, let mark = path.firstIndex(of: cut), mark < limit { limit = mark }
        guard let slash = full[pathStart..<limit].lastIndex(of: UInt8(ascii: "/")) else { return nil }
        let base = String(decoding: full[...slash], as: UTF8.self)
        let tail = full[(slash + 1)...]
        guard isSafeTail(tail) else { return nil }
        var out: [UInt8] = Array(basePrefix.utf8)
        Base64URL.encode(base.utf8, into: &out)
        if let sign {
            out.append(UInt8(ascii: "~"))
            out.append(contentsOf: sign(baseSubject(base)).utf8)
        }
        out.append(UInt8(ascii: "/"))
        out.append(contentsOf: tail)
        return String(decoding: out, as: UTF8.self)
    }

    /// What a base-form signature signs: never equal to an origin URL's subject.
    package static func baseSubject(_ base: String) -> String { "base " + base }

    /// What a signed target's signature must match (origin, or `baseSubject`) and the
    /// signature; nil without either.
    package static func signedSubject(fromTarget target: String) -> (subject: String, signature: Substring)? {
        if isBaseForm(target) {
            guard let parts = baseParts(target), let signature = parts.signature else { return nil }
            return (baseSubject(parts.base), signature)
        }
        guard let origin = origin(fromTarget: target), let signature = signature(fromTarget: target) else { return nil }
        return (origin, signature)
    }

    /// Targets are split at bytes, never Characters: "/" plus a combining mark is one Character.
    private static func isBaseForm(_ target: String) -> Bool { target.hasBytePrefix(basePrefix) }

    private static func baseParts(_ target: String) -> (base: String, signature: Substring?, tail: Substring)? {
        guard isBaseForm(target) else { return nil }
        let rest = target.utf8.dropFirst(basePrefix.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let head = rest[..<slash]
        let tilde = head.firstIndex(of: UInt8(ascii: "~"))
        let encoded = head[..<(tilde ?? head.endIndex)]
        guard !encoded.isEmpty, let bytes = Base64URL.decode(encoded),
              let base = String(validating: bytes, as: UTF8.self) else { return nil }
        let signature = tilde.map { Substring(head[head.index(after: $0)...]) }
        return (base, signature, Substring(rest[rest.index(after: slash)...]))
    }

    /// Checked: the base is an http(s) URL ending in "/" without a query; the tail stays below.
    private static func baseFormOrigin(_ target: String) -> String? {
        guard let parts = baseParts(target), parts.base.utf8.last == UInt8(ascii: "/"),
              !parts.base.utf8.contains(UInt8(ascii: "?")),
              let base = OriginURL.parse(parts.base), base.string == parts.base,
              isSafeTail(parts.tail.utf8) else { return nil }
        return parts.base + parts.tail
    }

    /// No "." or ".." segment (%2E too), leading "/", "\\" or escaped "/" or "\\" (an origin
    /// may decode them before removing dot segments), fragment or blank.
    private static func isSafeTail<S: Sequence<UInt8>>(_ tail: S) -> Bool {
        var bytes = Array(tail)
        if let query = bytes.firstIndex(of: UInt8(ascii: "?")) { bytes.removeSubrange(query...) }
        if bytes.first == UInt8(ascii: "/") { return false }
        for c in bytes where c <= 0x20 || c == 0x7F || c == UInt8(ascii: "#") || c == UInt8(ascii: "\\") { return false }
        for k in bytes.indices.dropLast(2) where bytes[k] == UInt8(ascii: "%") {
            let code = (ASCII.hexValue(bytes[k + 1]) ?? 0) << 4 | (ASCII.hexValue(bytes[k + 2]) ?? 0)
            if code == 0x2F || code == 0x5C { return false }
        }
        for segment in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            var s = segment[...], dots = 0
            while let c = s.first {
                if c == UInt8(ascii: ".") {
                    s = s.dropFirst()
                } else if c == UInt8(ascii: "%"), s.count >= 3, s[s.startIndex + 1] == UInt8(ascii: "2"),
                          ASCII.lower(s[s.startIndex + 2]) == UInt8(ascii: "e") {
                    s = s.dropFirst(3)
                } else {
                    dots = 0
                    break
                }
                dots += 1
            }
            if dots == 1 || dots == 2, s.isEmpty { return false }
        }
        return true
    }

    /// nil unless `origin` is an http(s) OriginURL. With a `signature` (URLSigner), signed.
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

    /// The origin a proxy target carries; nil unless well-formed with an http(s) origin.
    package static func origin(fromTarget target: String) -> String? {
        let origin = isBaseForm(target) ? baseFormOrigin(target) : decodedOrigin(target)
        return origin.flatMap { OriginURL.parse($0) != nil ? $0 : nil }
    }

    /// `origin(fromTarget:)` parsed, once (the proxy's per-request path).
    package static func originURL(fromTarget target: String) -> OriginURL? {
        (isBaseForm(target) ? baseFormOrigin(target) : decodedOrigin(target)).flatMap(OriginURL.parse)
    }

    /// The segment after the origin when another follows (signed form); the policy verifies it.
    package static func signature(fromTarget target: String) -> Substring? {
        if isBaseForm(target) { return baseParts(target)?.signature }
        let t = target.utf8
        let path = t[..<(t.firstIndex(of: UInt8(ascii: "?")) ?? t.endIndex)]
        guard path.starts(with: prefix.utf8) else { return nil }
        let rest = path.dropFirst(prefix.utf8.count)
        guard let first = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let afterOrigin = rest[rest.index(after: first)...]
        guard let second = afterOrigin.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return Substring(afterOrigin[..<second])
    }

    private static func decodedOrigin(_ target: String) -> String? {
        let t = target.utf8
        let path = t[..<(t.firstIndex(of: UInt8(ascii: "?")) ?? t.endIndex)]
        guard path.starts(with: prefix.utf8) else { return nil }
        let encoded = path.dropFirst(prefix.utf8.count)
        // "/p/<b64>/": the name segment must be present, if empty.
        guard let slash = encoded.firstIndex(of: UInt8(ascii: "/")), slash > encoded.startIndex,
              let bytes = Base64URL.decode(encoded[..<slash])
        else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The last path segment as one safe segment: RFC 3986 unreserved bytes and valid %XX
    /// kept, the rest percent-encoded; "index" for an empty name.
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
