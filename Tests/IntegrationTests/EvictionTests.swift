import Foundation
import HTTPCache
import XCTest

/// The byte limit: least recently used first, never one in use, and a
/// resource larger than the limit still plays.
final class EvictionTests: XCTestCase {
    var fixture: ProxyFixture!
    /// The cache's clock: reads a second apart without a sleep make the LRU order.
    let clock = TestClock()

    override func setUpWithError() throws {
        fixture = try ProxyFixture { [clock] in
            $0.maxCacheSize = 1_000_000
            $0.clock = { clock.now }
        }
    }

    override func tearDown() {
        fixture?.stop()
        fixture = nil
    }

    private func cachedNames() throws -> Set<String> {
        Set(fixture.server.cachedResources().map { URL(string: $0.url)!.lastPathComponent })
    }

    func testLeastRecentlyReadIsEvictedFirst() throws {
        var files: [String: TestFile] = [:]
        for (index, name) in ["a.bin", "b.bin", "c.bin", "d.bin"].enumerated() {
            files[name] = try fixture.file(name, size: 300_000, seed: UInt64(index + 1))
        }
        for name in ["a.bin", "b.bin", "c.bin", "a.bin"] {  // a is read again: b is now the oldest
            XCTAssertBytes(try fixture.get(name).body, equal: files[name]!)
            clock.advance(seconds: 1)
        }
        XCTAssertEqual(try cachedNames(), ["a.bin", "b.bin", "c.bin"])
        XCTAssertBytes(try fixture.get("d.bin").body, equal: files["d.bin"]!)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { (try? self.cachedNames()) == ["a.bin", "c.bin", "d.bin"] },
                      "cached: \((try? cachedNames()) ?? [])")
        XCTAssertLessThanOrEqual(fixture.server.cacheSize(), 1_000_000)
        // The evicted one comes back from the origin, byte-exact.
        XCTAssertBytes(try fixture.get("b.bin").body, equal: files["b.bin"]!)
    }

    /// A hit writes no metadata: its access time goes to the index (its
    /// journal, batched), which still decides the LRU order after a restart.
    func testHitsUpdateTheJournalNotTheMetadataAndSurviveARestart() throws {
        var files: [String: TestFile] = [:]
        for (index, name) in ["a.bin", "b.bin", "c.bin", "d.bin"].enumerated() {
            files[name] = try fixture.file(name, size: 300_000, seed: UInt64(index + 1))
        }
        for name in ["a.bin", "b.bin", "c.bin"] {
            XCTAssertBytes(try fixture.get(name).body, equal: files[name]!)
            clock.advance(seconds: 1)
        }
        try fixture.restartProxy()  // every metadata file written
        let metaFiles = CacheFolderFiles.metaPaths(fixture.cacheDirectory)
        XCTAssertEqual(metaFiles.count, 3)
        let before = try metaFiles.map { try XCTUnwrap(CacheFolderFiles.metadata($0)) }
        XCTAssertBytes(try fixture.get("a.bin").body, equal: files["a.bin"]!)  // a hit: a is now the newest
        try fixture.restartProxy()
        let after = try metaFiles.map { try XCTUnwrap(CacheFolderFiles.metadata($0)) }
        XCTAssertEqual(before, after, "a hit rewrote no metadata")
        // The order is in the index (a snapshot written at the clean stop).
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.cacheDirectory)
        XCTAssertTrue(names.contains { $0.hasPrefix("index.") }, "\(names)")
        // b is the least recently used once the index is read: it goes first.
        XCTAssertBytes(try fixture.get("d.bin").body, equal: files["d.bin"]!)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { (try? self.cachedNames()) == ["a.bin", "c.bin", "d.bin"] },
                      "cached: \((try? cachedNames()) ?? [])")
    }

    func testResourceInUseIsNotEvictedUnderItsReader() throws {
        // A larger limit: the files must outgrow the socket buffers.
        fixture.configure = { [clock] in
            $0.maxCacheSize = 20_000_000
            $0.clock = { clock.now }
        }
        try fixture.restartProxy()
        let slow = try fixture.file("slow.bin", size: 12_000_000, seed: 1)
        let other = try fixture.file("other.bin", size: 12_000_000, seed: 2)
        XCTAssertBytes(try fixture.get("slow.bin").body, equal: slow)  // cached, and the oldest
        clock.advance(seconds: 1)
        // A reader takes the head and then stalls with most of the body unsent.
        let reader = try fixture.connect()
        try reader.sendRequest(path: try fixture.proxyPath("slow.bin"))
        let head = try reader.readResponseHead()
        XCTAssertEqual(head.status, 200)
        // Filling the cache past the limit must not delete the file under it.
        XCTAssertBytes(try fixture.get("other.bin").body, equal: other)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { self.fixture.server.cacheSize() <= 20_000_000 }, "an idle entry made room")
        XCTAssertTrue(try cachedNames().contains("slow.bin"), "evicted under its reader")
        XCTAssertTrue(fixture.server.cachedResources().first { $0.url.hasSuffix("slow.bin") }?.isInUse ?? false)
        XCTAssertBytes(try reader.readRawBytes(12_000_000), equal: slow)
        reader.close()
        // The limit held throughout: with the oldest entry in use, the next
        // idle one made room; the total fits.
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { self.fixture.server.cacheSize() <= 20_000_000 })
        XCTAssertEqual(try cachedNames(), ["slow.bin"])
    }

    func testResourceLargerThanTheLimitPlaysAndIsNotKept() throws {
        let big = try fixture.file("big.bin", size: 3_000_000, seed: 8)
        let small = try fixture.file("small.bin", size: 100_000, seed: 9)
        XCTAssertBytes(try fixture.get("small.bin").body, equal: small)
        XCTAssertBytes(try fixture.get("big.bin").body, equal: big)
        let ranged = try fixture.get("big.bin", range: "bytes=2500000-")
        XCTAssertBytes(ranged.body, equal: big, range: 2_500_000..<3_000_000)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { (try? self.cachedNames()) == ["small.bin"] },
                      "cached: \((try? cachedNames()) ?? [])")
        XCTAssertLessThanOrEqual(fixture.server.cacheSize(), 1_000_000)
        let dataBytes = try CacheFolderFiles.dataPaths(fixture.cacheDirectory).reduce(0) { total, path in
            total + ((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        }
        XCTAssertLessThanOrEqual(dataBytes, 1_100_000, "data files' total once downloads settled")
    }
}
