import Foundation
import Glibc
import HTTPCache
import XCTest

/// Issue #14: bounded under abuse, private on disk, storage faults, who may talk to the proxy.
final class HardeningTests: XCTestCase {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    // MARK: bounded

    func testSlowlorisClosedWithinHeadTimeoutWhileOthersAreServed() throws {
        let fixture = try ProxyFixture { $0.clientHeadTimeout = 2 }
        defer { fixture.stop() }
        var slow: [RawHTTPConnection] = []
        for _ in 0..<500 {
            let connection = try RawHTTPConnection(port: fixture.server.servingPort)
            try connection.send("GET /ping HTTP/1.1\r\n")
            slow.append(connection)
        }
        let started = Date()
        // Trickle a byte on each every 300 ms: partial reads must not restart the timer.
        var served: [TimeInterval] = []
        for round in 0..<5 {
            for connection in slow { try? connection.send("X-Slow-\(round): 1\r\n") }
            let before = Date()
            let pong = try RawHTTPClient.get(url: "http://127.0.0.1:\(fixture.server.servingPort)/ping", timeout: 5)
            served.append(Date().timeIntervalSince(before))
            XCTAssertEqual(pong.status, 200)
            Thread.sleep(forTimeInterval: 0.3)
        }
        XCTAssertLessThan(served.max() ?? 99, 1.0, "a normal client is served in under a second: \(served)")
        let closedAll = TestTools.waitUntil(timeout: 4) { slow.allSatisfy { $0.peerClosed(within: 0) } }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue(closedAll, "\(slow.filter { !$0.peerClosed(within: 0) }.count) slowloris connections still open")
        XCTAssertLessThan(elapsed, 2 + 3.5, "closed within the 2 s head timeout (plus slack)")
        for connection in slow { connection.close() }
    }

