import CacheIO
import Glibc
import XCTest
@testable import CacheProxy

/// `Socket.peerAddress` (over `cs_conn_peer`) on real accepted connections.
final class PeerAddressTests: XCTestCase {
    private func acceptedPeer(host: String, family: Int32) throws -> (SocketAddress?, UInt16)? {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let seen = Locked<SocketAddress??>(nil)
        let port = loop.submitAndWait { () -> Int in
            // The C side keeps the listener until the loop stops.
            (try? Listener.listen(on: loop, host: host, port: 0) { socket in
                let peer = socket.peerAddress
                seen.withLock { $0 = .some(peer) }
                socket.close()
            })?.port ?? 0
        } ?? 0
        guard port > 0 else { return nil }  // no such interface here (e.g. no IPv6)

        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var storage = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET6 {
            var v6 = sockaddr_in6()
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(port).bigEndian
            inet_pton(AF_INET6, host, &v6.sin6_addr)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: v6, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = UInt16(port).bigEndian
            inet_pton(AF_INET, host, &v4.sin_addr)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: v4, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        XCTAssertEqual(connected, 0)
        // The port the kernel gave our end, to compare with what the server saw.
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
        }
        let localPort = withUnsafeBytes(of: &local) { raw in
            family == AF_INET6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
        for _ in 0..<2000 {
            if let peer = seen.withLock({ $0 }) { return (peer, localPort) }
            usleep(5000)
        }
        XCTFail("no connection accepted")
        return nil
    }

    func testIPv4LoopbackPeer() throws {
        let result = try XCTUnwrap(try acceptedPeer(host: "127.0.0.1", family: AF_INET))
        let peer = try XCTUnwrap(result.0)
        XCTAssertTrue(peer.isLoopback)
        XCTAssertFalse(peer.isIPv6)
        XCTAssertEqual(peer.description, "127.0.0.1:\(result.1)")
    }

    func testIPv6LoopbackPeer() throws {
        guard let result = try acceptedPeer(host: "::1", family: AF_INET6) else {
            throw XCTSkip("no IPv6 loopback on this machine")
        }
        let peer = try XCTUnwrap(result.0)
        XCTAssertTrue(peer.isLoopback)
        XCTAssertTrue(peer.isIPv6)
        XCTAssertEqual(peer.description, "[::1]:\(result.1)")
    }
}
