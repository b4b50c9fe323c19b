// Absolute http(s) URLs of origin resources and redirect resolution (RFC 3986 §5.2). Narrow
// on purpose: what an upstream client can connect to and put on a request line.

package struct OriginURL: Sendable, Equatable {
    package let scheme: String  // "http" or "https"
    package let host: String  // lowercased; IPv6 literals without brackets
    package let port: Int
    package let pathAndQuery: String  // origin-form request target: starts with "/", kept byte-exact

    package var isIPv6: Bool { host.utf8.contains(ASCII.colon) }
    private var defaultPort: Int { scheme == "https" ? 443 : 80 }
    private var bracketedHost: String { isIPv6 ? "[" + host + "]" : host }

    /// The port only when not the scheme's default.
    package var hostHeader: String {
        port == defaultPort ? bracketedHost : bracketedHost + ":" + String(port)
    }

    /// "host:port", an IPv6 literal in brackets.
    package static func authority(host: String, port: Int) -> String {
        (host.utf8.contains(ASCII.colon) ? "[" + host + "]" : host) + ":" + String(port)
    }

    /// Always with the port: a connection pool's key.
    package var authorityKey: String {
        scheme + "://" + bracketedHost + ":" + String(port)
    }

    /// Normalized: no fragment, no default port.
    package var string: String { scheme + "://" + hostHeader + pathAndQuery }

    /// Absolute http(s) with a host; no userinfo, whitespace or controls. Drops the fragment.
    package static func parse(_ s: String) -> OriginURL? {
        var copy = s
        return copy.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0)) }
    }

    private static func parse(bytes b: UnsafeRawBufferPointer) -> OriginURL? {
        let n = b.count
        for c in b where c <= 0x20 || c == 0x7F { return nil }

        let scheme: String
        var i: Int
        if n > 7, ASCII.equalsIgnoringCase(b[0..<7], "http://") {
            scheme = "http"; i = 7
        } else if n > 8, ASCII.equalsIgnoringCase(b[0..<8], "https://") {
            scheme = "https"; i = 8
        } else {
            return nil
        }

        var authorityEnd = i
        while authorityEnd < n {
            let c = b[authorityEnd]
            if c == UInt8(ascii: "/") || c == UInt8(ascii: "?") || c == UInt8(ascii: "#") { break }
            if c == UInt8(ascii: "@") { return nil } // userinfo: credentials have no place here
            authorityEnd += 1
        }

        let host: String
        if i < authorityEnd, b[i] == UInt8(ascii: "[") {
            var close = i + 1
            while close < authorityEnd, b[close] != UInt8(ascii: "]") { close += 1 }
            guard close < authorityEnd, close > i + 1 else { return nil }
            var sawColon = false
            for c in b[(i + 1)..<close] {
                // Hex, colons and an embedded IPv4 tail; no zone IDs.
                guard ASCII.hexValue(c) != nil || c == ASCII.colon || c == UInt8(ascii: ".") else { return nil }
                if c == ASCII.colon { sawColon = true }
            }
            guard sawColon else { return nil }
            host = lowered(b, (i + 1)..<close)
            i = close + 1
            guard i == authorityEnd || b[i] == ASCII.colon else { return nil }
        } else {
            let start = i
            while i < authorityEnd, b[i] != ASCII.colon {
                let c = b[i]
                // What a resolvable name can hold.
                guard (c &- 0x30) < 10 || (ASCII.lower(c) &- 0x61) < 26 || c == UInt8(ascii: "-")
                    || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") else { return nil }
                i += 1
            }
            guard i > start else { return nil }
            host = lowered(b, start..<i)
        }

        var port = scheme == "https" ? 443 : 80
        if i < authorityEnd { // b[i] == ':'
            i += 1
            // An empty port means the default (RFC 3986 §3.2.3).
            if i < authorityEnd {
                guard let p = ASCII.port(b[i..<authorityEnd]), p > 0 else { return nil }
                port = p
            }
        }

        var end = authorityEnd
        while end < n, b[end] != UInt8(ascii: "#") { end += 1 }
        var path = String(decoding: UnsafeRawBufferPointer(rebasing: b[authorityEnd..<end]), as: UTF8.self)
        if path.utf8.first != UInt8(ascii: "/") { path = "/" + path }
        return OriginURL(scheme: scheme, host: host, port: port, pathAndQuery: path)
    }

    private static func lowered(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> String {
        ASCII.lowercased(String(decoding: UnsafeRawBufferPointer(rebasing: b[r]), as: UTF8.self))
    }

    /// A redirect's Location against this URL (RFC 3986 §5.2.2); nil unless an acceptable
    /// http(s) URL. An absolute Location is taken as parse() takes it (path byte-exact).
    package func resolving(_ location: String) -> OriginURL? {
        let ref = Array(location.utf8)
        if ref.withUnsafeBufferPointer(Self.schemeLength) != nil { return OriginURL.parse(location) }
        if ref.starts(with: "//".utf8) { return OriginURL.parse(scheme + ":" + location) }

        let noFragment = ref[..<(ref.firstIndex(of: UInt8(ascii: "#")) ?? ref.count)]
        let queryStart = noFragment.firstIndex(of: UInt8(ascii: "?"))
        let refPath = noFragment[..<(queryStart ?? noFragment.endIndex)]
        let refQuery = queryStart.map { noFragment[$0...] } // with its "?"

        let base = Array(pathAndQuery.utf8)
        let baseQueryStart = base.firstIndex(of: UInt8(ascii: "?")) ?? base.count
        let basePath = base[..<baseQueryStart]

        let path: [UInt8]
        var query = refQuery ?? []
        if refPath.isEmpty {
            path = Array(basePath)
            if refQuery == nil { query = base[baseQueryStart...] }
        } else if refPath.first == UInt8(ascii: "/") {
            path = removeDotSegments(refPath)
        } else {
            let directory = basePath.lastIndex(of: UInt8(ascii: "/")).map { basePath[...$0] } ?? []
            path = removeDotSegments(directory + refPath)
        }
        return OriginURL.parse(scheme + "://" + hostHeader + String(decoding: path + query, as: UTF8.self))
    }

    /// The scheme's length in an absolute reference (RFC 3986 §3.1).
    static func schemeLength(_ r: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = r.first, (ASCII.lower(first) &- 0x61) < 26 else { return nil }
        for i in 1..<r.count {
            let c = r[i]
            if c == ASCII.colon { return i }
            let ok = (ASCII.lower(c) &- 0x61) < 26 || ASCII.isDigit(c)
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
            if !ok { return nil }
        }
        return nil
    }
}

