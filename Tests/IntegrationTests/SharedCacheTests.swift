import Foundation
import HTTPCache
import XCTest

/// RFC 9111 semantics against a real nginx origin whose locations set the
/// caching fields; nginx's access log is the judge of what reached it.
final class SharedCacheTests: XCTestCase {
    /// nginx locations, one per caching rule.
    static let locations = """
        location /private/ { add_header Cache-Control "private"; }
        location /nostore/ { add_header Cache-Control "no-store"; }
        location /short/ { add_header Cache-Control "max-age=1"; }
        location /nocache/ { add_header Cache-Control "no-cache"; }
        location /mustrev/ { add_header Cache-Control "max-age=1, must-revalidate"; }
        location /long/ { add_header Cache-Control "max-age=600"; }
        location /cookie/ { add_header Set-Cookie "session=1"; add_header Cache-Control "max-age=600"; }
        location /pubcookie/ { add_header Set-Cookie "session=1"; add_header Cache-Control "public, max-age=600"; }
        location /cdn/ { add_header CDN-Cache-Control "max-age=600"; add_header Cache-Control "no-cache"; }
        location /vary/ {
            add_header Vary "Accept-Language";
            add_header Cache-Control "max-age=600";
            try_files /$lang$uri =404;
        }
        location /gz/ {
            gzip_static on; gzip_vary on; gzip_proxied any;
            add_header Cache-Control "max-age=600";
        }
"""
    static let httpConfig = """
        map $http_accept_language $lang { default en; ~^fr fr; }
"""