    func testIdleConnectionsBeyondTheFileLimitStillLeavePingAnswered() throws {
        let prlimit = try TestTools.requireTool("prlimit")
        // Enough descriptors in this process for 1,500 client sockets.
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_max >= 4096 else { throw XCTSkip("hard fd limit \(limit.rlim_max) too low for the test client") }
        limit.rlim_cur = limit.rlim_max
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path,
                                     launcher: [prlimit, "--nofile=1024:1024"])
        defer { proxy.terminate() }
        var idle: [RawHTTPConnection] = []
        for _ in 0..<1500 {
            guard let connection = try? RawHTTPConnection(port: proxy.port, timeout: 2) else { break }
            idle.append(connection)
        }
        XCTAssertEqual(idle.count, 1500, "the kernel accepted every connection")
        // The proxy takes them in and closes the oldest idle ones for room.
        TestTools.waitUntil(timeout: 10) { idle.filter { $0.peerClosed(within: 0) }.count > 1500 - 819 }
        let pong = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/ping", timeout: 5)
        XCTAssertEqual(pong.status, 200)
        XCTAssertEqual(String(decoding: pong.body, as: UTF8.self), "pong\n")
        let closed = idle.filter { $0.peerClosed(within: 0) }.count
        XCTAssertGreaterThan(closed, 1500 - 819, "the oldest idle connections were closed to stay under 80% of 1024")
        for connection in idle { connection.close() }
    }

    func testClientThatStopsReadingIsClosedAfterTheSendTimeout() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 100 << 20, in: www, name: "big.bin")
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path, extraArguments: ["--client-timeout", "2"])
        defer { proxy.terminate() }
        let url = try proxy.proxyURL(origin.url("/big.bin"))
        let warm = try RawHTTPClient.get(url: url, timeout: 60)
        XCTAssertEqual(warm.body.count, file.size)
        let before = proxy.residentBytes
        let path = try RawHTTPClient.parse(url: url).path
        let stalled = try RawHTTPConnection(port: proxy.port)
        try stalled.sendRequest(path: path)
        // Seen from the proxy: the kernel may keep unsent bytes of a closed
        // socket, so the client itself cannot tell; /stats counts connections.
        func openConnections() -> Int? {
            guard let stats = try? RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/stats", timeout: 5),
                  let json = try? JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any] else { return nil }
            return json["open_connections"] as? Int
        }
        let started = Date()
        XCTAssertTrue(TestTools.waitUntil(timeout: 2) { openConnections() == 2 }, "the stalled client and /stats")
        let closed = TestTools.waitUntil(timeout: 8, pollInterval: 0.1) { openConnections() == 1 }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue(closed, "a client that reads nothing is closed")
        XCTAssertGreaterThanOrEqual(elapsed, 1.5, "not before the send timeout")
        Sanitizer.assertGrowth(proxy.residentBytes - before, below: 16 << 20, "a hit is queued as file ranges, not memory")
        stalled.close()
    }

    func testTwentyThousandFailingURLsKeepMemoryBounded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let logPath = directory.file("log").path
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path,
                                     extraArguments: ["--log-file", logPath, "--log-level", "info"])
        defer { proxy.terminate() }
        // Drain its console: a full stderr pipe would block the proxy.
        proxy.stderr.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
        func fail(_ i: Int) throws {
            let long = String(repeating: "x", count: 200)
            let path = try RawHTTPClient.parse(url: MediaCache.proxyURL(
                for: origin.url("/missing/\(long)/\(i).mp4"), host: "127.0.0.1", port: proxy.port)).path
            // A fresh connection each: error responses may close theirs.
            let status = try RawHTTPConnection(port: proxy.port).get(path).status
            guard status == 404 else { throw TestSupportError("status \(status) for URL \(i)") }
        }
        for i in 0..<1000 { try fail(i) }  // warm up allocator and tables
        let before = proxy.residentBytes
        for i in 1000..<20_000 { try fail(i) }
        let grown = proxy.residentBytes - before
        Sanitizer.assertGrowth(grown, below: 16 << 20, "RSS grew by \(grown) bytes over 19,000 failing URLs")
        let log = try String(contentsOfFile: logPath, encoding: .utf8)
        let mentions = log.components(separatedBy: "/missing/\(String(repeating: "x", count: 200))/12345.mp4").count - 1
        XCTAssertEqual(mentions, 1, "each failure is logged once")
    }

    // MARK: private on disk

    func testFolderFilesAndLogsArePrivate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let accessLog = directory.file("access.log").path
        XCTAssertTrue(FileManager.default.createFile(atPath: accessLog, contents: Data(), attributes: [.posixPermissions: 0o644]))
        let fixture = try ProxyFixture { $0.accessLogPath = accessLog }
        defer { fixture.stop() }
        let file = try fixture.file("a.bin", size: 100_000)
        XCTAssertEqual(try fixture.get("a.bin").body, file.bytes)
        fixture.server.close()  // flushes metadata
        let cache = fixture.cacheDirectory
        XCTAssertEqual(try mode(cache), 0o700)
        XCTAssertEqual(try mode(cache + "/lock"), 0o600)
        XCTAssertEqual(try mode(accessLog), 0o600, "an existing 0644 access log is narrowed")
        let files = CacheFolderFiles.all(cache)
        XCTAssertEqual(files.count, 1, "one entry: one file (its metadata in the file's attribute)")
        for file in files {
            XCTAssertEqual(try mode(file), 0o600, file)
            XCTAssertEqual(try mode((file as NSString).deletingLastPathComponent), 0o700, file)
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: cache) where name.hasPrefix("index.") {
            XCTAssertEqual(try mode(cache + "/" + name), 0o600, name)
        }
        let logFile = directory.file("httpcache.log").path
        XCTAssertTrue(FileManager.default.createFile(atPath: logFile, contents: Data(), attributes: [.posixPermissions: 0o644]))
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache2").path, extraArguments: ["--log-file", logFile])
        proxy.terminate()
        XCTAssertEqual(try mode(logFile), 0o600, "the log file is narrowed to 0600")
    }

    func testPreexistingLooseLockFileDoesNotLeakTheToken() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let cache = directory.file("cache").path
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        let lock = cache + "/lock"
        XCTAssertTrue(FileManager.default.createFile(atPath: lock, contents: Data("planted\n".utf8), attributes: [.posixPermissions: 0o666]))
        chmod(lock, 0o666)  // past the umask
        let spy = open(lock, O_RDONLY)  // what another local user would hold open
        XCTAssertGreaterThanOrEqual(spy, 0)
        defer { close(spy) }
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = pread(spy, &buffer, buffer.count, 0)
        XCTAssertFalse(String(decoding: buffer.prefix(max(0, n)), as: UTF8.self).contains("token"), "the old file got no token")
        XCTAssertEqual(try mode(lock), 0o600)
        XCTAssertTrue(try String(contentsOfFile: lock, encoding: .utf8).contains("token "), "the new lock file has it")
    }

    // MARK: storage faults

    func testCacheFolderRemovedMidRunStillServesAndCachesAgain() throws {
        let clock = TestClock()
        let fixture = try ProxyFixture { $0.clock = { clock.now } }
        defer { fixture.stop() }
        let a = try fixture.file("a.bin", size: 3_000_000, seed: 1)
        let b = try fixture.file("b.bin", size: 2_000_000, seed: 2)
        let c = try fixture.file("c.bin", size: 1_000_000, seed: 3)
        XCTAssertEqual(try fixture.get("a.bin").body, a.bytes)
        // Removed once a.bin's metadata is written (a write racing the removal could refuse it).
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { CacheFolderFiles.metaPaths(fixture.cacheDirectory).count == 1 })
        try FileManager.default.removeItem(atPath: fixture.cacheDirectory)
        for _ in 0..<2 {
            let hit = try fixture.get("a.bin")
            XCTAssertEqual(hit.status, 200)
            XCTAssertEqual(hit.body, a.bytes, "a cached resource still byte-exact")
            let miss = try fixture.get("b.bin")
            XCTAssertEqual(miss.status, 200)
            XCTAssertEqual(miss.body, b.bytes, "a new resource passed through byte-exact")
            let range = try fixture.get("b.bin", range: "bytes=1000-1999")
            XCTAssertEqual(range.status, 206)
            XCTAssertEqual(range.body, Array(b.bytes[1000...1999]))
        }
        // After the retry interval (5 s) the folder is recreated and caching resumes:
        // the cache's clock is moved past it.
        clock.advance(seconds: 6)
        XCTAssertEqual(try fixture.get("c.bin").body, c.bytes)
        let cachedAgain = TestTools.waitUntil(timeout: 10) {
            !CacheFolderFiles.metaPaths(fixture.cacheDirectory).isEmpty
        }
        XCTAssertTrue(cachedAgain, "the cache folder was recreated and holds the new resource")
        let before = fixture.originLog("c.bin").count
        XCTAssertEqual(try fixture.get("c.bin").body, c.bytes)
        XCTAssertEqual(fixture.originLog("c.bin").count, before, "served from the cache again")
    }

    // MARK: who may talk to it

    func testForeignHostIsMisdirected() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        _ = try fixture.file("a.bin", size: 1000)
        let connection = try fixture.connect()
        let path = try fixture.proxyPath("a.bin")
        XCTAssertEqual(try connection.get(path, headers: [("Host", "attacker.example")]).status, 421)
        XCTAssertEqual(try fixture.connect().get("/ping", headers: [("Host", "attacker.example:80")]).status, 421)
        XCTAssertEqual(try fixture.connect().get(path, headers: [("Host", "localhost")]).status, 200)
    }

    func testLANModeServesSignedURLsOnlyAndAdminToLoopback() throws {
        guard let lanAddress = Self.nonLoopbackAddress() else {
            throw XCTSkip("no non-loopback IPv4 address on this machine (AccessPolicyTests covers the decision table)")
        }
        let fixture = try ProxyFixture { $0.host = "0.0.0.0" }
        defer { fixture.stop() }
        let file = try fixture.file("movie.mp4", size: 500_000)
        let signed = try fixture.proxyURL("movie.mp4")
        let signedPath = try RawHTTPClient.parse(url: signed).path
        let unsignedPath = try XCTUnwrap(URL(string: try MediaCache.proxyURL(
            for: fixture.origin.url("/movie.mp4"), host: "127.0.0.1", port: 1))?.path)
        func get(_ path: String, from host: String = lanAddress) throws -> RawResponse {
            try RawHTTPConnection(host: host, port: fixture.server.servingPort).get(path)
        }
        XCTAssertEqual(try get(unsignedPath).status, 403, "unsigned")
        let ok = try get(signedPath)
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.body, file.bytes, "signed: byte-exact")
        var tampered = Array(signedPath.utf8)
        let index = signedPath.utf8.count - "/movie.mp4".utf8.count - 3  // inside the signature
        tampered[index] = tampered[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertEqual(try get(String(decoding: tampered, as: UTF8.self)).status, 403, "one signature character changed")
        let other = try fixture.file("other.mp4", size: 1000)
        let otherSigned = try RawHTTPClient.parse(url: try fixture.proxyURL(other.name)).path
        let signature = signedPath.split(separator: "/")[2]
        let otherOrigin = otherSigned.split(separator: "/")[1]
        XCTAssertEqual(try get("/p/\(otherOrigin)/\(signature)/other.mp4").status, 403, "signature of another URL")
        XCTAssertEqual(try get("/admin/cache").status, 403, "admin from a non-loopback peer")
        XCTAssertEqual(try get("/stats").status, 403, "stats from a non-loopback peer")
        XCTAssertEqual(try get("/stats", from: "127.0.0.1").status, 200, "stats from loopback")
        XCTAssertEqual(try get("/ping").status, 200)
        // `httpcache url --cache-dir` mints the same signed URLs.
        let minted = try TestTools.run(CLITests.binary, ["url", fixture.origin.url("/movie.mp4"), "--port",
                                                         String(fixture.server.servingPort), "--cache-dir", fixture.cacheDirectory])
        XCTAssertEqual(try RawHTTPClient.parse(url: minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).path,
                       signedPath, "CLI and API sign alike")
        XCTAssertEqual(try mode(fixture.cacheDirectory + "/url-key"), 0o600)
    }

    /// The first IPv4 address of this machine that is not loopback.
    static func nonLoopbackAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var cursor = list
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var inet = UnsafeRawPointer(address).load(as: sockaddr_in.self).sin_addr
            inet_ntop(AF_INET, &inet, &text, socklen_t(text.count))
            let string = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !string.hasPrefix("127.") { return string }
        }
        return nil
    }
}
