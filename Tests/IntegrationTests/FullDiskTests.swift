import Foundation
import Glibc
import HTTPCache
import XCTest

/// A cache folder on a tiny tmpfs: once it is full, bytes pass through.
final class FullDiskTests: XCTestCase {
    func testFullDiskDegradesToPassThrough() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        fixture.server.stop()
        let mounted = try TestTools.run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", fixture.cacheDirectory])
        guard mounted.succeeded else { throw XCTSkip("cannot mount a tmpfs here: \(mounted.stderr)") }
        defer { _ = try? TestTools.run("/bin/umount", ["-l", fixture.cacheDirectory]) }
        try fixture.restartProxy()

        let file = try fixture.file("big.mp4", size: 10_000_000, seed: 12)
        // The download fills the disk at about 3 MB and carries on without storing.
        let whole = try fixture.get("big.mp4")
        XCTAssertEqual(whole.status, 200)
        XCTAssertBytes(whole.body, equal: file)
        // Later requests: cached bytes from the file, the rest passed through.
        for range in [0..<1_000_000, 2_500_000..<6_000_000, 9_000_000..<10_000_000] {
            let response = try fixture.get("big.mp4", range: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
            XCTAssertEqual(response.status, 206)
            XCTAssertBytes(response.body, equal: file, range: range)
        }
        let other = try fixture.file("other.mp4", size: 4_000_000, seed: 13)
        XCTAssertBytes(try fixture.get("other.mp4").body, equal: other)
        // A slow reader of a passed-through resource: the download waits for it.
        let slow = try fixture.connect()
        try slow.sendRequest(path: try fixture.proxyPath("other.mp4"), headers: [("Range", "bytes=100-")])
        let head = try slow.readResponseHead()
        XCTAssertEqual(head.status, 206)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertBytes(try slow.readRawBytes(4_000_000 - 100), equal: other, range: 100..<4_000_000)
    }
}
