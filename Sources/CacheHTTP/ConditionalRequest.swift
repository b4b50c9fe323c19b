// Preconditions against the stored validators (RFC 9110 §13.1, §13.2.2). If-Range is
// `IfRange`'s job: it decides about Range, not the whole response.

/// An entity-tag (§8.8.3).
package struct EntityTag: Sendable, Equatable {
    package var opaque: String  // with its quotes: `"abc"`
    package var isWeak: Bool

    package init(opaque: String, isWeak: Bool) {
        self.opaque = opaque
        self.isWeak = isWeak
    }

    /// Nil unless `value` (OWS trimmed) is `[W/]"<etagc>*"`.
    package init?(_ value: String) {
        var s = trimmedOWS(value)
        let weak = s.utf8.starts(with: "W/".utf8)
        if weak { s = s.dropFirst(2) }
        let u = s.utf8
        guard u.count >= 2, u.first == UInt8(ascii: "\""), u.last == UInt8(ascii: "\""),
              !u.dropFirst().dropLast().contains(UInt8(ascii: "\"")) else { return nil }
        opaque = String(s)
        isWeak = weak
    }

    /// Strong comparison (§8.8.3.2): both strong, same opaque-tag, byte for byte.
    package func strongMatch(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaque.utf8.elementsEqual(other.opaque.utf8)
    }

    /// Weak comparison (§8.8.3.2): same opaque-tag, either may be weak.
    package func weakMatch(_ other: EntityTag) -> Bool { opaque.utf8.elementsEqual(other.opaque.utf8) }

    /// An If-Match/If-None-Match list, nil for `*`; members that are not entity-tags can never
    /// match and are skipped.
    static func list(_ lines: [String]) -> [EntityTag]? {
        var tags: [EntityTag] = []
        for line in lines {
            if trimmedOWS(line) == "*" { return nil }
            var member: [UInt8] = []
            var quoted = false
            for b in line.utf8 {
                if b == UInt8(ascii: "\"") { quoted.toggle() }
                if b == ASCII.comma && !quoted {
                    if let tag = EntityTag(String(decoding: member, as: UTF8.self)) { tags.append(tag) }
                    member = []
                } else {
                    member.append(b)
                }
            }
            if let tag = EntityTag(String(decoding: member, as: UTF8.self)) { tags.append(tag) }
        }
        return tags
    }
}

package enum PreconditionResult: Sendable, Equatable {
    case proceed
    case notModified  // 304, only for GET and HEAD
    case preconditionFailed
}

package enum ConditionalRequest {
    /// In §13.2.2 order: If-Match (strong, `*` matches) false → 412; else If-Unmodified-Since
    /// before Last-Modified → 412; If-None-Match (weak, `*` matches) true → 304 for GET/HEAD,
    /// else 412; else for GET/HEAD If-Modified-Since not before Last-Modified → 304. Bad dates,
    /// or no Last-Modified, void date conditions (§13.1.3-4). Only for a 2xx `status` (§13.2.1).
    package static func evaluate(method: String, requestHeaders: HTTPHeaders, status: Int = 200,
                                 etag: String?, lastModified: String?) -> PreconditionResult {
        guard (200..<300).contains(status) else { return .proceed }
        let current = etag.flatMap(EntityTag.init)
        let modified = lastModified.flatMap(HTTPDate.epochSeconds)
        let safe = method == "GET" || method == "HEAD"

        let ifMatch = requestHeaders.values("If-Match")
        if !ifMatch.isEmpty {
            if let tags = EntityTag.list(ifMatch) {
                guard let current, tags.contains(where: { $0.strongMatch(current) }) else {
                    return .preconditionFailed
                }
            }
        } else if let since = requestHeaders["If-Unmodified-Since"].flatMap(HTTPDate.epochSeconds),
                  let modified, modified > since {
            return .preconditionFailed
        }

        let ifNoneMatch = requestHeaders.values("If-None-Match")
        if !ifNoneMatch.isEmpty {
            let matched: Bool
            if let tags = EntityTag.list(ifNoneMatch) {
                matched = current.map { c in tags.contains { $0.weakMatch(c) } } ?? false
            } else {
                matched = true
            }
            if matched { return safe ? .notModified : .preconditionFailed }
        } else if safe, let since = requestHeaders["If-Modified-Since"].flatMap(HTTPDate.epochSeconds),
                  let modified, modified <= since {
            return .notModified
        }
        return .proceed
    }
}
