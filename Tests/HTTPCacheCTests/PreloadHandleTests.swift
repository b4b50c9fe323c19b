import Foundation
import Glibc
@testable import HTTPCacheC
import XCTest

/// hc_preload_* called from Swift against a loopback listener that never
/// answers: what happens to a preload when its cache closes.
final class PreloadHandleTests: XCTestCase {
    private let folder = CacheFolder("preload")

    override func tearDown() { folder.remove() }

    /// A listening socket on 127.0.0.1 that accepts nothing: a request to it
    /// connects (the kernel's backlog) and is never answered.
    private func silentListener() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// hc_close ends a preload still waiting for its origin: `done` runs with
    /// HC_ECLOSED, and before hc_close returns (no callback comes after it).
    func testCloseEndsARunningPreloadBeforeReturning() throws {
        let listener = try silentListener()
        defer { close(listener.fd) }
        let cache = try folder.open()
        let outcome = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        outcome.initialize(to: 1)
        defer { outcome.deallocate() }
        var preload: OpaquePointer?
        let started = hc_preload_start(cache, "http://127.0.0.1:\(listener.port)/slow.mp4", 0, -1, nil, { userdata, code in
            userdata!.assumingMemoryBound(to: Int32.self).pointee = code
        }, outcome, &preload)
        XCTAssertEqual(started, 0)
        // What hc_close asks of each open preload (the cache's own closing takes
        // long enough after it to hide a callback that comes late).
        try XCTUnwrap(PreloadHandle.from(preload)).cacheClosing()
        XCTAssertEqual(outcome.pointee, -11, "done ran with HC_ECLOSED before the closing returned")
        hc_close(cache)
        XCTAssertEqual(outcome.pointee, -11, "called once")
        hc_preload_free(preload)
    }
}
