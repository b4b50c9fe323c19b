/// Parsed Cache-Control (RFC 9111 §5.2) or CDN-Cache-Control (RFC 9213) directives, of
/// either side: each caller reads its side's. Lenient: names case-insensitive, token or
/// quoted values, unknown directives ignored, field lines one list. Duplicates and bad
/// values take the most restrictive reading (§4.2.1): see each property.
package struct CacheControl: Sendable, Equatable {
    /// Largest delta-seconds kept; larger values are clamped to it (§1.2.2).
    package static let maxDeltaSeconds = 2_147_483_648

    /// `max-age` (§5.2.1.1, §5.2.2.1). Bad or missing value: 0 (stale, §4.2.1); duplicates: smallest.
    package var maxAge: Int?
    package var sharedMaxAge: Int?  // §5.2.2.10, rules as `maxAge`
    package var noStore = false  // §5.2.1.5, §5.2.2.5
    package var noCache = false  // unqualified `no-cache` (§5.2.1.4, §5.2.2.4): reuse only after validation
    /// Lower-cased names of `no-cache="a, b"`: not sent from the cache without validation.
    package var noCacheFields: [String] = []
    package var isPrivate = false  // unqualified `private` (§5.2.2.7): a shared cache must not store
    /// Lower-cased names of `private="a, b"`: a shared cache may store the rest.
    package var privateFields: [String] = []
    package var isPublic = false  // §5.2.2.9
    package var mustRevalidate = false  // §5.2.2.2
    package var proxyRevalidate = false  // §5.2.2.8
    package var mustUnderstand = false  // §5.2.2.3
    package var noTransform = false  // §5.2.1.6, §5.2.2.6
    package var immutable = false  // RFC 8246
    /// `stale-while-revalidate` seconds (RFC 5861 §3). Bad values: no permission; duplicates: smallest.
    package var staleWhileRevalidate: Int?
    package var staleIfError: Int?  // RFC 5861 §4, rules as `staleWhileRevalidate`
    /// Request `max-stale` (§5.2.1.2), `anyStaleness` without a value. Bad: ignored; duplicates: smallest.
    package var maxStale: Int?
    package var minFresh: Int?  // request `min-fresh` (§5.2.1.3). Bad: ignored; duplicates: largest
    package var onlyIfCached = false  // request, §5.2.1.7
    /// No directive at all, known or not: RFC 9213 §2.2 then falls back to Cache-Control.
    package var isEmpty = true

    package static let anyStaleness = Int.max

    package init() {}

    /// Parses every field line named `field` in `headers` as one list.
    package init(_ headers: HTTPHeaders, field: String = "Cache-Control") {
        self.init(values: headers.values(field))
    }

    package init(values: [String]) {
        for d in values.flatMap(CacheControl.directives) { apply(d.name, d.value) }
    }

    /// Cache-Control, or `Pragma: no-cache` without it (§5.4, for HTTP/1.0 clients).
    package init(request headers: HTTPHeaders) {
        self.init(headers)
        if !headers.contains("Cache-Control"), headers.hasToken("no-cache", in: "Pragma") {
            noCache = true
            isEmpty = false
        }
    }

    private mutating func apply(_ name: String, _ value: String?) {
        isEmpty = false
        switch name {
        case "max-age": maxAge = min(maxAge ?? .max, CacheControl.seconds(value) ?? 0)
        case "s-maxage": sharedMaxAge = min(sharedMaxAge ?? .max, CacheControl.seconds(value) ?? 0)
        case "no-store": noStore = true
        case "no-cache":
            if let value, !value.isEmpty { noCacheFields.append(contentsOf: CacheControl.fieldNames(value)) }
            else { noCache = true }
        case "private":
            if let value, !value.isEmpty { privateFields.append(contentsOf: CacheControl.fieldNames(value)) }
            else { isPrivate = true }
        case "public": isPublic = true
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "must-understand": mustUnderstand = true
        case "no-transform": noTransform = true
        case "immutable": immutable = true
        case "only-if-cached": onlyIfCached = true
        case "stale-while-revalidate":
            if let s = CacheControl.seconds(value) { staleWhileRevalidate = min(staleWhileRevalidate ?? .max, s) }
        case "stale-if-error":
            if let s = CacheControl.seconds(value) { staleIfError = min(staleIfError ?? .max, s) }
        case "max-stale":
            let s = value == nil ? CacheControl.anyStaleness : CacheControl.seconds(value)
            if let s { maxStale = min(maxStale ?? .max, s) }
        case "min-fresh":
            if let s = CacheControl.seconds(value) { minFresh = max(minFresh ?? 0, s) }
        default: break
        }
    }

    /// delta-seconds (§1.2.2), clamped to 2^31; nil when absent or not all digits.
    static func seconds(_ value: String?) -> Int? {
        guard let value, !value.isEmpty else { return nil }
        var v = 0
        for b in value.utf8 {
            guard ASCII.isDigit(b) else { return nil }
            v = min(v * 10 + Int(b &- 0x30), maxDeltaSeconds)
        }
        return v
    }

    static func fieldNames(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { part in
            let name = trimmedOWS(String(part))
            guard !name.isEmpty, name.utf8.allSatisfy(ASCII.isTokenChar) else { return nil }
            return ASCII.lowercased(String(name))
        }
    }

    /// (lower-cased name, unquoted value) pairs; an unclosed quote runs to the end. The grammar
    /// (§5.2) allows no whitespace around `=`: `max-age= 5` has the invalid empty value (stale).
    static func directives(_ field: String) -> [(name: String, value: String?)] {
        var out: [(name: String, value: String?)] = []
        let b = Array(field.utf8)
        var i = 0
        while i < b.count {
            while i < b.count, ASCII.isOWS(b[i]) || b[i] == ASCII.comma { i += 1 }
            let nameStart = i
            while i < b.count, b[i] != ASCII.comma, b[i] != UInt8(ascii: "=") { i += 1 }
            let name = b[nameStart..<i].trimmingOWS()
            var value: String? = nil
            if i < b.count, b[i] == UInt8(ascii: "=") {
                let spaced = (i > nameStart && ASCII.isOWS(b[i - 1])) || (i + 1 < b.count && ASCII.isOWS(b[i + 1]))
                i += 1
                if spaced {
                    while i < b.count, b[i] != ASCII.comma { i += 1 }
                    value = ""
                } else if i < b.count, b[i] == UInt8(ascii: "\"") {
                    var bytes: [UInt8] = []
                    i += 1
                    while i < b.count, b[i] != UInt8(ascii: "\"") {
                        if b[i] == UInt8(ascii: "\\"), i + 1 < b.count { i += 1 }
                        bytes.append(b[i])
                        i += 1
                    }
                    i += 1
                    value = String(decoding: bytes, as: UTF8.self)
                    while i < b.count, b[i] != ASCII.comma { i += 1 }
                } else {
                    let start = i
                    while i < b.count, b[i] != ASCII.comma { i += 1 }
                    value = String(decoding: b[start..<i].trimmingOWS(), as: UTF8.self)
                }
            }
            if !name.isEmpty {
                out.append((name: String(decoding: name.map(ASCII.lower), as: UTF8.self), value: value))
            }
        }
        return out
    }
}

