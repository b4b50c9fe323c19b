import Foundation
import XCTest

/// Tests of the integration-test harness itself (nginx origin, raw client,
/// fixtures) — no proxy involved.
final class HarnessTests: XCTestCase {
    private let fiveMB = 5 * 1024 * 1024

    func testNginxServesRandomFileByteExact() throws {
        let dir = try TemporaryDirectory()
        let file = try TestFile.random(size: fiveMB, seed: 42, in: dir.url, name: "five.bin")
        XCTAssertEqual(file.bytes, TestFile.randomBytes(count: fiveMB, seed: 42), "generator is deterministic")
        XCTAssertNotEqual(file.slice(0..<64), TestFile.randomBytes(count: 64, seed: 43), "seed matters")

        let origin = try NginxOrigin(root: dir.url)
        defer { origin.stop() }
        XCTAssertTrue(origin.isRunning)
        XCTAssertTrue(origin.baseURL.hasPrefix("http://127.0.0.1:"))

        let response = try RawHTTPClient.get(url: origin.url("/five.bin"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.contentLength, fiveMB)
        XCTAssertEqual(response.header("accept-ranges"), "bytes")
        XCTAssertFalse(response.wasChunked)
        XCTAssertBytes(response.body, equal: file)

        let log = origin.accessLog(waitingFor: 1)
        XCTAssertEqual(log.count, 1)
        XCTAssertEqual(log.first?.status, 200)
        XCTAssertEqual(log.first?.bodyBytes, fiveMB)
        XCTAssertEqual(log.first?.uri, "/five.bin")
        XCTAssertEqual(log.first?.completed, true)
        XCTAssertEqual(origin.bodyBytesServed, fiveMB)
    }

    func testRangeRequestGets206AndIsLogged() throws {
        let dir = try TemporaryDirectory()
        let file = try TestFile.random(size: fiveMB, seed: 7, in: dir.url, name: "r.bin")
        let origin = try NginxOrigin(root: dir.url)
        defer { origin.stop() }

        let response = try RawHTTPClient.get(url: origin.url("/r.bin"), range: "bytes=100-199")
        XCTAssertEqual(response.status, 206)
        XCTAssertEqual(response.header("Content-Range"), "bytes 100-199/\(fiveMB)")
        XCTAssertEqual(response.contentLength, 100)
        XCTAssertBytes(response.body, equal: file, range: 100...199)

        let log = origin.accessLog(waitingFor: 1)
        XCTAssertEqual(log.count, 1)
        let entry = try XCTUnwrap(log.first)
        XCTAssertEqual(entry.status, 206)
        XCTAssertEqual(entry.bodyBytes, 100)
        XCTAssertEqual(entry.range, "bytes=100-199")
        XCTAssertNil(entry.ifRange)
        XCTAssertEqual(entry.method, "GET")

        // If-Range is logged too; a matching ETag keeps the 206.
        let etag = try XCTUnwrap(response.header("ETag"))
        let second = try RawHTTPClient.get(url: origin.url("/r.bin"), range: "bytes=0-9", headers: [("If-Range", etag)])
        XCTAssertEqual(second.status, 206)
        XCTAssertBytes(second.body, equal: file, range: 0...9)
        let log2 = origin.accessLog(waitingFor: 2)
        XCTAssertEqual(log2.last?.ifRange, etag)

        origin.clearAccessLog()
        XCTAssertEqual(origin.accessLog().count, 0)
        _ = try RawHTTPClient.get(url: origin.url("/r.bin"), range: "bytes=-5")
        let log3 = origin.accessLog(waitingFor: 1)
        XCTAssertEqual(log3.count, 1, "nginx keeps logging into the truncated file")
        XCTAssertEqual(log3.first?.bodyBytes, 5)
        XCTAssertEqual(origin.bodyBytesServed, 5)
    }

    func testKeepAliveReusesOneConnection() throws {
        let dir = try TemporaryDirectory()
        let file = try TestFile.random(size: 300_000, seed: 3, in: dir.url, name: "k.bin")
        let origin = try NginxOrigin(root: dir.url)
        defer { origin.stop() }

        let conn = try RawHTTPConnection(port: origin.port, timeout: 5)
        defer { conn.close() }
        let head = try conn.request(method: "HEAD", path: "/k.bin")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.contentLength, file.size)
        XCTAssertTrue(head.body.isEmpty)
        let first = try conn.get("/k.bin", range: "bytes=0-999")
        let second = try conn.get("/k.bin")
        XCTAssertEqual(first.status, 206)
        XCTAssertBytes(first.body, equal: file, range: 0..<1000)
        XCTAssertEqual(second.status, 200)
        XCTAssertBytes(second.body, equal: file)
        XCTAssertFalse(conn.peerClosed(within: 0.2))

        // A second client gets another connection number.
        _ = try RawHTTPClient.get(url: origin.url("/k.bin"), range: "bytes=0-0")

        let log = origin.accessLog(waitingFor: 4)
        XCTAssertEqual(log.count, 4)
        guard log.count == 4 else { return }
        XCTAssertEqual(log[0].method, "HEAD")
        XCTAssertEqual(Set(log[0...2].map(\.connection)).count, 1, "same $connection: \(log)")
        XCTAssertEqual(log[0...2].map(\.connectionRequests), [1, 2, 3])
        XCTAssertNotEqual(log[3].connection, log[0].connection)
        XCTAssertEqual(log[3].connectionRequests, 1)
    }

