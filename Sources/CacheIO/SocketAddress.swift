import CSupport
import Glibc

/// An IPv4 or IPv6 socket address, as resolved by the loop.
package struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage: sockaddr_storage

    package init(storage: sockaddr_storage) { self.storage = storage }
    package var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

    package var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isIPv6 ? AF_INET6 : AF_INET
        let offset = isIPv6 ? MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
            : MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
        withUnsafeBytes(of: storage) { _ = inet_ntop(family, $0.baseAddress! + offset, &buffer, socklen_t(buffer.count)) }
        let host = String(cChars: buffer)
        return isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
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