/// Settings of the policy that are the cache's choice, not the protocol's.
package struct CachePolicyOptions: Sendable, Equatable {
    /// Upper bound of a heuristic lifetime in seconds (§4.2.2 leaves it to the cache).
    package var heuristicCap: Int
    /// Reverse-proxy mode: as the origin's CDN, CDN-Cache-Control replaces Cache-Control and Expires.
    package var honorsCDNCacheControl: Bool
    /// Lower bound of a heuristic lifetime in seconds (at most `heuristicCap`; 0: the plain 10%
    /// rule): a media cache gives a few minutes even without Last-Modified or when just modified.
    package var heuristicMinimum: Int
    /// Heuristic freshness only with Last-Modified; without, revalidated before each reuse.
    package var heuristicNeedsLastModified: Bool

    package init(heuristicCap: Int = 86_400, honorsCDNCacheControl: Bool = false, heuristicMinimum: Int = 0,
                 heuristicNeedsLastModified: Bool = false) {
        self.heuristicCap = heuristicCap
        self.honorsCDNCacheControl = honorsCDNCacheControl
        self.heuristicMinimum = heuristicMinimum
        self.heuristicNeedsLastModified = heuristicNeedsLastModified
    }
}

/// The governing response directives (RFC 9213 §2.2): a non-empty CDN-Cache-Control when
/// honoured, else Cache-Control.
package struct ResponseDirectives: Sendable, Equatable {
    package var cacheControl: CacheControl
    package var isTargeted: Bool  // CDN-Cache-Control was used; Expires is then ignored too

    package init(_ headers: HTTPHeaders, options: CachePolicyOptions = CachePolicyOptions()) {
        if options.honorsCDNCacheControl, case let lines = headers.values("CDN-Cache-Control"), !lines.isEmpty,
           let directives = Self.targetedDirectives(lines) {
            let cdn = CacheControl(values: directives)
            if !cdn.isEmpty {
                cacheControl = cdn
                isTargeted = true
                return
            }
        }
        cacheControl = CacheControl(headers)
        isTargeted = false
    }

    /// CDN-Cache-Control as Cache-Control text, or nil to ignore the field (RFC 9213 §2.1):
    /// no Structured Dictionary (`Max-Age=60`, `max-age=60s`), or a known directive of the wrong
    /// type (`s-maxage="60"`, `max-age=-1`, `no-store=5`). `no-store=?0` is absence.
    static func targetedDirectives(_ lines: [String]) -> [String]? {
        guard let members = StructuredDictionary.members(lines) else { return nil }
        var out: [String] = []
        for member in members {
            switch (member.key, member.kind) {
            case ("max-age", .integer(negative: false)), ("s-maxage", .integer(negative: false)),
                 ("stale-while-revalidate", .integer(negative: false)), ("stale-if-error", .integer(negative: false)):
                break
            case ("max-age", _), ("s-maxage", _), ("stale-while-revalidate", _), ("stale-if-error", _):
                return nil
            case ("no-cache", .string), ("private", .string), (_, .boolean):
                break
            case ("no-cache", _), ("private", _), ("no-store", _), ("public", _), ("must-revalidate", _),
                 ("proxy-revalidate", _), ("must-understand", _), ("no-transform", _), ("immutable", _):
                return nil
            default:
                break  // an unknown directive: any value
            }
            if case .boolean(false) = member.kind { continue }
            if case .boolean(true) = member.kind { out.append(member.key) } else {
                out.append(member.key + "=" + (member.text ?? ""))
            }
        }
        return [out.joined(separator: ", ")]
    }
}
