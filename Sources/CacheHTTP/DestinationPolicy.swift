/// Which origins the proxy may fetch from (`--allow-origin`), checked on every fetch whatever
/// asked for it (proxy URL, forward or reverse target, redirect hop, preload, signed URI). An
/// entry is a host (any case: every port) or `HOST:PORT` (`[v6]:PORT`). No entry allows all.
package struct DestinationPolicy: Sendable, Equatable {
    private let hosts: Set<String>  // lowercase, IPv6 without brackets
    private let hostPorts: Set<String>  // "host port", likewise

    package static let any = DestinationPolicy(hosts: [], hostPorts: [])

    /// A host with a space names none: an unreadable allow-list becomes this, never "allow all".
    package static let nothing = DestinationPolicy(hosts: [" "], hostPorts: [])

    /// Fails with the first entry that is neither a host nor `HOST:PORT`.
    package static func parse(_ entries: [String]) -> Result<DestinationPolicy, InvalidEntry> {
        var hosts = Set<String>()
        var hostPorts = Set<String>()
        for entry in entries {
            guard let (host, port) = split(entry.lowercased()) else { return .failure(InvalidEntry(entry: entry)) }
            if let port { hostPorts.insert(host + " " + String(port)) } else { hosts.insert(host) }
        }
        return .success(DestinationPolicy(hosts: hosts, hostPorts: hostPorts))
    }

    package struct InvalidEntry: Error, Equatable {
        package let entry: String
    }

    package var allowsAll: Bool { hosts.isEmpty && hostPorts.isEmpty }

    package func allows(_ url: OriginURL) -> Bool { allows(host: url.host, port: url.port) }

    /// `host` lowercase, IPv6 literals without brackets (as `OriginURL` keeps it).
    package func allows(host: String, port: Int) -> Bool {
        if allowsAll { return true }
        var host = Substring(host)
        if host.hasSuffix(".") { host = host.dropLast() }  // "example.com." names example.com
        let name = String(host)
        return hosts.contains(name) || hostPorts.contains(name + " " + String(port))
    }

    /// "host", "host:port", "[v6]", "[v6]:port", "v6".
    private static func split(_ entry: String) -> (String, Int?)? {
        var text = Substring(entry)
        if text.hasSuffix(".") { text = text.dropLast() }
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let inside = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            if after.isEmpty { return (String(inside), nil) }
            guard after.hasPrefix(":"), let port = port(after.dropFirst()) else { return nil }
            return (String(inside), port)
        }
        let colons = text.filter { $0 == ":" }.count
        if colons > 1 {  // a bare IPv6 literal
            guard text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            return (String(text), nil)
        }
        var host = text
        var portNumber: Int?
        if colons == 1, let colon = text.firstIndex(of: ":") {
            guard let port = port(text[text.index(after: colon)...]) else { return nil }
            host = text[..<colon]
            portNumber = port
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        let allowed = host.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
                || c == UInt8(ascii: "_")
        }
        guard !host.isEmpty, allowed else { return nil }
        return (String(host), portNumber)
    }

    private static func port(_ text: Substring) -> Int? { ASCII.port(text.utf8).flatMap { $0 > 0 ? $0 : nil } }
}
