import CacheHTTP

/// A parent proxy (`--upstream-proxy`): http requests in absolute form (RFC 9112
/// §3.2.2), https and client tunnels through `CONNECT`, so TLS runs end to end and this
/// proxy verifies the certificate. `directHosts` are reached directly. Pure.
package struct ParentProxy: Sendable, Equatable {
    /// Where the parent listens (IPv6 literals without brackets).
    package let host: String
    package let port: Int
    /// Lowercased names and literals reached directly; a name covers its subdomains.
    package var directHosts: [String]

    /// `http://host[:port][/]` (port 80 when absent); nil for anything else
    /// (https to the parent, paths, credentials are not supported).
    package static func parse(_ text: String, directHosts: [String] = []) -> ParentProxy? {
        guard let url = OriginURL.parse(text), url.scheme == "http", url.pathAndQuery == "/",
              !text.contains("@") else { return nil }
        return ParentProxy(host: url.host, port: url.port, directHosts: directHosts)
    }

    package init(host: String, port: Int, directHosts: [String] = []) {
        self.host = host
        self.port = port
        self.directHosts = directHosts.map { name in
            var name = Substring(name.lowercased())
            if name.hasPrefix("[") && name.hasSuffix("]") { name = name.dropFirst().dropLast() }
            if name.hasPrefix(".") { name = name.dropFirst() }
            return String(name)
        }
    }

    /// Whether a request to `host` (lowercase, as `OriginURL` keeps it) goes through the parent.
    package func isUsed(for host: String) -> Bool {
        !directHosts.contains { host == $0 || host.hasSuffix("." + $0) }
    }

    /// CONNECT to `host:port` with the hops' `Via` values (this proxy's included): a parent
    /// leading back to a proxy already passed answers 508 instead of looping.
    package static func connectRequest(host: String, port: Int, via: [String] = []) -> [UInt8] {
        let authority = OriginURL.authority(host: host, port: port)
        let fields = via.map { "Via: \($0)\r\n" }.joined()
        return Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\(fields)\r\n".utf8)
    }

    /// Nil while the head is incomplete, else its status (0: unreadable) and end.
    package static func connectAnswer(_ bytes: [UInt8]) -> (status: Int, headLength: Int)? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let line = bytes[..<end.lowerBound].prefix { $0 != 13 }
        let parts = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
        guard parts.count >= 2, parts[0].starts(with: "HTTP/1.".utf8),
              let status = Int(String(decoding: parts[1], as: UTF8.self)) else { return (0, end.upperBound) }
        return (status, end.upperBound)
    }
}
