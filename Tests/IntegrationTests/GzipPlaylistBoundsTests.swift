import Foundation
import HTTPCache
import XCTest

/// Issue #37: a gzip playlist is inflated off the loop whatever its
/// compressed size, and a stored version that cannot be inflated within the
/// rewrite cap is tried once, not once per request.
final class GzipPlaylistBoundsTests: XCTestCase {
    func testAStoredGzipBombIsInflatedOnceAndNeverOnTheLoop() throws {
        let directory = try TemporaryDirectory(prefix: "gzip-bomb")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // A playlist that inflates past the 16 MiB rewrite cap from a few tens of KB.
        let playlist = root.appendingPathComponent("bomb.m3u8")
        var text = Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n".utf8)
        text.append(Data(repeating: UInt8(ascii: "#"), count: 17 << 20))
        try text.write(to: playlist)
        let zipped = try TestTools.run("gzip", ["-n", "-9", "-f", playlist.path])
        XCTAssertTrue(zipped.succeeded, zipped.stderr)
        try FileManager.default.moveItem(at: root.appendingPathComponent("bomb.m3u8.gz"), to: playlist)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: playlist.path)
        let stored = try Array(Data(contentsOf: playlist))
        XCTAssertLessThan(stored.count, 256 << 10, "small enough that its size alone kept it on the loop")

        let origin = try NginxOrigin(root: root, extraServerConfig: "location ~ \\.m3u8$ { add_header Content-Encoding gzip; }")
        defer { origin.stop() }
        let log = directory.file("proxy.log").path
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path,
                                     extraArguments: ["--loops", "1", "--log-file", log])
        defer { proxy.terminate() }
        proxy.stderr.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
        let url = try proxy.proxyURL(origin.url("/bomb.m3u8"))
        let first = try RawHTTPClient.get(url: url, headers: [("Accept-Encoding", "gzip")], timeout: 20)
        XCTAssertEqual(first.status, 200)
        XCTAssertTrue(first.body == stored, "passed through unchanged")

        let ping = "http://127.0.0.1:\(proxy.port)/ping"
        let slowest = LockedValue(0.0)
        let pinging = LockedValue(true)
        let pinger = DispatchGroup()
        pinger.enter()
        Thread.detachNewThread {
            defer { pinger.leave() }
            while pinging.withLock({ $0 }) {
                let started = Date()
                let pong = try? RawHTTPClient.get(url: ping, timeout: 5)
                let took = pong?.status == 200 ? Date().timeIntervalSince(started) : 99
                slowest.withLock { $0 = max($0, took) }
                usleep(5_000)
            }
        }
        let bodies = LockedValue([[UInt8]]())
        let group = DispatchGroup()
        for _ in 0..<30 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let response = try? RawHTTPClient.get(url: url, headers: [("Accept-Encoding", "gzip")], timeout: 30)
                bodies.withLock { $0.append(response?.status == 200 ? response!.body : []) }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        pinging.withLock { $0 = false }
        XCTAssertEqual(pinger.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(bodies.withLock { $0 }.filter { $0 != stored }.count, 0, "every client got the stored bytes")
        XCTAssertLessThan(slowest.withLock { $0 }, 0.25, "/ping answered while the bomb was served")
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        let attempts = lines.filter { $0.contains("cannot") && $0.contains("gzip body") }
        XCTAssertEqual(attempts.count, 1, "one inflate attempt for the stored version: \(attempts.prefix(3))")
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/bomb.m3u8" }.count, 1, "served from the cache")
    }
}
