// What a proxy does to messages it forwards (RFC 9110 §7.6): drop hop-by-hop fields, add
// itself to Via, notice loops, refuse a missing or broken Host (RFC 9112 §3.2).

package enum Intermediary {
    /// Never forwarded nor stored (§7.6.1; Proxy-Connection and Keep-Alive are historic but
    /// still sent; Proxy-Authenticate/-Authorization are for the proxy they address, §11.7).
    package static let hopByHopFields = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer",
        "transfer-encoding", "upgrade", "proxy-authenticate", "proxy-authorization",
    ]

    /// `headers`, in order, without hop-by-hop fields and those Connection or Proxy-Connection
    /// names (§7.6.1).
    package static func removingHopByHop(_ headers: HTTPHeaders) -> HTTPHeaders {
        // Compared in place, no lowercased copies or set: runs on every origin exchange.
        var named: [String] = []
        for field in headers.fields
        where ASCII.equalsIgnoringCase(field.name, "Connection") || ASCII.equalsIgnoringCase(field.name, "Proxy-Connection") {
            for token in field.value.utf8.split(separator: ASCII.comma) {
                let name = String(trimmedOWS(String(decoding: token, as: UTF8.self)))
                // "keep-alive" and "close" are listed already or name no field.
                if !name.isEmpty, !hopByHopFields.contains(where: { ASCII.equalsIgnoringCase($0, name) }) {
                    named.append(name)
                }
            }
        }
        func isHopByHop(_ name: String) -> Bool {
            hopByHopFields.contains { ASCII.equalsIgnoringCase($0, name) }
                || named.contains { ASCII.equalsIgnoringCase($0, name) }
        }
        guard headers.fields.contains(where: { isHopByHop($0.name) }) else { return headers }
        var out = headers
        out.fields.removeAll { isHopByHop($0.name) }
        return out
    }

    /// `httpcache-` and 8 hex digits of `id` (the caller's randomness).
    package static func pseudonym(id: UInt32) -> String {
        let hex = String(id, radix: 16)
        return "httpcache-" + String(repeating: "0", count: 8 - hex.utf8.count) + hex
    }

    /// A 1xx as relayed to an HTTP/1.1 client: end-to-end fields, this proxy in Via (§15.2).
    package static func interimHead(_ head: HTTPResponseHead, pseudonym: String) -> [UInt8] {
        let headers = appendingVia(removingHopByHop(head.headers), receivedWith: head.version, pseudonym: pseudonym)
        return HTTPResponseHead(version: .http11, status: head.status, reason: head.reason, headers: headers).serialized()
    }

    /// Adds Via "<major>.<minor> <pseudonym>" of the received protocol last (§7.6.3).
    package static func appendingVia(_ headers: HTTPHeaders, receivedWith version: HTTPVersion = .http11,
                                     pseudonym: String) -> HTTPHeaders {
        var out = headers
        out.add("Via", "\(version.major).\(version.minor) \(pseudonym)")
        return out
    }

    /// A Via member names `pseudonym` as received-by: forwarding again would loop (§7.6.3).
    package static func isLoop(_ headers: HTTPHeaders, pseudonym: String) -> Bool {
        guard !pseudonym.isEmpty else { return false }
        for value in headers.values("Via") {
            for member in viaMembers(value) {
                let words = member.split(whereSeparator: { $0 == " " || $0 == "\t" })
                if words.count >= 2, ASCII.equalsIgnoringCase(String(words[1]), pseudonym) { return true }
            }
        }
        return false
    }

    /// Via members split at commas outside comments, comments removed.
    private static func viaMembers(_ value: String) -> [String] {
        var members: [String] = []
        var current: [UInt8] = []
        var depth = 0
        for b in value.utf8 {
            switch b {
            case UInt8(ascii: "("): depth += 1
            case UInt8(ascii: ")"): depth = max(0, depth - 1)
            case ASCII.comma where depth == 0:
                members.append(String(decoding: current, as: UTF8.self))
                current = []
            default:
                if depth == 0 { current.append(b) }
            }
        }
        members.append(String(decoding: current, as: UTF8.self))
        return members
    }

    /// RFC 9112 §3.2: exactly one valid uri-host [ ":" port ]; HTTP/1.0 may omit it (nil).
    package static func validateHost(_ request: HTTPRequestHead) -> Result<HostAuthority?, HostError> {
        let values = request.headers.values("Host")
        if values.isEmpty {
            return request.version.major == 1 && request.version.minor == 0 ? .success(nil) : .failure(.missing)
        }
        guard values.count == 1 else { return .failure(.multiple) }
        let value = trimmedOWS(values[0])
        guard !value.isEmpty else { return .failure(.empty) }
        guard let authority = HostAuthority(String(value)) else { return .failure(.invalid) }
        return .success(authority)
    }
}

/// Why a Host field was refused; each is answered with 400.
package enum HostError: String, Sendable, Error, Equatable {
    case missing = "no Host field"
    case multiple = "more than one Host field"
    case empty = "empty Host field"
    case invalid = "Host is not a valid authority"
}

/// A Host field value split into host and port (RFC 3986 §3.2.2-3).
package struct HostAuthority: Sendable, Equatable {
    package var host: String  // lower-cased; IPv6 literals keep their brackets
    package var port: Int?

    package init(host: String, port: Int?) {
        self.host = host
        self.port = port
    }

    /// IP-literal / IPv4address / reg-name, optionally ":" port (≤ 65535; empty reads as none).
    package init?(_ value: String) {
        let b = Array(value.utf8)
        var hostEnd: Int
        if b.first == UInt8(ascii: "[") {
            guard let close = b.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return nil }
            let inner = b[1..<close]
            // IPv6address or IPvFuture: hex digits, colons, dots (a v4 tail), "v".
            guard inner.contains(ASCII.colon) || inner.first.map(ASCII.lower) == UInt8(ascii: "v"),
                  inner.allSatisfy({ ASCII.hexValue($0) != nil || $0 == ASCII.colon || $0 == UInt8(ascii: ".")
                      || ASCII.lower($0) == UInt8(ascii: "v") }) else { return nil }
            hostEnd = close + 1
        } else {
            hostEnd = b.firstIndex(of: ASCII.colon) ?? b.count
            guard hostEnd > 0 else { return nil }
            var i = 0
            while i < hostEnd {
                let c = b[i]
                if c == UInt8(ascii: "%") {
                    guard i + 2 < hostEnd, ASCII.hexValue(b[i + 1]) != nil, ASCII.hexValue(b[i + 2]) != nil else { return nil }
                    i += 3
                    continue
                }
                guard HostAuthority.isRegNameChar(c) else { return nil }
                i += 1
            }
        }
        var port: Int? = nil
        if hostEnd < b.count {
            guard b[hostEnd] == ASCII.colon else { return nil }
            if hostEnd + 1 < b.count {
                guard let p = ASCII.port(b[(hostEnd + 1)...]) else { return nil }
                port = p
            }
        }
        host = ASCII.lowercased(String(decoding: b[0..<hostEnd], as: UTF8.self))
        self.port = port
    }

    /// unreserved / sub-delims (RFC 3986 §2.2-3); IPv4 addresses are a subset.
    private static func isRegNameChar(_ c: UInt8) -> Bool {
        if (ASCII.lower(c) &- 0x61) < 26 || ASCII.isDigit(c) { return true }
        return "-._~!$&'()*+,;=".utf8.contains(c)
    }
}