    private var directory: TemporaryDirectory!
    private var root: URL!
    private var origin: NginxOrigin!
    private var server: MediaCache!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "httpcache-rfc9111")
        root = directory.url.appendingPathComponent("www")
        for sub in ["private", "nostore", "short", "nocache", "mustrev", "long", "gz", "en/vary", "fr/vary", "plain",
                    "cookie", "pubcookie", "cdn"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        origin = try NginxOrigin(root: root, extraServerConfig: Self.locations, extraHTTPConfig: Self.httpConfig)
    }

    override func tearDown() {
        server?.close()
        origin?.stop()
    }

    /// The proxy's clock: lifetimes end when a test advances it, not after a
    /// sleep, and only then: with the wall clock under it, a second ending
    /// between two requests aged a max-age=1 response out of freshness.
    private let clock = TestClock(stopped: true)

    private func startProxy(_ configure: (inout HTTPCacheConfiguration) -> Void = { _ in }) throws {
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.url.appendingPathComponent("cache").path)
        let clock = self.clock
        configuration.clock = { clock.now }
        configure(&configuration)
        server = try MediaCache(configuration: configuration)
        try server.serve()
    }

    private func file(_ path: String, size: Int, seed: UInt64 = 1) throws -> TestFile {
        let url = root.appendingPathComponent(path)
        return try TestFile.random(size: size, seed: seed, in: url.deletingLastPathComponent(),
                                   name: url.lastPathComponent)
    }

    /// Dates a file's Last-Modified a day back, as published content is:
    /// without explicit freshness, the forward and reverse modes reuse a
    /// response for 10% of that age (RFC 9111 §4.2.2), and only with one.
    private func publishedYesterday(_ path: String) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -86_400)],
                                              ofItemAtPath: root.appendingPathComponent(path).path)
    }

    private func get(_ path: String, range: String? = nil, headers: [(String, String)] = []) throws -> RawResponse {
        try RawHTTPClient.get(url: try server.proxyURL(for: origin.url(path)), range: range, headers: headers,
                              timeout: 30)
    }

    private func log(_ path: String) -> [AccessLogEntry] {
        origin.accessLog().filter { $0.uri == path }
    }

    // MARK: storing (RFC 9111 §3)

    func testPrivateNoStoreAndAuthorizationAreNotShared() throws {
        try startProxy()
        let a = try file("private/a.bin", size: 50_000)
        let b = try file("nostore/b.bin", size: 50_000, seed: 2)
        let c = try file("long/c.bin", size: 50_000, seed: 3)
        for _ in 0..<2 {
            XCTAssertBytes(try get("/private/a.bin").body, equal: a)
            XCTAssertBytes(try get("/nostore/b.bin").body, equal: b)
        }
        XCTAssertBytes(try get("/long/c.bin", headers: [("Authorization", "Bearer one")]).body, equal: c)
        XCTAssertBytes(try get("/long/c.bin").body, equal: c)
        _ = origin.accessLog(waitingFor: 6)
        XCTAssertEqual(log("/private/a.bin").count, 2, "a private response is fetched for each client")
        XCTAssertEqual(log("/nostore/b.bin").count, 2, "a no-store response is fetched for each client")
        XCTAssertEqual(log("/long/c.bin").count, 2, "a response to an Authorization request is not reused")
        // And the public one now is stored: a third request stays in the cache.
        XCTAssertBytes(try get("/long/c.bin").body, equal: c)
        XCTAssertEqual(log("/long/c.bin").count, 2)
    }

    func testSetCookieIsSharedOnlyWhenPublic() throws {
        try startProxy()
        let a = try file("cookie/a.bin", size: 20_000, seed: 51)
        let b = try file("pubcookie/b.bin", size: 20_000, seed: 52)
        for _ in 0..<2 {
            XCTAssertBytes(try get("/cookie/a.bin").body, equal: a)
            let shared = try get("/pubcookie/b.bin")
            XCTAssertBytes(shared.body, equal: b)
            XCTAssertEqual(shared.header("Set-Cookie"), "session=1")
        }
        XCTAssertEqual(log("/cookie/a.bin").count, 2, "a cookie for one client is not replayed to another")
        XCTAssertEqual(log("/pubcookie/b.bin").count, 1, "public allows it")
    }

    func testCDNCacheControlGovernsOnlyInReverseMode() throws {
        let f = try file("cdn/c.bin", size: 20_000, seed: 53)
        try startProxy()
        for _ in 0..<2 { XCTAssertBytes(try get("/cdn/c.bin").body, equal: f) }
        XCTAssertEqual(origin.accessLog(waitingFor: 2).filter { $0.uri == "/cdn/c.bin" }.map(\.status), [206, 304],
                       "as a proxy, Cache-Control: no-cache applies")
        server.close()
        origin.clearAccessLog()
        try? FileManager.default.removeItem(at: directory.file("cache"))
        try startProxy { $0.origin = self.origin.baseURL }
        let connection = try RawHTTPConnection(port: server.servingPort)
        for _ in 0..<2 { XCTAssertBytes(try connection.request(path: "/cdn/c.bin").body, equal: f) }
        XCTAssertEqual(origin.accessLog(waitingFor: 1).filter { $0.uri == "/cdn/c.bin" }.count, 1,
                       "as the origin's CDN, CDN-Cache-Control: max-age=600 wins (RFC 9213)")
    }

    // MARK: freshness and validation (§4)

    func testFreshIsServedThenStaleIsRevalidatedWith304() throws {
        try startProxy()
        let f = try file("short/f.bin", size: 300_000)
        XCTAssertBytes(try get("/short/f.bin").body, equal: f)
        let hit = try get("/short/f.bin")
        XCTAssertBytes(hit.body, equal: f)
        XCTAssertNotNil(hit.header("Age"), "a cached response carries Age")
        XCTAssertEqual(hit.header("Cache-Control"), "max-age=1", "stored end-to-end fields are replayed")
        XCTAssertEqual(log("/short/f.bin").count, 1, "fresh: no origin traffic")
        clock.advance(seconds: 3)  // past max-age=1
        let revalidated = try get("/short/f.bin", range: "bytes=1000-1999")
        XCTAssertEqual(revalidated.status, 206)
        XCTAssertBytes(revalidated.body, equal: f, range: 1000..<2000)
        let entries = origin.accessLog(waitingFor: 2)
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(entries.last?.status, 304, "the stale response was revalidated conditionally")
        XCTAssertEqual(entries.last?.bodyBytes, 0, "no body bytes were fetched again")
    }

    func testChangedResourceIsSeenAfterExpiry() throws {
        try startProxy()
        let old = try file("short/c.bin", size: 100_000, seed: 1)
        XCTAssertBytes(try get("/short/c.bin").body, equal: old)
        let new = try file("short/c.bin", size: 120_000, seed: 9)
        // A later Last-Modified second for the new file (and so another ETag), without waiting for one.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 5)],
                                              ofItemAtPath: root.appendingPathComponent("short/c.bin").path)
        clock.advance(seconds: 3)  // past max-age=1
        let response = try get("/short/c.bin")
        XCTAssertEqual(response.status, 200)
        XCTAssertBytes(response.body, equal: new)
    }

    func testNoCacheIsRevalidatedEveryTime() throws {
        try startProxy()
        let f = try file("nocache/n.bin", size: 40_000)
        for _ in 0..<3 { XCTAssertBytes(try get("/nocache/n.bin").body, equal: f) }
        let entries = origin.accessLog(waitingFor: 3)
        XCTAssertEqual(entries.map(\.status), [206, 304, 304])
    }

    func testStaleIsServedOfflineButNotWithMustRevalidate() throws {
        try startProxy()
        let s = try file("short/s.bin", size: 60_000)
        let m = try file("mustrev/m.bin", size: 60_000, seed: 5)
        XCTAssertBytes(try get("/short/s.bin").body, equal: s)
        XCTAssertBytes(try get("/mustrev/m.bin").body, equal: m)
        origin.stop()
        clock.advance(seconds: 3)  // past max-age=1
        let stale = try get("/short/s.bin")
        XCTAssertEqual(stale.status, 200)
        XCTAssertBytes(stale.body, equal: s)
        XCTAssertEqual(try get("/mustrev/m.bin").status, 504)
    }

    func testOnlyIfCachedGives504WhenNothingFreshIsStored() throws {
        try startProxy()
        let f = try file("short/o.bin", size: 10_000)
        XCTAssertBytes(try get("/short/o.bin").body, equal: f)
        XCTAssertEqual(try get("/short/o.bin", headers: [("Cache-Control", "only-if-cached")]).status, 200)
        clock.advance(seconds: 3)  // past max-age=1
        XCTAssertEqual(try get("/short/o.bin", headers: [("Cache-Control", "only-if-cached")]).status, 504)
        XCTAssertEqual(log("/short/o.bin").count, 1)
    }

    func testClientPreconditionsAreAnsweredFromTheCache() throws {
        try startProxy()
        let f = try file("long/p.bin", size: 70_000, seed: 8)
        let first = try get("/long/p.bin")
        XCTAssertBytes(first.body, equal: f)
        let etag = try XCTUnwrap(first.header("ETag"))
        let lastModified = try XCTUnwrap(first.header("Last-Modified"))
        let notModified = try get("/long/p.bin", headers: [("If-None-Match", etag)])
        XCTAssertEqual(notModified.status, 304)
        XCTAssertTrue(notModified.body.isEmpty)
        XCTAssertNil(notModified.header("Content-Length"), "a 304 has no body and says no length of one")
        XCTAssertEqual(notModified.header("ETag"), etag)
        XCTAssertEqual(try get("/long/p.bin", headers: [("If-Modified-Since", lastModified)]).status, 304)
        XCTAssertEqual(try get("/long/p.bin", headers: [("If-Match", "\"other\"")]).status, 412)
        XCTAssertEqual(try get("/long/p.bin", headers: [("If-Unmodified-Since", "Sat, 01 Jan 2000 00:00:00 GMT")]).status,
                       412)
        let changed = try get("/long/p.bin", headers: [("If-None-Match", "\"other\"")])
        XCTAssertEqual(changed.status, 200)
        XCTAssertBytes(changed.body, equal: f)
        XCTAssertEqual(log("/long/p.bin").count, 1, "every precondition was decided by the cache")
    }

    func testRequestNoCacheRevalidatesAndStaleWhileRevalidateServesAtOnce() throws {
        origin.stop()
        origin = try NginxOrigin(root: root, extraServerConfig: Self.locations + """
            location /swr/ { add_header Cache-Control "max-age=1, stale-while-revalidate=60"; }
            """, extraHTTPConfig: Self.httpConfig)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("swr"), withIntermediateDirectories: true)
        try startProxy()
        let f = try file("long/r.bin", size: 20_000, seed: 6)
        XCTAssertBytes(try get("/long/r.bin").body, equal: f)
        XCTAssertBytes(try get("/long/r.bin", headers: [("Cache-Control", "no-cache")]).body, equal: f)
        XCTAssertEqual(origin.accessLog(waitingFor: 2).last?.status, 304, "request no-cache revalidates")

        let w = try file("swr/w.bin", size: 20_000, seed: 7)
        XCTAssertBytes(try get("/swr/w.bin").body, equal: w)
        clock.advance(seconds: 3)  // past max-age=1
        origin.stop()
        let stale = try get("/swr/w.bin")
        XCTAssertEqual(stale.status, 200, "stale-while-revalidate: served without waiting for the origin")
        XCTAssertBytes(stale.body, equal: w)
    }

    // MARK: variants (§4.1) and encodings

    func testVaryByAcceptLanguageIsNeverMixed() throws {
        try startProxy()
        let en = try file("en/vary/v.bin", size: 30_000, seed: 11)
        let fr = try file("fr/vary/v.bin", size: 30_000, seed: 12)
        // The proxy must forward Accept-Language (it does by default) and key by it.
        for _ in 0..<2 {
            XCTAssertBytes(try get("/vary/v.bin", headers: [("Accept-Language", "en")]).body, equal: en)
            XCTAssertBytes(try get("/vary/v.bin", headers: [("Accept-Language", "fr")]).body, equal: fr)
        }
        XCTAssertEqual(log("/vary/v.bin").count, 2, "one origin fetch per variant, then hits")
    }

    func testGzipOriginGivesConsistentHeadersAndBytes() throws {
        try startProxy()
        let f = try file("gz/g.bin", size: 200_000, seed: 4)
        // nginx compresses on the fly only whole responses; precompressed
        // files (gzip_static) are served with ranges, as a CDN does.
        let gz = try TestTools.run("gzip", ["-k", "-f", root.appendingPathComponent("gz/g.bin").path])
        XCTAssertTrue(gz.succeeded, gz.stderr)
        let target = origin.url("/gz/g.bin")
        func fetch(_ headers: [(String, String)]) throws -> RawResponse {
            let connection = try RawHTTPConnection(port: server.servingPort)
            defer { connection.close() }
            return try connection.request(path: target, headers: headers)
        }
        for _ in 0..<2 {
            let compressed = try fetch([("Accept-Encoding", "gzip")])
            XCTAssertEqual(compressed.status, 200)
            XCTAssertEqual(compressed.header("Content-Encoding"), "gzip", "the origin's coding is kept and sent")
            try assertDecodes(compressed, to: f)
            let identity = try fetch([])
            XCTAssertEqual(identity.status, 200)
            XCTAssertNil(identity.header("Content-Encoding"), "no coding the client did not accept")
            XCTAssertBytes(identity.body, equal: f)
        }
        XCTAssertEqual(log("/gz/g.bin").count, 2, "one origin fetch per coding, then hits")
    }

    /// The body decodes per its Content-Encoding to the file's bytes.
    private func assertDecodes(_ response: RawResponse, to file: TestFile, line: UInt = #line) throws {
        guard response.header("Content-Encoding") == "gzip" else {
            return XCTAssertBytes(response.body, equal: file, line: line)
        }
        let path = directory.file("body.gz")
        try Data(response.body).write(to: path)
        let result = try TestTools.run("gzip", ["-dc", path.path])
        XCTAssertTrue(result.succeeded, "gzip -dc: \(result.stderr)", line: line)
        XCTAssertBytes(Array(result.stdoutData), equal: file, line: line)
    }

    // MARK: intermediary duties (RFC 9110 §7.6)

    func testViaOnBothSidesAndARedirectLoopEndsWith508() throws {
        // The origin redirects into the proxy's own URL for the same path.
        let originPort = try TestTools.freePort()
        try startProxy()
        let loopURL = "http://127.0.0.1:\(originPort)/loop"
        let proxied = try server.proxyURL(for: loopURL)
        origin.stop()
        origin = try NginxOrigin(root: root, port: originPort,
                                 extraServerConfig: Self.locations + "location = /loop { return 302 \(proxied); }",
                                 extraHTTPConfig: Self.httpConfig)
        let f = try file("long/via.bin", size: 1000)
        let response = try get("/long/via.bin")
        XCTAssertBytes(response.body, equal: f)
        XCTAssertTrue(response.header("Via")?.contains("httpcache-") ?? false, "Via on responses")
        let started = Date()
        let looped = try RawHTTPClient.get(url: proxied, timeout: 10)
        XCTAssertEqual(looped.status, 508)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "the loop ends at once")
        XCTAssertEqual(log("/loop").count, 1, "one trip round the loop, no more")
    }

    func testHostMissingOrDuplicatedIs400() throws {
        try startProxy()
        for head in ["GET /ping HTTP/1.1\r\n\r\n", "GET /ping HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"] {
            let connection = try RawHTTPConnection(port: server.servingPort)
            try connection.send(head)
            XCTAssertEqual(try connection.readResponse().status, 400, head)
            connection.close()
        }
        let connection = try RawHTTPConnection(port: server.servingPort)
        try connection.send("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n")
        XCTAssertEqual(try connection.readResponse().status, 400, "a CONNECT without Host is refused before any tunnel")
    }

    // MARK: proxy modes

    func testCurlAsForwardProxyIsByteExactAndCached() throws {
        try startProxy()
        let f = try file("plain/movie.bin", size: 400_000, seed: 21)
        try publishedYesterday("plain/movie.bin")
        let out = directory.file("curl.out")
        for _ in 0..<2 {
            let result = try TestTools.run("curl", ["-sS", "-f", "-x", "http://127.0.0.1:\(server.servingPort)",
                                                    origin.url("/plain/movie.bin"), "-o", out.path])
            XCTAssertTrue(result.succeeded, result.stderr)
            XCTAssertBytes(Array(try Data(contentsOf: out)), equal: f)
        }
        let ranged = try TestTools.run("curl", ["-sS", "-f", "-x", "http://127.0.0.1:\(server.servingPort)", "-r", "1000-1999",
                                                origin.url("/plain/movie.bin"), "-o", out.path])
        XCTAssertTrue(ranged.succeeded, ranged.stderr)
        XCTAssertBytes(Array(try Data(contentsOf: out)), equal: f, range: 1000..<2000)
        XCTAssertEqual(log("/plain/movie.bin").count, 1, "the second and third requests were hits")
    }

    func testFFmpegPlaysThroughTheForwardProxy() throws {
        try startProxy()
        try MediaFixtures.makeMP4(at: root.appendingPathComponent("plain/clip.mp4"), duration: 2)
        try publishedYesterday("plain/clip.mp4")
        let proxy = "http://127.0.0.1:\(server.servingPort)"
        let played = try MediaFixtures.ffmpegCopyToNull(url: origin.url("/plain/clip.mp4"),
                                                        extraInputArgs: ["-http_proxy", proxy])
        XCTAssertTrue(played.succeeded, played.stderr)
        XCTAssertTrue(server.cachedResources().contains { $0.url == origin.url("/plain/clip.mp4") },
                      "the player's requests went through the proxy and were cached")
        let fetched = log("/plain/clip.mp4").count
        XCTAssertGreaterThan(fetched, 0)
        let again = try MediaFixtures.ffmpegCopyToNull(url: origin.url("/plain/clip.mp4"),
                                                       extraInputArgs: ["-http_proxy", proxy])
        XCTAssertTrue(again.succeeded, again.stderr)
        XCTAssertEqual(log("/plain/clip.mp4").count, fetched, "the second play came from the cache")
    }

    func testForwardProxyRelaysRedirectsAndStatuses() throws {
        origin.stop()
        origin = try NginxOrigin(root: root, extraServerConfig: Self.locations + """
            location = /moved { return 301 /plain/x.bin; }
            location = /odd { return 299 "odd"; }
            """, extraHTTPConfig: Self.httpConfig)
        try startProxy()
        let connection = try RawHTTPConnection(port: server.servingPort)
        let moved = try connection.request(path: origin.url("/moved"))
        XCTAssertEqual(moved.status, 301, "redirects are relayed, not followed")
        XCTAssertTrue(moved.header("Location")?.hasSuffix("/plain/x.bin") ?? false)
        let odd = try connection.request(path: origin.url("/odd"))
        XCTAssertEqual(odd.status, 299)
        XCTAssertEqual(odd.bodyString, "odd")
    }

    func testReverseProxyPassesPostBodiesThroughAndInvalidates() throws {
        origin.stop()
        let port = try TestTools.freePort()
        let bodies = directory.file("bodies.log")
        origin = try NginxOrigin(root: root, port: port, extraServerConfig: Self.locations + """
            location /upload { access_log \(bodies.path) bodies; client_body_buffer_size 1m;
                               proxy_pass http://127.0.0.1:\(port)/stored; }
            location /stored { return 201 "stored\\n"; }
            location /inv/ {
                if ($request_method = POST) { return 204; }
                add_header Cache-Control "max-age=600";
            }
            """, extraHTTPConfig: Self.httpConfig + "log_format bodies '$request_method $request_uri $request_body';")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("inv"), withIntermediateDirectories: true)
        // `Host: a` below: a public name the reverse proxy answers for.
        try startProxy {
            $0.origin = self.origin.baseURL
            $0.serverNames = ["a"]
        }
        let connection = try RawHTTPConnection(port: server.servingPort)
        let posted = try connection.request(method: "POST", path: "/upload/x?y=1", body: Array("hello world".utf8))
        XCTAssertEqual(posted.status, 201)
        XCTAssertEqual(posted.bodyString, "stored\n")
        try connection.send("POST /upload/c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                            + "5\r\nhello\r\n7\r\n chunks\r\n0\r\n\r\n")
        XCTAssertEqual(try connection.readResponse().status, 201, "a chunked body passes too")
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            ((try? String(contentsOf: bodies, encoding: .utf8)) ?? "").components(separatedBy: "\n").count >= 3
        })
        // (checked below once the third upload is in)
        let logged = try String(contentsOf: bodies, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(logged, ["POST /upload/x?y=1 hello world", "POST /upload/c hello chunks"])
        // curl waits a second for "100 Continue" before sending a body it announced with Expect.
        let started = Date()
        let curl = try TestTools.run("curl", ["-sS", "-f", "-H", "Expect: 100-continue", "--data-binary", "expected",
                                              "http://127.0.0.1:\(server.servingPort)/upload/e"])
        XCTAssertTrue(curl.succeeded, curl.stderr)
        XCTAssertEqual(curl.stdout, "stored\n")
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.9, "100 Continue was sent at once")

        // A successful POST invalidates the stored response of its URL.
        let f = try file("inv/i.bin", size: 30_000, seed: 41)
        XCTAssertBytes(try connection.request(path: "/inv/i.bin").body, equal: f)
        XCTAssertBytes(try connection.request(path: "/inv/i.bin").body, equal: f)
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/inv/i.bin" }.count, 1)
        XCTAssertEqual(try connection.request(method: "POST", path: "/inv/i.bin", body: Array("x".utf8)).status, 204)
        XCTAssertBytes(try connection.request(path: "/inv/i.bin").body, equal: f)
        let inv = origin.accessLog(waitingFor: 3).filter { $0.uri == "/inv/i.bin" }
        XCTAssertEqual(inv.map(\.method), ["GET", "POST", "GET"], "the POST invalidated the stored response")
        XCTAssertEqual(inv.last?.status, 304, "revalidated, its bytes kept")
    }

    /// Statuses and interim responses nginx cannot produce, from the project's own origin.
    func testPassThroughRelaysEarlyHintsAndGives502WhenTheOriginDrops() throws {
        let faulty = try FaultyOrigin()
        faulty.serve("/hints", body: Array("done".utf8), fault: .earlyHints(link: "</style.css>; rel=preload"))
        faulty.serve("/drop", body: Array("never".utf8), fault: .dropBeforeHead)
        try startProxy()
        let connection = try RawHTTPConnection(port: server.servingPort)
        try connection.sendRequest(method: "DELETE", path: faulty.url("/hints"))
        let interim = try connection.readResponseHead()
        XCTAssertEqual(interim.status, 103, "1xx relayed to an HTTP/1.1 client")
        XCTAssertEqual(interim.header("Link"), "</style.css>; rel=preload")
        let final = try connection.readResponse(method: "DELETE")
        XCTAssertEqual(final.status, 200)
        XCTAssertEqual(final.bodyString, "done")
        // On the pooled connection the DELETE left: a POST is never sent twice…
        let dropped = try RawHTTPConnection(port: server.servingPort).request(method: "POST", path: faulty.url("/drop"),
                                                                        body: Array("x".utf8))
        XCTAssertEqual(dropped.status, 502)
        XCTAssertEqual(faulty.requests(for: "/drop").count, 1, "a non-idempotent request is not retried")
        // … an idempotent PUT may be, once, on a fresh connection (RFC 9110 §9.2.2), and still gets 502.
        let put = try RawHTTPConnection(port: server.servingPort).request(method: "PUT", path: faulty.url("/drop"),
                                                                    body: Array("x".utf8))
        XCTAssertEqual(put.status, 502)
        XCTAssertLessThanOrEqual(faulty.requests(for: "/drop").count, 3)
    }

    func testPlaylistsFollowTheRequestsProxyMode() throws {
        let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4,\n"
            + origin.url("/plain/seg1.ts") + "\n#EXTINF:4,\nseg2.ts\n#EXT-X-ENDLIST\n"
        try Data(playlist.utf8).write(to: root.appendingPathComponent("plain/list.m3u8"))
        // Forward proxy: the client sends everything through the proxy anyway: unchanged.
        try startProxy()
        let forward = try RawHTTPConnection(port: server.servingPort).request(path: origin.url("/plain/list.m3u8"))
        XCTAssertEqual(forward.status, 200)
        XCTAssertEqual(forward.bodyString, playlist)
        server.close()
        // Reverse proxy: absolute URIs on the origin's host now lead to the proxy.
        try startProxy {
            $0.origin = self.origin.baseURL
            $0.serverNames = ["media.test"]
        }
        let reverse = try RawHTTPConnection(port: server.servingPort).request(path: "/plain/list.m3u8",
                                                                       headers: [("Host", "media.test:8443")])
        XCTAssertEqual(reverse.status, 200)
        XCTAssertTrue(reverse.bodyString.contains("http://media.test:8443/plain/seg1.ts\n"), reverse.bodyString)
        XCTAssertTrue(reverse.bodyString.contains("\nseg2.ts\n"), "relative URIs stay as written")
    }

    func testReverseProxyModeMapsPathsOntoTheOrigin() throws {
        try startProxy { $0.origin = self.origin.baseURL }
        let f = try file("plain/r.bin", size: 250_000, seed: 31)
        try publishedYesterday("plain/r.bin")
        let connection = try RawHTTPConnection(port: server.servingPort)
        let whole = try connection.request(path: "/plain/r.bin?x=1")
        XCTAssertEqual(whole.status, 200)
        XCTAssertBytes(whole.body, equal: f)
        let part = try connection.get("/plain/r.bin?x=1", range: "bytes=5000-9999")
        XCTAssertEqual(part.status, 206)
        XCTAssertBytes(part.body, equal: f, range: 5000..<10000)
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/plain/r.bin?x=1" }.count, 1)
        // HEAD: from the cache when stored; passed through (as HEAD, no body) when not.
        let cachedHead = try connection.request(method: "HEAD", path: "/plain/r.bin?x=1")
        XCTAssertEqual(cachedHead.contentLength, 250_000)
        let g = try file("plain/h.bin", size: 123_456, seed: 32)
        let missHead = try connection.request(method: "HEAD", path: "/plain/h.bin")
        XCTAssertEqual(missHead.status, 200)
        XCTAssertEqual(missHead.contentLength, g.bytes.count)
        let heads = origin.accessLog(waitingFor: 2).filter { $0.uri == "/plain/h.bin" }
        XCTAssertEqual(heads.map(\.method), ["HEAD"])
        XCTAssertEqual(heads.first?.bodyBytes, 0)
        XCTAssertEqual(origin.accessLog().filter { $0.uri == "/plain/r.bin?x=1" }.count, 1)
    }
}
