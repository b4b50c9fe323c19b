import Foundation
import Glibc
import HTTPCache
import XCTest

/// Issue #27: nothing grows without a bound because a client does not read or
/// holds connections; request bodies only once admitted; framing refusals.
final class AbuseBoundsTests: XCTestCase {
    /// Bytes the folder's files really take on disk (allocated blocks).
    private func diskUsage(_ path: String) -> Int {
        let result = try? TestTools.run("du", ["-s", "--block-size=1", path], timeout: 30)
        return Int(result?.stdout.split(separator: "\t").first ?? "") ?? -1
    }

    func testNonReadingClientOfAResourceNotKeptPacesTheOrigin() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        // 1 GB, far over the 200 MB limit (sparse: quick to make, and quick for nginx to send).
        let big = www.appendingPathComponent("big.bin").path
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: nil))
        XCTAssertEqual(truncate(big, 1 << 30), 0)
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let endless = try FaultyOrigin()
        defer { endless.stop() }
        endless.serve("/live.bin", fault: .endless(limit: 4 << 30))
        let cache = directory.file("cache").path
        let log = directory.file("proxy.log").path
        let proxy = try ProxyProcess(cacheDirectory: cache, extraArguments: ["--max-cache-size", "200MB", "--loops", "1",
                                                                             "--log-level", "debug", "--log-file", log])
        defer { proxy.terminate() }
        let before = proxy.residentBytes
        var clients: [RawHTTPConnection] = []
        for url in [origin.url("/big.bin"), endless.url("/live.bin")] {
            let client = try RawHTTPConnection(port: proxy.port)
            try client.sendRequest(path: try RawHTTPClient.parse(url: try proxy.proxyURL(url)).path)
            clients.append(client)  // and never read
        }
        // Both downloads stop for their readers: the one streamed past the limit
        // once its client's socket is full, the paced one 8 MiB ahead of its reader.
        let paused = TestTools.waitUntil(timeout: 20) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.contains("download paused: a client reads slower") && text.contains("download paused: its readers are behind")
        }
        XCTAssertTrue(paused, "both downloads wait for their readers")
        let used = diskUsage(cache)
        XCTAssertGreaterThanOrEqual(used, 0)
        XCTAssertLessThan(used, 48 << 20, "the folder holds what the clients were sent, not the downloads")
        XCTAssertLessThan(endless.endlessBytesSent, 48 << 20,
                          "a body of unknown length is paced to its readers, not stored at origin speed to the limit")
        Sanitizer.assertGrowth(proxy.residentBytes - before, below: 48 << 20, "paced, not buffered")
        // The clients still get the right bytes once they read.
        let head = try clients[0].readPartialResponse(maxBodyBytes: 1 << 20)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.body, [UInt8](repeating: 0, count: 1 << 20))
        // The paced download goes on as its client reads (raw chunked bytes, all "a" but the framing).
        let live = try clients[1].readPartialResponse(maxBodyBytes: 40 << 20)
        XCTAssertEqual(live.status, 200)
        XCTAssertEqual(live.body.count, 40 << 20, "more than the window and the queue: the download resumed")
        XCTAssertGreaterThan(live.body.filter { $0 == 0x61 }.count, 39 << 20, "the origin's bytes, in the proxy's chunks")
        for client in clients { client.close() }
    }

    func testRequestBodiesAreNotReadBeforeTheRequestIsAdmitted() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // LAN mode: unsigned proxy URLs are refused.
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path,
                                     extraArguments: ["--host", "0.0.0.0", "--loops", "1"])
        defer { proxy.terminate() }
        // Expect: 100-continue is answered with the refusal, not with 100.
        let asking = try RawHTTPConnection(port: proxy.port)
        try asking.sendRequest(method: "POST", path: "/p/unsigned/x",
                               headers: [("Expect", "100-continue"), ("Content-Length", "8388608")])
        XCTAssertEqual(try asking.readResponseHead().status, 403, "the check comes before 100 Continue")
        asking.close()
        let before = proxy.residentBytes
        let chunk = [UInt8](repeating: 0x62, count: 1 << 20)
        var connections: [RawHTTPConnection] = []
        for _ in 0..<40 {
            let connection = try RawHTTPConnection(port: proxy.port, timeout: 2)
            try? connection.sendRequest(method: "POST", path: "/p/unsigned/x", headers: [("Content-Length", "8388608")])
            for _ in 0..<4 { try? connection.send(chunk) }  // until the proxy closes
            connections.append(connection)
        }
        Sanitizer.assertGrowth(proxy.residentBytes - before, below: 48 << 20,
                               "bodies of refused requests are never read into memory (40 × 4 MiB sent)")
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/ping", timeout: 5).status, 200)
        for connection in connections { connection.close() }
    }

    func testOneClientCannotTakeEveryConnectionSlot() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path,
                                     extraArguments: ["--max-connections", "40", "--loops", "1"])
        defer { proxy.terminate() }
        // A slowloris from 127.0.0.2: partial heads, never idle, so never closed for room.
        var slow: [RawHTTPConnection] = []
        for _ in 0..<60 {
            guard let connection = try? RawHTTPConnection(port: proxy.port, timeout: 2, source: "127.0.0.2") else { break }
            try? connection.send("GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(connection)
        }
        XCTAssertEqual(slow.count, 60)
        // The proxy has taken them all in once those over the client's half are answered (503).
        TestTools.waitUntil(timeout: 10) { slow.filter(\.hasSomethingToRead).count >= 40 }
        var statuses: [Int] = []
        for _ in 0..<20 {
            let pong = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/ping", timeout: 5)
            statuses.append(pong.status)
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 20), "another client is still served")
        // Seen from the proxy (a refused client may not have read its 503 yet).
        let stats = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/stats", timeout: 5)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any])
        let open = try XCTUnwrap(json["open_connections"] as? Int)
        XCTAssertLessThanOrEqual(open, 21, "the slowloris holds at most half the slots (20), plus /stats")
        for connection in slow { connection.close() }
    }

    func testRequestTransferCodingsAndAnOriginsSwitchingProtocols() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        origin.serve("/upgrade.bin", body: [1, 2, 3], fault: .switchingProtocols)
        let proxy = try TestProxy()
        let port = proxy.server.servingPort
        let started = Date()
        let switched = try proxy.get(origin.url("/upgrade.bin"))
        XCTAssertEqual(switched.status, 502, "an origin's 101 is a bad gateway")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "at once, not after the read timeout")
        // Forward-mode requests with bodies (passed through to the origin).
        let target = origin.url("/post")
        let coded = try RawHTTPConnection(port: port)
        try coded.send("POST \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n"
                       + "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        XCTAssertEqual(try coded.readResponse().status, 501, "a coding the proxy would drop")
        let old = try RawHTTPConnection(port: port)
        try old.send("POST \(target) HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        XCTAssertEqual(try old.readResponse().status, 400, "HTTP/1.0 has no transfer codings")
        XCTAssertTrue(origin.requests(for: "/post").isEmpty, "neither reached the origin")
    }

    func testUnkeyedForwardedFieldsDoNotReachTheStoredResponse() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let origin = try NginxOrigin(root: www, extraServerConfig: """
            location = /xfh.m3u8 {
                default_type application/vnd.apple.mpegurl;
                add_header Cache-Control "max-age=60";
                return 200 "#EXTM3U\\n# made for h-$http_x_forwarded_host\\n#EXT-X-TARGETDURATION:4\\n#EXTINF:4,\\nhttp://h-$http_x_forwarded_host-$http_x_original_url/seg.ts\\n#EXT-X-ENDLIST\\n";
            }
            location = /tenant.m3u8 {
                default_type application/vnd.apple.mpegurl;
                add_header Cache-Control "max-age=60";
                return 200 "#EXTM3U\\n# made for t-$http_x_tenant.example\\n#EXT-X-TARGETDURATION:4\\n#EXTINF:4,\\nhttp://t-$http_x_tenant.example/seg.ts\\n#EXT-X-ENDLIST\\n";
            }
            """)
        defer { origin.stop() }
        // Reverse mode.
        let reverse = try TestProxy { $0.origin = origin.baseURL }
        let poisoned = try RawHTTPConnection(port: reverse.server.servingPort)
            .get("/xfh.m3u8", headers: [("X-Forwarded-Host", "evil.example"), ("X-Original-URL", "/admin")])
        XCTAssertEqual(poisoned.status, 200)
        XCTAssertFalse(String(decoding: poisoned.body, as: UTF8.self).contains("evil.example"))
        let later = try RawHTTPConnection(port: reverse.server.servingPort).get("/xfh.m3u8")
        let text = String(decoding: later.body, as: UTF8.self)
        XCTAssertFalse(text.contains("evil.example") || text.contains("/admin"), "another client's response: \(text)")
        // Forward mode.
        let forward = try TestProxy()
        let target = origin.url("/xfh.m3u8")
        let first = try RawHTTPConnection(port: forward.server.servingPort)
        try first.sendRequest(path: target, headers: [("Host", "127.0.0.1:\(origin.port)"),
                                                      ("X-Forwarded-Host", "evil.example")])
        XCTAssertFalse(String(decoding: try first.readResponse().body, as: UTF8.self).contains("evil.example"))
        // The proxy-URL entry of the same origin URL (what LAN clients of a signed URL get;
        // its URIs are rewritten, the comment line is not).
        let viaProxyURL = try forward.get(target)
        XCTAssertFalse(String(decoding: viaProxyURL.body, as: UTF8.self).contains("evil.example"))
        // A forward request with a field a proxy URL does not send keeps an entry of its own.
        let tenantURL = origin.url("/tenant.m3u8")
        let tenant = try RawHTTPConnection(port: forward.server.servingPort)
        try tenant.sendRequest(path: tenantURL, headers: [("Host", "127.0.0.1:\(origin.port)"), ("X-Tenant", "acme")])
        XCTAssertTrue(String(decoding: try tenant.readResponse().body, as: UTF8.self).contains("t-acme.example"))
        let shared = String(decoding: try forward.get(tenantURL).body, as: UTF8.self)
        XCTAssertFalse(shared.contains("t-acme.example"), "the proxy-URL entry is not the forward request's: \(shared)")
    }
}
