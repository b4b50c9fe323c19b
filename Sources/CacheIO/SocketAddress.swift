import CSupport
import Glibc

/// An IPv4 or IPv6 socket address, as resolved by the loop.
package struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage: sockaddr_storage

    package init(storage: sockaddr_storage) { self.storage = storage }
    package var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

    package var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withSockaddr { address in
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

    /// Host byte order.
    package var port: Int {
        withSockaddr { address in
            isIPv6 ? address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                : address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// 127.0.0.0/8, ::1, the unspecified addresses, and their IPv4-mapped forms.
    package var isThisMachine: Bool {
        withSockaddr { address in
            if isIPv6 {
                return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    let bytes = withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
                    if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] <= 1 }  // :: and ::1
                    let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
                    return mapped && (bytes[12] == 127 || bytes[12...].allSatisfy { $0 == 0 })
                }
            }
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                let value = UInt32(bigEndian: v4.pointee.sin_addr.s_addr)
                return value == 0 || value >> 24 == 127
            }
        }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        var copy = storage
        return withUnsafePointer(to: &copy) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }
}
