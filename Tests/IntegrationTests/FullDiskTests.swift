import Foundation
import Glibc
import HTTPCache
import XCTest

/// Storage that refuses writes while serving: a tiny tmpfs that fills up,
/// and a folder made read-only. Bytes pass through until it can be written again.
final class FullDiskTests: XCTestCase {
    func testFullDiskDegradesToPassThrough() throws {
        let fixture = try ProxyFixture(capturingLogs: true)
        defer { fixture.stop() }
        fixture.server.close()
        let mounted = try TestTools.run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", fixture.cacheDirectory])
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
        let pauses = { fixture.logs.lines(.debug, containing: "download paused: a client reads slower").count }
        let pausedBefore = pauses()  // those of the readers above, if they lagged
        let slow = try fixture.connect()
        try slow.sendRequest(path: try fixture.proxyPath("other.mp4"), headers: [("Range", "bytes=100-")])
        let head = try slow.readResponseHead()
        XCTAssertEqual(head.status, 206)
        // The origin side stops for the reader, or (the kernel's buffers taking it all) has sent everything.
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            pauses() > pausedBefore || (try? fixture.stats())?["active_downloads"] as? Int == 0
        }, "the download waits for its slow reader or is done")
        XCTAssertBytes(try slow.readRawBytes(4_000_000 - 100), equal: other, range: 100..<4_000_000)
    }

    /// The resources folder becomes read-only while serving (a read-only bind
    /// mount over it; root ignores file modes): new resources pass through
    /// byte-exact, cached ones are still served, and storing resumes by itself
    /// once the folder is writable again.
    func testReadOnlyFolderDegradesAndRecovers() throws {
        let clock = TestClock()
        let fixture = try ProxyFixture { $0.clock = { clock.now } }
        defer { fixture.stop() }
        let a = try fixture.file("a.bin", size: 2_000_000, seed: 21)
        let b = try fixture.file("b.bin", size: 1_500_000, seed: 22)
        let c = try fixture.file("c.bin", size: 700_000, seed: 23)
        XCTAssertBytes(try fixture.get("a.bin").body, equal: a)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { CacheFolderFiles.metaPaths(fixture.cacheDirectory).count == 1 },
                      "a.bin's metadata written")
        let resources = fixture.cacheDirectory + "/resources"
        let bound = try TestTools.run("/bin/mount", ["--bind", resources, resources])
        guard bound.succeeded else { throw XCTSkip("cannot bind-mount here: \(bound.stderr)") }
        var mounted = true
        defer { if mounted { _ = try? TestTools.run("/bin/umount", ["-l", resources]) } }
        let readOnly = try TestTools.run("/bin/mount", ["-o", "remount,bind,ro", resources])
        guard readOnly.succeeded else { throw XCTSkip("cannot make the bind mount read-only: \(readOnly.stderr)") }
        XCTAssertFalse(FileManager.default.createFile(atPath: resources + "/probe", contents: Data([1])),
                       "the folder refuses writes")

        for _ in 0..<2 {
            let miss = try fixture.get("b.bin")
            XCTAssertEqual(miss.status, 200)
            XCTAssertBytes(miss.body, equal: b)
            let range = try fixture.get("b.bin", range: "bytes=1000-99999")
            XCTAssertEqual(range.status, 206)
            XCTAssertBytes(range.body, equal: b, range: 1000..<100_000)
            let hit = try fixture.get("a.bin", range: "bytes=500000-1499999")
            XCTAssertEqual(hit.status, 206)
            XCTAssertBytes(hit.body, equal: a, range: 500_000..<1_500_000)
        }
        XCTAssertEqual(fixture.originLog("a.bin").count, 1, "the cached resource came from the cache")
        XCTAssertGreaterThanOrEqual(fixture.originLog("b.bin").count, 3, "nothing of b.bin could be stored: fetched again")
        XCTAssertEqual(CacheFolderFiles.metaPaths(fixture.cacheDirectory).count, 1, "only a.bin's entry")

        let released = try TestTools.run("/bin/umount", [resources])
        XCTAssertTrue(released.succeeded, released.stderr)
        mounted = !released.succeeded
        // After the retry interval (5 s) storing resumes: the cache's clock is moved past it.
        clock.advance(seconds: 6)
        XCTAssertBytes(try fixture.get("c.bin").body, equal: c)
        let before = fixture.originLog("c.bin").count
        let stored = TestTools.waitUntil(timeout: 10) {
            (try? fixture.get("c.bin", range: "bytes=0-99").status) == 206
                && fixture.originLog("c.bin").count == before
        }
        XCTAssertTrue(stored, "c.bin served from the cache after recovery")
        XCTAssertBytes(try fixture.get("c.bin").body, equal: c)
        XCTAssertEqual(fixture.originLog("c.bin").count, before, "stored once writable again")
    }
}
