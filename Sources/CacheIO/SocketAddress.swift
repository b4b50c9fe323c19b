import CSupport
import Glibc

/// An IPv4 or IPv6 socket address, as resolved by the loop.
package struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage: sockaddr_storage

    package init(storage: sockaddr_storage) { self.storage = storage }

    package var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

    package var description: String {
        var copy = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withUnsafePointer(to: &copy) { pointer -> String in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                if isIPv6 {
                    return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var a = v6.pointee.sin6_addr
                        inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count))
                        return "[\(String(cChars: buffer))]:\(UInt16(bigEndian: v6.pointee.sin6_port))"
                    }
                }
                return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var a = v4.pointee.sin_addr
                    inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
                    return "\(String(cChars: buffer)):\(UInt16(bigEndian: v4.pointee.sin_port))"
                }
            }
        }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        var copy = storage
        return withUnsafePointer(to: &copy) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }
}
