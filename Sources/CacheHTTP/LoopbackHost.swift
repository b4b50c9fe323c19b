/// Names that can only mean this machine: what a Host field must say to a loopback-bound proxy
/// (a page rebinding its DNS name to 127.0.0.1 still sends that name, and is refused), and
/// what tells a loopback bind from a LAN one.
package enum LoopbackHost {
    /// `localhost`, `*.localhost` (RFC 6761), 127.0.0.0/8, `::1` (bracketed in a Host field),
    /// each with an optional port.
    package static func contains(_ hostField: String) -> Bool {
        // Nearly every request says `127.0.0.1:PORT` or `localhost:PORT`: decided on the bytes.
        if let answer = commonForm(hostField.utf8) { return answer }
        var host = Substring(hostField.lowercased())
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let inside = host[host.index(after: host.startIndex)..<close]
            let after = host[host.index(after: close)...]
            guard after.isEmpty || (after.hasPrefix(":") && isPort(after.dropFirst())) else { return false }
            return isIPv6Loopback(inside)
        }
        if isIPv6Loopback(host) { return true }  // a bare bind address, not a Host field
        if let colon = host.lastIndex(of: ":") {
            guard isPort(host[host.index(after: colon)...]) else { return false }
            host = host[..<colon]
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        return host == "localhost" || host.hasSuffix(".localhost") || isIPv4Loopback(host)
    }

    /// Nil for other spellings than `127.0.0.1` or `localhost`, any case, optional `:port`.
    private static func commonForm(_ bytes: String.UTF8View) -> Bool? {
        guard bytes.starts(with: "127.0.0.1".utf8)
                || (bytes.count >= 9 && bytes.prefix(9).map({ $0 | 0x20 }).elementsEqual("localhost".utf8))
        else { return nil }
        let rest = bytes.dropFirst(9)
        if rest.isEmpty { return true }
        guard rest.first == UInt8(ascii: ":") else { return nil }
        let port = rest.dropFirst()
        guard !port.isEmpty, port.count <= 5, port.allSatisfy(ASCII.isDigit) else { return nil }
        return true
    }

    /// In any spelling the resolver takes (`127.1`, `0x7f000001`, `0177.0.0.1`: `IPv4Literal`).
    private static func isIPv4Loopback(_ text: Substring) -> Bool {
        IPv4Literal.parse(text).map { $0 >> 24 == 127 } ?? false
    }

    /// The one "destination is this machine" test (a CONNECT back into the proxy): `contains`, and
    /// `0.0.0.0` (any spelling) and `::`, which connect here too. `host` as in a URL, no port.
    package static func isThisMachine(_ host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name.hasSuffix(".") { name = name.dropLast() }
        if name.contains(":") {
            if name.hasPrefix("::ffff:"), let v4 = IPv4Literal.parse(name.dropFirst(7)) { return v4 == 0 || v4 >> 24 == 127 }
            let groups = name.split(separator: ":", omittingEmptySubsequences: true)
            let unspecified = groups.allSatisfy { $0.count <= 4 && $0.allSatisfy(\.isHexDigit) && Int($0, radix: 16) == 0 }
                && (name.contains("::") || groups.count == 8)
            return unspecified || isIPv6Loopback(name)
        }
        if IPv4Literal.parse(name) == 0 { return true }
        return contains(String(name))
    }

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// `::1` in any zero spelling, and `::ffff:127.x.y.z`.
    private static func isIPv6Loopback(_ text: Substring) -> Bool {
        if text.hasPrefix("::ffff:") { return isIPv4Loopback(text.dropFirst(7)) }
        let groups = text.split(separator: ":", omittingEmptySubsequences: true)
        guard text.contains(":"), !groups.isEmpty, groups.allSatisfy({ $0.count <= 4 && $0.allSatisfy(\.isHexDigit) }) else {
            return false
        }
        let values = groups.map { Int($0, radix: 16)! }
        return values.last == 1 && values.dropLast().allSatisfy { $0 == 0 } && (text.contains("::") || groups.count == 8)
    }
}