    func testStopAndStartOnSamePort() throws {
        let dir = try TemporaryDirectory()
        let file = try TestFile.random(size: 10_000, seed: 5, in: dir.url, name: "s.bin")
        let origin = try NginxOrigin(root: dir.url)
        defer { origin.stop() }
        let port = origin.port

        // An idle keep-alive connection must not keep stop() from finishing.
        let idle = try RawHTTPConnection(port: port, timeout: 5)
        defer { idle.close() }
        XCTAssertEqual(try idle.get("/s.bin").status, 200)

        let stopStarted = Date()
        origin.stop()
        XCTAssertLessThan(Date().timeIntervalSince(stopStarted), 5)
        XCTAssertFalse(origin.isRunning)
        XCTAssertFalse(TestTools.canConnect(port: port), "nothing listens after stop()")
        XCTAssertTrue(idle.peerClosed(within: 2), "stop() closes client connections")
        XCTAssertThrowsError(try RawHTTPClient.get(url: "http://127.0.0.1:\(port)/s.bin", timeout: 2))

        try origin.start()
        XCTAssertTrue(origin.isRunning)
        XCTAssertEqual(origin.port, port)
        let response = try RawHTTPClient.get(url: origin.url("/s.bin"))
        XCTAssertEqual(response.status, 200)
        XCTAssertBytes(response.body, equal: file)
        XCTAssertEqual(origin.accessLog(waitingFor: 2).count, 2, "log survives a restart")
    }

    func testExtraServerConfigAndErrorStatuses() throws {
        let dir = try TemporaryDirectory()
        _ = try TestFile.random(size: 1000, seed: 9, in: dir.url, name: "h.bin")
        let origin = try NginxOrigin(root: dir.url, extraServerConfig: """
            location = /boom { return 500; }
            location /h.bin { add_header X-Test harness; }
            """)
        defer { origin.stop() }

        XCTAssertEqual(try RawHTTPClient.get(url: origin.url("/boom")).status, 500)
        XCTAssertEqual(try RawHTTPClient.get(url: origin.url("/no-such-file")).status, 404)
        let ok = try RawHTTPClient.get(url: origin.url("/h.bin"))
        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(ok.header("x-test"), "harness")
        XCTAssertEqual(try RawHTTPClient.get(url: origin.url("/h.bin"), range: "bytes=5000-").status, 416)
        XCTAssertEqual(origin.accessLog(waitingFor: 4).map(\.status), [500, 404, 200, 416])
    }

