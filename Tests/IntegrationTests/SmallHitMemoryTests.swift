import Foundation
import HTTPCache
import XCTest

/// Small plain hits answered from memory (a copy's body, see PlainHitCache):
/// byte-exact for whole bodies, ranges, HEAD and conditional requests, in the
/// proxy-URL and reverse modes; never once the object was removed or replaced
/// (its next answer has the new bytes, in the same second); never from an
/// encrypted folder. `hits_from_memory` in /stats counts them.
final class SmallHitMemoryTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var root: URL!
    private var origin: NginxOrigin!
    private var server: MediaCache!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "httpcache-memory-tier")
        root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("fresh"), withIntermediateDirectories: true)
        origin = try NginxOrigin(root: root, extraServerConfig: """
            location /fresh/ { add_header Cache-Control "max-age=60"; }
            """)
    }

    override func tearDown() {
        server?.close()
        origin?.stop()
    }

    private func startProxy(reverse: Bool = false, encrypted: Bool = false) throws {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.url.appendingPathComponent("cache").path)
        if reverse { configuration.origin = origin.baseURL }
        if encrypted { configuration.encryptionKey = EncryptionTests.key(5) }
        server = try MediaCache(configuration: configuration)
        try server.serve()
    }

    private func file(_ name: String, size: Int, seed: UInt64) throws -> TestFile {
        try TestFile.random(size: size, seed: seed, in: root.appendingPathComponent("fresh"), name: name)
    }

    /// A keep-alive connection and the request path of `/fresh/<name>` in the proxy's mode.
    private func path(_ name: String, reverse: Bool) throws -> String {
        reverse ? "/fresh/" + name : try RawHTTPClient.parse(url: try server.proxyURL(for: origin.url("/fresh/" + name))).path
    }

    private func fromMemory() throws -> Int {
        let response = try RawHTTPClient.get(url: "http://127.0.0.1:\(server.servingPort)/_httpcache/stats")
        XCTAssertEqual(response.status, 200)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        return try XCTUnwrap(json["hits_from_memory"] as? Int)
    }

    private func checkHits(reverse: Bool) throws {
        try startProxy(reverse: reverse)
        let small = try file("small.bin", size: 16 << 10, seed: 31)
        let large = try file("large.bin", size: 40 << 10, seed: 32)  // past the tier's 32 KiB per object
        let connection = try RawHTTPConnection(port: server.servingPort, timeout: 30)
        defer { connection.close() }
        let smallPath = try path(small.name, reverse: reverse), largePath = try path(large.name, reverse: reverse)
        let first = try connection.get(smallPath)  // the miss that stores it
        XCTAssertEqual(first.status, 200)
        XCTAssertBytes(first.body, equal: small)
        XCTAssertBytes(try connection.get(largePath).body, equal: large)
        let before = try fromMemory()
        for _ in 0..<3 {
            let hit = try connection.get(smallPath)
            XCTAssertEqual(hit.status, 200)
            XCTAssertEqual(hit.header("Content-Length"), String(small.size))
            XCTAssertBytes(hit.body, equal: small)
            XCTAssertBytes(try connection.get(largePath).body, equal: large)
        }
        let part = try connection.get(smallPath, range: "bytes=1000-5095")
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.header("Content-Range"), "bytes 1000-5095/\(small.size)")
        XCTAssertBytes(part.body, equal: small, range: 1000..<5096)
        let head = try connection.request(method: "HEAD", path: smallPath)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("Content-Length"), String(small.size))
        XCTAssertEqual(head.body, [])
        let etag = try XCTUnwrap(first.header("ETag"))
        let notModified = try connection.get(smallPath, headers: [("If-None-Match", etag)])
        XCTAssertEqual(notModified.status, 304)
        XCTAssertEqual(notModified.body, [])
        let otherVersion = try connection.get(smallPath, range: "bytes=0-99", headers: [("If-Range", "\"other\"")])
        XCTAssertEqual(otherVersion.status, 200, "If-Range of another version: the whole body")
        XCTAssertBytes(otherVersion.body, equal: small)
        // Three whole hits, the range and the If-Range answer; the large file never.
        XCTAssertEqual(try fromMemory() - before, 5)
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/fresh/small.bin" }.count, 1, "every later answer a hit")
    }

    func testSmallHitsComeFromMemoryByteExactThroughProxyURLs() throws {
        try checkHits(reverse: false)
    }

    func testSmallHitsComeFromMemoryByteExactInReverseMode() throws {
        try checkHits(reverse: true)
    }

    /// Removed (purge), then replaced at the origin: the next answer, in the
    /// same second, has the new bytes, never the ones held in memory.
    func testRemovedObjectIsNeverServedFromMemory() throws {
        try startProxy()
        let old = try file("clip.bin", size: 12_000, seed: 41)
        let path = try path(old.name, reverse: false)
        let connection = try RawHTTPConnection(port: server.servingPort, timeout: 30)
        defer { connection.close() }
        for _ in 0..<3 { XCTAssertBytes(try connection.get(path).body, equal: old) }
        XCTAssertGreaterThan(try fromMemory(), 0)
        let new = try file("clip.bin", size: 12_000, seed: 42)
        try server.removeResource(for: origin.url("/fresh/clip.bin"))
        for _ in 0..<3 { XCTAssertBytes(try connection.get(path).body, equal: new) }
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/fresh/clip.bin" }.count, 2, "fetched again once")
    }

    /// Revalidated (a client's `no-cache`) while the origin has a new
    /// version: it replaces the stored one, and every later answer, in the
    /// same second, has its bytes.
    func testReplacedObjectIsNeverServedFromMemory() throws {
        try startProxy(reverse: true)
        let old = try file("song.bin", size: 9_000, seed: 51)
        let connection = try RawHTTPConnection(port: server.servingPort, timeout: 30)
        defer { connection.close() }
        for _ in 0..<3 { XCTAssertBytes(try connection.get("/fresh/song.bin").body, equal: old) }
        XCTAssertGreaterThan(try fromMemory(), 0)
        let new = try file("song.bin", size: 9_500, seed: 52)
        XCTAssertBytes(try connection.get("/fresh/song.bin", headers: [("Cache-Control", "no-cache")]).body, equal: new)
        for _ in 0..<3 {
            let response = try connection.get("/fresh/song.bin")
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.header("Content-Length"), String(new.size))
            XCTAssertBytes(response.body, equal: new)
        }
        // The first fetch, the revalidation (a one-byte probe) that found a new version, its download.
        let fetches = origin.accessLog(waitingFor: 3).filter { $0.uri == "/fresh/song.bin" }
        XCTAssertEqual(fetches.map(\.bodyBytes), [old.size, 1, new.size], "\(fetches)")
    }

    /// In a folder encrypted at rest nothing is held in memory: every hit is
    /// decrypted from its file as it is sent.
    func testEncryptedFolderServesNoHitFromMemory() throws {
        try startProxy(encrypted: true)
        let small = try file("secret.bin", size: 16 << 10, seed: 61)
        let path = try path(small.name, reverse: false)
        let connection = try RawHTTPConnection(port: server.servingPort, timeout: 30)
        defer { connection.close() }
        for _ in 0..<4 { XCTAssertBytes(try connection.get(path).body, equal: small) }
        XCTAssertBytes(try connection.get(path, range: "bytes=10-20").body, equal: small, range: 10..<21)
        XCTAssertEqual(try fromMemory(), 0)
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/fresh/secret.bin" }.count, 1, "hits, decrypted")
    }
}
