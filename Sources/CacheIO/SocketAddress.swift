import CSupport
import Glibc

/// An IPv4 or IPv6 socket address, as resolved by the loop.
package struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage: sockaddr_storage

    package init(storage: sockaddr_storage) { self.storage = storage }
    package var isIPv6: Bool { Int32(storage.ss_family) == AF_INET6 }

    package var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        inet_ntop(isIPv6 ? AF_INET6 : AF_INET, addressBytes, &buffer, socklen_t(buffer.count))
        let host = String(cChars: buffer)
        return isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Host byte order (sin_port and sin6_port share their offset).
    package var port: Int {
        let at = MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!
        let raw = withUnsafeBytes(of: storage) { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
        return Int(UInt16(bigEndian: raw))
    }

    /// 127.0.0.0/8, ::1, the unspecified addresses, and their IPv4-mapped forms.
    package var isThisMachine: Bool {
        let bytes = addressBytes
        guard isIPv6 else { return bytes[0] == 127 || bytes.allSatisfy { $0 == 0 } }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] <= 1 }  // :: and ::1
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        return mapped && (bytes[12] == 127 || bytes[12...].allSatisfy { $0 == 0 })
    }

    /// Network order: 4 bytes, 16 for IPv6.
    private var addressBytes: [UInt8] {
        let at = isIPv6 ? MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
            : MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
        return withUnsafeBytes(of: storage) { Array($0[at..<(at + (isIPv6 ? 16 : 4))]) }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        var copy = storage
        return withUnsafePointer(to: &copy) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
    }
}