    func testRawClientDecodesChunked() throws {
        // SSI output has no known length, so nginx sends it chunked (core
        // module, no echo module needed).
        let dir = try TemporaryDirectory()
        let text = (0..<4000).map { "line \($0) of the chunked body\n" }.joined()
        try Data(text.utf8).write(to: dir.file("page.html"))
        let origin = try NginxOrigin(root: dir.url, extraServerConfig: """
            location ~ \\.html$ { ssi on; }
            """)
        defer { origin.stop() }

        let conn = try RawHTTPConnection(port: origin.port, timeout: 5)
        defer { conn.close() }
        let response = try conn.get("/page.html")
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(response.wasChunked, "headers: \(response.headers)")
        XCTAssertNil(response.contentLength)
        XCTAssertFalse(response.chunkSizes.isEmpty)
        XCTAssertEqual(response.chunkSizes.reduce(0, +), text.utf8.count)
        XCTAssertEqual(response.bodyString, text)
        // The connection stays usable after the terminating chunk.
        let again = try conn.get("/page.html")
        XCTAssertEqual(again.bodyString, text)
    }

    func testClientAbortMidBodyIsVisibleInLog() throws {
        let dir = try TemporaryDirectory()
        let size = 32 * 1024 * 1024
        let file = try TestFile.random(size: size, seed: 11, in: dir.url, name: "big.bin")
        let origin = try NginxOrigin(root: dir.url)
        defer { origin.stop() }

        let conn = try RawHTTPConnection(port: origin.port, timeout: 5)
        try conn.sendRequest(path: "/big.bin")
        let partial = try conn.readPartialResponse(maxBodyBytes: 1000)
        XCTAssertEqual(partial.status, 200)
        XCTAssertEqual(partial.body.count, 1000)
        XCTAssertBytes(partial.body, equal: file, range: 0..<1000)
        conn.abort()

        let log = origin.accessLog(waitingFor: 1, timeout: 10)
        let entry = try XCTUnwrap(log.first)
        XCTAssertEqual(entry.status, 200)
        XCTAssertLessThan(entry.bodyBytes, size, "nginx could not send everything to a client that left")
        XCTAssertFalse(entry.completed)
    }

    func testByteComparisonHelpersSeeMismatches() throws {
        let dir = try TemporaryDirectory()
        let file = try TestFile.random(size: 1000, seed: 1, in: dir.url)
        XCTAssertEqual([UInt8](try Data(contentsOf: file.url)), file.bytes, "written once, read back equal")
        var copy = file.slice(200..<300)
        XCTAssertTrue(file.matches(copy, at: 200))
        XCTAssertNil(file.firstMismatch(copy, at: 200))
        copy[42] ^= 0xFF
        XCTAssertFalse(file.matches(copy, at: 200))
        XCTAssertEqual(file.firstMismatch(copy, at: 200), 42)
        XCTAssertFalse(file.matches(file.slice(950..<1000), at: 960), "past the end is a mismatch")
        XCTAssertEqual(file.slice(990...2000).count, 10, "slices clamp to the file")
        XCTAssertEqual(NginxOrigin.parseLogLine(#"206 100 7 2 "GET" "/a b" "bytes=1-2" "\x22e\x22" """#),
                       AccessLogEntry(status: 206, bodyBytes: 100, connection: 7, connectionRequests: 2,
                                      method: "GET", uri: "/a b", range: "bytes=1-2", ifRange: "\"e\"",
                                      completed: false))
        XCTAssertNil(NginxOrigin.parseLogLine("garbage"))
    }

    func testProcessRunnerTimeoutAndTools() throws {
        for tool in ["nginx", "ffmpeg", "ffprobe", "curl", "openssl"] {
            XCTAssertNotNil(TestTools.which(tool), "\(tool) should be installed by scripts/install-deps.sh")
        }
        let started = Date()
        let slow = try TestTools.run("sleep", ["30"], timeout: 0.5)
        XCTAssertTrue(slow.timedOut)
        XCTAssertFalse(slow.succeeded)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)

        let echo = try TestTools.run("sh", ["-c", "echo out; echo err >&2; exit 3"], timeout: 10)
        XCTAssertEqual(echo.exitCode, 3)
        XCTAssertEqual(echo.stdout, "out\n")
        XCTAssertEqual(echo.stderr, "err\n")
        XCTAssertFalse(echo.timedOut)

        let port = try TestTools.freePort()
        XCTAssertGreaterThan(port, 0)
        XCTAssertFalse(TestTools.canConnect(port: port))
    }