/// RFC 3986 §5.2.4 remove_dot_segments.
func removeDotSegments<C: Collection<UInt8>>(_ path: C) -> [UInt8] {
    let input = Array(path)
    let n = input.count
    let dot = UInt8(ascii: "."), slash = UInt8(ascii: "/")
    var out: [UInt8] = []
    out.reserveCapacity(n)
    var i = 0

    @inline(__always) func at(_ k: Int, _ c: UInt8) -> Bool { k < n && input[k] == c }
    @inline(__always) func segmentEnds(_ k: Int) -> Bool { k == n || input[k] == slash }
    func popSegment() {
        if let s = out.lastIndex(of: slash) { out.removeSubrange(s...) } else { out.removeAll() }
    }

    while i < n {
        if at(i, dot), at(i + 1, dot), at(i + 2, slash) {          // A: "../"
            i += 3
        } else if at(i, dot), at(i + 1, slash) {                   // A: "./"
            i += 2
        } else if at(i, slash), at(i + 1, dot), segmentEnds(i + 2) { // B: "/./" or "/."
            if i + 2 == n { out.append(slash); i = n } else { i += 2 }
        } else if at(i, slash), at(i + 1, dot), at(i + 2, dot), segmentEnds(i + 3) { // C: "/../" or "/.."
            popSegment()
            if i + 3 == n { out.append(slash); i = n } else { i += 3 }
        } else if (i + 1 == n && at(i, dot)) || (i + 2 == n && at(i, dot) && at(i + 1, dot)) { // D
            i = n
        } else {                                                   // E: move one segment
            var j = i + (input[i] == slash ? 1 : 0)
            while j < n, input[j] != slash { j += 1 }
            out.append(contentsOf: input[i..<j])
            i = j
        }
    }
    return out
}
