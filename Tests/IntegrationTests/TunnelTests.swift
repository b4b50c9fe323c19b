import Foundation
import HTTPCache
import XCTest

/// Issue #22: CONNECT tunnels for https URLs, a parent proxy
/// (`--upstream-proxy`), and the proxy's own routes under `/_httpcache/` in
/// reverse mode. Origins are nginx (https with a test CA made by openssl).
final class TunnelTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var root: URL!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "httpcache-tunnel")
        root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    private func curl(_ arguments: [String], environment: [String: String]? = nil) throws -> [UInt8] {
        let out = directory.file("curl-\(UUID().uuidString).out")
        let result = try TestTools.run("curl", ["-sS", "-f", "--max-time", "20", "-o", out.path] + arguments,
                                       environment: environment)
        XCTAssertTrue(result.succeeded, "curl \(arguments): \(result.stderr)")
        return (try? Array(Data(contentsOf: out))) ?? []
    }

    /// One CONNECT on a raw connection: the status of the answer.
    private func connectStatus(port: Int, to authority: String) throws -> Int {
        let connection = try RawHTTPConnection(port: port)
        defer { connection.close() }
        try connection.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        return try connection.readResponseHead().status
    }

    func testCurlThroughConnectToAnHTTPSOriginIsByteExactAndNotCached() throws {
        let certificates = try TestCertificates()
        let file = try TestFile.random(size: 3_000_000, seed: 41, in: root, name: "movie.bin")
        let origin = try NginxOrigin(root: root, tls: certificates.good)
        let log = directory.file("access.log").path
        let proxy = try TestProxy {
            $0.accessLogPath = log
            $0.loops = 2  // a tunnel runs on whichever loop took the connection
        }
        let proxyURL = "http://127.0.0.1:\(proxy.server.servingPort)"
        let url = origin.url("/movie.bin")

        XCTAssertBytes(try curl(["-x", proxyURL, "--cacert", certificates.caFile, url]), equal: file)
        // https_proxy= as a browser or a script sets it; a range through the tunnel too.
        var environment = ProcessInfo.processInfo.environment
        environment["https_proxy"] = proxyURL
        environment["HTTPS_PROXY"] = proxyURL
        environment["no_proxy"] = ""
        environment["NO_PROXY"] = ""
        XCTAssertBytes(try curl(["--cacert", certificates.caFile, "-r", "1000-99999", url], environment: environment),
                       equal: file, range: 1000..<100_000)
        XCTAssertEqual(origin.accessLog(waitingFor: 2).count, 2, "both went to the origin through the tunnel")
        XCTAssertTrue(CacheFolderFiles.metaPaths(proxy.cacheDirectory).isEmpty, "a tunnel stores nothing")
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("CONNECT \"127.0.0.1:\(origin.port)\" 200")
        }, "the tunnel is in the access log")
    }

    /// A client that reads late: the origin's bytes wait (the tunnel stops
    /// reading the origin while the client's side is full) and arrive whole.
    func testASlowClientGetsEveryByteThroughTheTunnel() throws {
        let file = try TestFile.random(size: 8_000_000, seed: 45, in: root, name: "big.bin")
        let origin = try NginxOrigin(root: root)
        let proxy = try TestProxy()
        let connection = try RawHTTPConnection(port: proxy.server.servingPort, timeout: 30)
        defer { connection.close() }
        let authority = "127.0.0.1:\(origin.port)"
        try connection.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        XCTAssertEqual(try connection.readResponseHead().status, 200)
        // Plain HTTP inside the tunnel, two requests on it: the second waits behind the first's body.
        try connection.send("GET /big.bin HTTP/1.1\r\nHost: \(authority)\r\n\r\n"
                            + "GET /big.bin HTTP/1.1\r\nHost: \(authority)\r\nRange: bytes=5-9\r\n\r\n")
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            !proxy.logs.lines(.debug, containing: "tunnel paused: the client reads slower").isEmpty
        }, "the tunnel holds the origin back while its client does not read")
        XCTAssertBytes(try connection.readResponse().body, equal: file)
        XCTAssertBytes(try connection.readResponse().body, equal: file, range: 5..<10)
        XCTAssertTrue(CacheFolderFiles.metaPaths(proxy.cacheDirectory).isEmpty, "nothing stored")
    }

    func testConnectRefusedForADisallowedHostAndInLANMode() throws {
        let certificates = try TestCertificates()
        let origin = try NginxOrigin(root: root, tls: certificates.good)
        let allowList = try TestProxy { $0.allowedOrigins = ["media.example.com"] }
        XCTAssertEqual(try connectStatus(port: allowList.server.servingPort, to: "127.0.0.1:\(origin.port)"), 403)
        let allowed = try TestProxy { $0.allowedOrigins = ["127.0.0.1:\(origin.port)"] }
        XCTAssertEqual(try connectStatus(port: allowed.server.servingPort, to: "127.0.0.1:\(origin.port)"), 200)
        let lan = try TestProxy { $0.host = "0.0.0.0" }
        XCTAssertEqual(try connectStatus(port: lan.server.servingPort, to: "127.0.0.1:\(origin.port)"), 403,
                       "LAN mode never tunnels")
        XCTAssertEqual(try connectStatus(port: allowed.server.servingPort, to: "127.0.0.1"), 400, "no port")
        let closed = try TestTools.freePort()
        XCTAssertEqual(try connectStatus(port: allowed.server.servingPort, to: "127.0.0.1:\(closed)"), 403,
                       "outside the allow-list even when nothing listens")
        let open = try TestProxy()
        XCTAssertEqual(try connectStatus(port: open.server.servingPort, to: "127.0.0.1:\(closed)"), 502)
        XCTAssertEqual(origin.accessLog().count, 0)
    }

    func testChainThroughAParentProxyForHTTPAndHTTPS() throws {
        let certificates = try TestCertificates()
        let plain = try TestFile.random(size: 500_000, seed: 42, in: root, name: "plain.bin")
        let secure = try TestFile.random(size: 700_000, seed: 43, in: root, name: "secure.bin")
        let httpOrigin = try NginxOrigin(root: root)
        let httpsOrigin = try NginxOrigin(root: root, tls: certificates.good)
        let parentLog = directory.file("parent.log").path
        let parent = try TestProxy { $0.accessLogPath = parentLog }
        let parentURL = "http://127.0.0.1:\(parent.server.servingPort)"
        let child = try TestProxy {
            $0.upstreamProxy = parentURL
            $0.caFile = certificates.caFile
        }
        func parentLines() -> [String] {
            ((try? String(contentsOfFile: parentLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        // http: the child asks the parent in absolute form (the parent caches it as a forward proxy).
        let viaProxyURL = try child.get(httpOrigin.url("/plain.bin"))
        XCTAssertEqual(viaProxyURL.status, 200, viaProxyURL.bodyString)
        XCTAssertBytes(viaProxyURL.body, equal: plain)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { parentLines().contains { $0.contains(httpOrigin.url("/plain.bin")) } },
                      "\(parentLines())")
        // https: CONNECT to the parent, TLS with the origin inside it, verified by the child.
        let secured = try child.get(httpsOrigin.url("/secure.bin"))
        XCTAssertEqual(secured.status, 200, secured.bodyString)
        XCTAssertBytes(secured.body, equal: secure)
        // (A tunnel is logged when it ends: the child's pooled connection ends as the child closes.)
        child.server.close()
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            parentLines().contains { $0.contains("CONNECT \"127.0.0.1:\(httpsOrigin.port)\" 200") }
        }, "\(parentLines())")
        // A client's own tunnel through a child goes through the parent's tunnel.
        let second = try TestProxy { $0.upstreamProxy = parentURL }
        let before = parentLines().count
        XCTAssertBytes(try curl(["-x", "http://127.0.0.1:\(second.server.servingPort)", "--cacert", certificates.caFile,
                                 httpsOrigin.url("/secure.bin")]), equal: secure)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { parentLines().count > before }, "\(parentLines())")

        // TLS is checked end to end: a child without the test CA refuses the origin behind the parent.
        let untrusting = try TestProxy { $0.upstreamProxy = parentURL }
        XCTAssertEqual(try untrusting.get(httpsOrigin.url("/secure.bin")).status, 502)

        // --no-upstream-proxy-for: straight to the origin, the parent sees nothing.
        let direct = try TestProxy {
            $0.upstreamProxy = parentURL
            $0.noUpstreamProxyFor = ["127.0.0.1"]
        }
        // Counted by the URL: the untrusting child's tunnel is logged whenever it ends.
        func plainLines() -> Int { parentLines().filter { $0.contains(httpOrigin.url("/plain.bin")) }.count }
        let count = plainLines()
        XCTAssertBytes(try direct.get(httpOrigin.url("/plain.bin")).body, equal: plain)
        // A marker asked through the parent afterwards: once its line is there, a
        // line of the direct fetch would be too (the parent logs in order).
        _ = try second.get(httpOrigin.url("/after-direct"))
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { parentLines().contains { $0.contains("/after-direct") } },
                      "\(parentLines())")
        XCTAssertEqual(plainLines(), count, "the parent was not asked")
    }

    /// A parent proxy that leads back to this proxy (here: itself): its
    /// CONNECT carries this proxy's Via, so the loop ends at once with 508
    /// (a 502 for the client) instead of tunnelling round it.
    func testAParentProxyLeadingBackHereEndsTheLoop() throws {
        let certificates = try TestCertificates()
        _ = try TestFile.random(size: 1000, seed: 46, in: root, name: "loop.bin")
        let origin = try NginxOrigin(root: root, tls: certificates.good)
        let port = try TestTools.freePort()
        let looped = try TestProxy {
            $0.port = port
            $0.upstreamProxy = "http://127.0.0.1:\(port)"
            $0.caFile = certificates.caFile
        }
        let started = Date()
        XCTAssertEqual(try looped.get(origin.url("/loop.bin")).status, 502)
        XCTAssertEqual(try connectStatus(port: port, to: "127.0.0.1:\(origin.port)"), 502)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the loop ends at once")
        XCTAssertEqual(origin.accessLog().count, 0)
        XCTAssertTrue(looped.logs.messages.contains { $0.contains("CONNECT with 508") },
                      looped.logs.messages.joined(separator: "\n"))
    }

    func testOwnRoutesOfAReverseProxyNeverReachTheOrigin() throws {
        let file = try TestFile.random(size: 100_000, seed: 44, in: root, name: "page.bin")
        let origin = try NginxOrigin(root: root)
        let proxy = try TestProxy { $0.origin = origin.baseURL }
        let port = proxy.server.servingPort
        XCTAssertBytes(try RawHTTPConnection(port: port).get("/page.bin").body, equal: file)
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/_httpcache/ping").bodyString, "pong\n")
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/_httpcache/stats").status, 200)
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/_httpcache/metrics").status, 200)

        let stats = try TestTools.run(CLITests.binary, ["stats", "--cache-dir", proxy.cacheDirectory, "--json"])
        XCTAssertTrue(stats.succeeded, stats.stderr)
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        let list = try TestTools.run(CLITests.binary, ["cache", "list", "--json", "--cache-dir", proxy.cacheDirectory])
        XCTAssertTrue(list.succeeded, list.stderr)
        XCTAssertTrue(list.stdout.contains("/page.bin"), list.stdout)

        // Paths outside the prefix are the origin's, /admin/ and /stats included.
        XCTAssertEqual(try RawHTTPConnection(port: port).get("/stats").status, 404, "nginx's answer")
        let log = origin.accessLog(waitingFor: 2)
        XCTAssertEqual(log.map(\.uri).sorted(), ["/page.bin", "/stats"], "no request of the proxy's own reached the origin")
    }
}
