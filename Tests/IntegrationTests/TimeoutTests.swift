import Foundation
import Glibc
import XCTest

/// An origin that accepts connections and never answers (what nginx can't do).
final class SilentOrigin: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private var accepted: [Int32] = []
    private let lock = NSLock()

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw TestSupportError("silent origin: bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.fd = fd
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    // stop() shut the socket down; closing it here, after the last
                    // accept, means no later test can see this descriptor number reused.
                    close(fd)
                    return
                }
                lock.lock()
                accepted.append(client)
                lock.unlock()
            }
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        lock.lock()
        accepted.forEach { close($0) }
        lock.unlock()
    }
}

final class TimeoutTests: XCTestCase {
    func testSilentOriginGives504() throws {
        let fixture = try ProxyFixture { $0.readTimeout = 1 }
        defer { fixture.stop() }
        let silent = try SilentOrigin()
        defer { silent.stop() }
        let url = try fixture.server.proxyURL(for: "http://127.0.0.1:\(silent.port)/slow.mp4")
        let started = Date()
        let response = try RawHTTPClient.get(url: url, timeout: 10)
        XCTAssertEqual(response.status, 504)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertTrue(response.bodyString.contains("timed out"), response.bodyString)
    }
}