    func testMP4FixtureHasMoovAtEndAndPlaysFromNginx() throws {
        let dir = try TemporaryDirectory()
        let mp4 = try MediaFixtures.makeMP4(at: dir.file("clip.mp4"), duration: 10)
        let atoms = try MediaFixtures.topLevelAtoms(of: mp4)
        XCTAssertEqual(atoms.first?.type, "ftyp")
        XCTAssertTrue(try MediaFixtures.isMoovAtEnd(mp4), "atoms: \(atoms)")
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: mp4.path)[.size] as? Int)
        XCTAssertEqual(atoms.reduce(0) { $0 + $1.size }, size)

        let fast = try MediaFixtures.makeMP4(at: dir.file("fast.mp4"), duration: 2, faststart: true)
        XCTAssertFalse(try MediaFixtures.isMoovAtEnd(fast))

        let origin = try NginxOrigin(root: dir.url)
        defer { origin.stop() }
        let info = try MediaFixtures.ffprobe(url: origin.url("/clip.mp4"))
        XCTAssertTrue(info.hasVideo, info.json)
        XCTAssertTrue(info.hasAudio, info.json)
        let duration = try XCTUnwrap(info.duration)
        XCTAssertEqual(duration, 10, accuracy: 0.5)
        XCTAssertTrue(info.formatName?.contains("mp4") ?? false)
        // moov at the end: ffprobe must have jumped there with a Range request.
        let probeLog = origin.accessLog(waitingFor: 2)
        XCTAssertTrue(probeLog.contains { ($0.range ?? "").hasPrefix("bytes=") && $0.range != "bytes=0-" },
                      "expected a seek past mdat: \(probeLog)")

        origin.clearAccessLog()
        let copy = try MediaFixtures.ffmpegCopyToNull(url: origin.url("/clip.mp4"))
        XCTAssertTrue(copy.succeeded, copy.stderr)
        XCTAssertGreaterThanOrEqual(origin.accessLog(waitingFor: 1).reduce(0) { $0 + $1.bodyBytes },
                                    atoms.first { $0.type == "mdat" }?.size ?? .max)

        let missing = try MediaFixtures.ffmpegCopyToNull(url: origin.url("/nope.mp4"))
        XCTAssertFalse(missing.succeeded)
    }

    func testTLSOriginHook() throws {
        let curl = try TestTools.requireTool("curl")
        let dir = try TemporaryDirectory()
        let file = try TestFile.random(size: 100_000, seed: 13, in: dir.url, name: "t.bin")
        let certDir = try TemporaryDirectory()
        let tls = try TLSConfig.selfSigned(in: certDir.url)
        let origin = try NginxOrigin(root: dir.url, tls: tls)
        defer { origin.stop() }
        XCTAssertTrue(origin.baseURL.hasPrefix("https://"))

        let out = dir.file("downloaded.bin")
        let result = try TestTools.run(curl, ["-sS", "--fail", "--cacert", tls.certificatePath, "-r", "10-99",
                                              "-o", out.path, origin.url("/t.bin")], timeout: 30)
        XCTAssertTrue(result.succeeded, result.stderr)
        XCTAssertBytes([UInt8](try Data(contentsOf: out)), equal: file, range: 10..<100)
        XCTAssertEqual(origin.accessLog(waitingFor: 1).first?.status, 206)
    }
}
