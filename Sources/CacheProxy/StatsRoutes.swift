import CacheIO
import Glibc

/// `GET /stats` (JSON) and `GET /metrics` (Prometheus), loopback peers only: nobody else's business, and no
/// way to probe the host from the LAN. Pure; no body for HEAD.
package enum StatsRoutes {
    package struct Response: Sendable, Equatable {
        package var status: Int
        package var contentType: String
        package var body: String
    }

    package static let jsonType = "application/json"
    package static let prometheusType = "text/plain; version=0.0.4; charset=utf-8"

    package static func isStats(target: String) -> Bool {
        let path = target.utf8.prefix { $0 != UInt8(ascii: "?") }
        return path.elementsEqual("/stats".utf8) || path.elementsEqual("/metrics".utf8)
    }

    /// nil for another route. The snapshot is only taken for a request that will get it.
    package static func response(target: String, peerIsLoopback: Bool,
                                 snapshot: @autoclosure () -> MetricsSnapshot) -> Response? {
        guard isStats(target: target) else { return nil }
        guard peerIsLoopback else {
            return Response(status: 403, contentType: "text/plain; charset=utf-8",
                            body: "Forbidden: statistics are served to loopback clients only\n")
        }
        let taken = snapshot()
        return target.hasPrefix("/stats")
            ? Response(status: 200, contentType: jsonType, body: taken.json() + "\n")
            : Response(status: 200, contentType: prometheusType, body: taken.prometheus())
    }
}

extension SocketAddress {
    /// True for 127.0.0.0/8, ::1 and IPv4-mapped loopback (::ffff:127.x.y.z).
    package var isLoopback: Bool {
        var copy = storage
        return withUnsafeBytes(of: &copy) { raw -> Bool in
            if isIPv6 {
                let bytes = withUnsafeBytes(of: raw.load(as: sockaddr_in6.self).sin6_addr) { Array($0) }
                let loopback6 = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
                let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
                return loopback6 || (mapped && bytes[12] == 127)
            }
            guard Int32(storage.ss_family) == AF_INET else { return false }
            // s_addr is in network order: the first octet is its first byte in memory.
            let address = raw.load(as: sockaddr_in.self).sin_addr.s_addr
            return UInt32(bigEndian: address) >> 24 == 127
        }
    }
}
