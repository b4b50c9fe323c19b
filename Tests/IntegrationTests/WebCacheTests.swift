import Foundation
import HTTPCache
import XCTest

/// The forward and reverse modes as a complete shared cache (issue 22), case
/// by case from RFC 9110 §15.1 (heuristically cacheable statuses), RFC 9111
/// §3 (storing any final status with explicit freshness) and RFC 9211
/// (Cache-Status), each in both modes against nginx; the origin's access log
/// is the judge of what reached it.
final class WebCacheTests: TransparentCacheCase {
    static let locations = """
        location /txt/ { default_type text/plain; add_header Cache-Control "max-age=600"; }
        location /html/ { default_type text/html; add_header Cache-Control "max-age=600"; }
        location /stamp/ { default_type text/plain; add_header Cache-Control "max-age=0"; add_header X-Stamp $request_id; }
        location /zero/ { default_type text/plain; add_header Cache-Control "max-age=0"; }
        location /nocache/ { default_type text/plain; add_header Cache-Control "max-age=600, no-cache"; }
        location = /st/404 { default_type text/plain; add_header Cache-Control "max-age=600" always; return 404 "gone\\n"; }
        location = /st/404z { default_type text/plain; add_header Cache-Control "max-age=0" always; return 404 "gone0\n"; }
        location = /st/404h { default_type text/plain; add_header Last-Modified $yesterday always; return 404 "heuristic\\n"; }
        location = /st/404n { default_type text/plain; return 404 "no validator\\n"; }
        location = /st/302 { return 302 /txt/a.txt; }
        location = /st/302f { add_header Cache-Control "max-age=600" always; return 302 /txt/a.txt; }
        location = /st/301 { add_header Last-Modified $yesterday always; return 301 /txt/a.txt; }
        location = /st/204 { add_header Cache-Control "max-age=600" always; add_header X-Kept "yes" always; return 204; }
        location = /st/500 { default_type text/plain; add_header Cache-Control "max-age=600" always; return 500 "boom\\n"; }
        location = /st/503 { default_type text/plain; return 503 "busy\\n"; }
        location /cdnok/ { default_type text/plain; add_header CDN-Cache-Control "max-age=600"; add_header Cache-Control "no-cache"; }
        location /cdnbad/ { default_type text/plain; add_header CDN-Cache-Control "Max-Age=600"; add_header Cache-Control "no-cache"; }
        location /cdntype/ { default_type text/plain; add_header CDN-Cache-Control 's-maxage="600"'; add_header Cache-Control "no-cache"; }
        location = /make {
            if ($request_method = POST) {
                add_header Location /txt/a.txt; add_header Content-Location /html/p.html; return 201 "made\n";
            }
            return 405;
        }
        location /vary/ {
            default_type text/plain;
            add_header Vary "Accept-Language";
            add_header Cache-Control "max-age=600";
            try_files /$lang$uri =404;
        }
"""
    static let httpConfig = """
        map $http_accept_language $lang { default en; ~^fr fr; }
        map $host $yesterday { default "Mon, 01 Jan 2024 00:00:00 GMT"; }
"""

    override func setUpWithError() throws {
        try startOrigin(prefix: "httpcache-web", files: [
            "txt/a.txt": "alpha\n", "html/p.html": "<p>page</p>\n", "zero/z.txt": "zero\n", "stamp/s.txt": "stamp\n",
            "nocache/n.txt": "validated\n",
            "cdnok/c.txt": "cdn\n", "cdnbad/c.txt": "cdn\n", "cdntype/c.txt": "cdn\n",
            "en/vary/v.txt": "english\n", "fr/vary/v.txt": "french\n",
        ], locations: Self.locations, httpConfig: Self.httpConfig)
    }

    /// A fresh proxy (empty cache) in `mode`, and a client whose targets are
    /// origin-form (reverse) or absolute-form (forward).
    private func start(_ mode: Mode, _ configure: (inout HTTPCacheConfiguration) -> Void = { _ in })
        throws -> (RawHTTPConnection, (String) -> String) {
        origin.clearAccessLog()
        return try proxies.start(mode, base: origin.baseURL, configure)
    }

    private func originCount(_ path: String, waitingFor count: Int) -> Int {
        origin.accessLog(waitingFor: count).filter { $0.uri == path }.count
    }

    // MARK: what is cached (--cache-types)

    func testForwardAndReverseCacheAnyTypeByDefaultProxyURLsOnlyMedia() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            for _ in 0..<2 { XCTAssertEqual(try client.request(path: target("/txt/a.txt")).bodyString, "alpha\n") }
            XCTAssertEqual(originCount("/txt/a.txt", waitingFor: 1), 1, "\(mode): text/plain with max-age is kept")
        }
        // A proxy URL keeps media only, unless --cache-types says otherwise.
        for types in [nil, "all"] as [String?] {
            _ = try start(.forward) { $0.cacheTypes = types }
            let url = try XCTUnwrap(proxies.server).proxyURL(for: origin.url("/txt/a.txt"))
            for _ in 0..<2 { XCTAssertEqual(try RawHTTPClient.get(url: url, timeout: 30).bodyString, "alpha\n") }
            XCTAssertEqual(originCount("/txt/a.txt", waitingFor: types == nil ? 2 : 1), types == nil ? 2 : 1,
                           "proxy URL, cache-types \(types ?? "unset")")
        }
    }

    func testCacheTypesListChoosesInReverseModeToo() throws {
        let (client, target) = try start(.reverse) { $0.cacheTypes = "text/html" }
        for _ in 0..<2 {
            XCTAssertEqual(try client.request(path: target("/txt/a.txt")).bodyString, "alpha\n")
            XCTAssertEqual(try client.request(path: target("/html/p.html")).bodyString, "<p>page</p>\n")
        }
        XCTAssertEqual(originCount("/txt/a.txt", waitingFor: 3), 2, "text/plain is not in the list")
        XCTAssertEqual(originCount("/html/p.html", waitingFor: 3), 1, "text/html is")
    }

    func testCacheTypesOptionRefusesNonsense() {
        var settings = ServeSettings(cacheDirectory: "/tmp/x")
        XCTAssertThrowsError(try settings.set("cache-types", "text"))
        XCTAssertThrowsError(try settings.set("cache-types", ""))
        XCTAssertNoThrow(try settings.set("cache-types", "Text/HTML, image/*"))
        XCTAssertThrowsError(try settings.set("cache-status-name", "two words"))
        XCTAssertNoThrow(try settings.set("cache-status-name", "edge-1"))
        // Set from Swift, the same table checks it.
        var configuration = HTTPCacheConfiguration(cacheDirectory: "/tmp/x")
        configuration.cacheTypes = "text"
        XCTAssertThrowsError(try configuration.validate())
        configuration.cacheTypes = "all"
        configuration.cacheStatusName = ""
        XCTAssertThrowsError(try configuration.validate())
    }

    // MARK: statuses (RFC 9111 §3, RFC 9110 §15.1)

    func testFinalStatusesWithExplicitFreshnessAreStoredAndReplayed() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            var first: [String: RawResponse] = [:]
            for path in ["/st/404", "/st/302f", "/st/204", "/st/500"] {
                let a = try client.request(path: target(path))
                let b = try client.request(path: target(path))
                first[path] = a
                XCTAssertEqual(b.status, a.status, "\(mode) \(path)")
                XCTAssertEqual(b.body, a.body, "\(mode) \(path)")
                XCTAssertEqual(b.header("Location"), a.header("Location"), "\(mode) \(path)")
                XCTAssertTrue(b.header("Cache-Status")?.contains("; hit") ?? false,
                              "\(mode) \(path): \(b.header("Cache-Status") ?? "none")")
            }
            XCTAssertEqual(first["/st/404"]?.status, 404)
            XCTAssertEqual(first["/st/404"]?.bodyString, "gone\n")
            XCTAssertEqual(first["/st/302f"]?.status, 302, "\(mode): a redirect is relayed, not followed")
            XCTAssertTrue(first["/st/302f"]?.header("Location")?.hasSuffix("/txt/a.txt") ?? false)
            XCTAssertEqual(first["/st/204"]?.status, 204)
            XCTAssertEqual(first["/st/500"]?.status, 500)
            let log = origin.accessLog(waitingFor: 4)
            for path in ["/st/404", "/st/302f", "/st/204", "/st/500"] {
                XCTAssertEqual(log.filter { $0.uri == path }.count, 1, "\(mode) \(path) asked once")
            }
            let replayed = try client.request(path: target("/st/204"))
            XCTAssertEqual(replayed.header("X-Kept"), "yes", "\(mode): the origin's own fields are replayed")
            XCTAssertNil(replayed.header("Content-Length"), "\(mode): a 204 states no length")
            XCTAssertTrue(replayed.header("Server")?.hasPrefix("nginx") ?? false, "\(mode): the origin's Server")
            let hit = try client.request(path: target("/st/404"))
            XCTAssertTrue(hit.header("Server")?.hasPrefix("nginx") ?? false, "\(mode): \(hit.rawHead)")
        }
    }

    func testHeuristicFreshnessOnlyForHeuristicallyCacheableStatuses() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            for path in ["/st/404h", "/st/404n", "/st/301", "/st/302", "/st/503"] {
                let a = try client.request(path: target(path))
                let b = try client.request(path: target(path))
                XCTAssertEqual(a.status, b.status, "\(mode) \(path)")
            }
            let log = origin.accessLog(waitingFor: 8)
            XCTAssertEqual(log.filter { $0.uri == "/st/404h" }.count, 1, "\(mode): 404 is heuristically cacheable")
            XCTAssertEqual(log.filter { $0.uri == "/st/404n" }.count, 2,
                           "\(mode): but the heuristic needs Last-Modified (RFC 9111 §4.2.2)")
            XCTAssertEqual(log.filter { $0.uri == "/st/301" }.count, 1, "\(mode): 301 is heuristically cacheable")
            XCTAssertEqual(log.filter { $0.uri == "/st/302" }.count, 2, "\(mode): 302 is not, without freshness")
            XCTAssertEqual(log.filter { $0.uri == "/st/503" }.count, 2, "\(mode): 503 is not, without freshness")
        }
    }

    // MARK: Cache-Status (RFC 9211)

    func testCacheStatusSaysHowEachResponseWasAnswered() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode) { $0.cacheStatusName = "edge-1" }
            let miss = try client.request(path: target("/txt/a.txt"))
            let status = try XCTUnwrap(miss.header("Cache-Status"), "\(mode)")
            XCTAssertTrue(status.hasPrefix("edge-1; fwd=uri-miss; fwd-status="), "\(mode): \(status)")
            XCTAssertTrue(status.hasSuffix("; stored"), "\(mode): \(status)")
            let hit = try XCTUnwrap(try client.request(path: target("/txt/a.txt")).header("Cache-Status"))
            XCTAssertTrue(hit.hasPrefix("edge-1; hit; ttl="), "\(mode): \(hit)")
            let ttl = Int(hit.split(separator: "=").last ?? "") ?? -1
            XCTAssertTrue((590...600).contains(ttl), "\(mode): \(hit)")
            // The request's no-cache sends a fresh one forward; max-age=0 makes it stale.
            let request = try client.request(path: target("/txt/a.txt"), headers: [("Cache-Control", "no-cache")])
            XCTAssertEqual(request.header("Cache-Status"), "edge-1; fwd=request; fwd-status=304; ttl=600; stored",
                           "\(mode)")
            _ = try client.request(path: target("/zero/z.txt"))
            let stale = try client.request(path: target("/zero/z.txt"))
            XCTAssertTrue(stale.header("Cache-Status")?.hasPrefix("edge-1; fwd=stale; fwd-status=304") ?? false,
                          "\(mode): \(stale.header("Cache-Status") ?? "none")")
            // The response's own no-cache (fresh by max-age, never used unvalidated) is not the request's doing.
            _ = try client.request(path: target("/nocache/n.txt"))
            let validated = try client.request(path: target("/nocache/n.txt"))
            XCTAssertEqual(validated.bodyString, "validated\n")
            XCTAssertTrue(validated.header("Cache-Status")?.hasPrefix("edge-1; fwd=stale; fwd-status=304") ?? false,
                          "\(mode): \(validated.header("Cache-Status") ?? "none")")
            // Another variant of a URL (Vary: Accept-Language).
            _ = try client.request(path: target("/vary/v.txt"), headers: [("Accept-Language", "en")])
            let variant = try client.request(path: target("/vary/v.txt"), headers: [("Accept-Language", "fr")])
            XCTAssertEqual(variant.bodyString, "french\n")
            XCTAssertTrue(variant.header("Cache-Status")?.hasPrefix("edge-1; fwd=vary-miss") ?? false,
                          "\(mode): \(variant.header("Cache-Status") ?? "none")")
            // An unsafe method passes through; failed (405), it invalidates nothing.
            let post = try client.request(method: "POST", path: target("/txt/a.txt"), body: Array("x".utf8))
            XCTAssertEqual(post.header("Cache-Status"), "edge-1; fwd=method; fwd-status=405", "\(mode)")
            XCTAssertTrue(try client.request(path: target("/txt/a.txt")).header("Cache-Status")?
                .hasPrefix("edge-1; hit") ?? false, "\(mode): a failed POST invalidates nothing")
        }
        // The access log and /metrics say it with the same words.
        let log = directory.file("access.log")
        let (client, target) = try start(.forward) { $0.accessLogPath = log.path }
        for _ in 0..<2 { _ = try client.request(path: target("/txt/a.txt")) }
        _ = try client.request(method: "POST", path: target("/txt/a.txt"), body: Array("x".utf8))
        let metrics = try client.request(path: "/metrics").bodyString
        for word in ["uri-miss", "hit", "method"] {
            XCTAssertTrue(metrics.contains("httpcache_cache_status_requests_total{status=\"\(word)\"} 1\n"), metrics)
        }
        var lines: [String] = []
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            return lines.count >= 3
        })
        // The Cache-Status word comes before the duration and the CMCD session id and buffer length.
        XCTAssertEqual(lines.prefix(3).map { $0.split(separator: " ").dropLast(3).last.map(String.init) ?? "" },
                       ["uri-miss", "hit", "method"], lines.joined(separator: "\n"))
    }

    func testCacheStatusOfPartialHitsAndLocalAnswers() throws {
        let big = try TestFile.random(size: 200_000, seed: 22, in: root.appendingPathComponent("txt"), name: "big.bin")
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            _ = try client.get(target("/txt/big.bin"), range: "bytes=0-999")
            let hit = try client.get(target("/txt/big.bin"), range: "bytes=100-199")
            XCTAssertEqual(hit.status, 206)
            XCTAssertTrue(hit.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false, "\(mode)")
            let partial = try client.get(target("/txt/big.bin"), range: "bytes=500-4999")
            XCTAssertEqual(partial.status, 206)
            XCTAssertBytes(partial.body, equal: big, range: 500..<5000)
            XCTAssertTrue(partial.header("Cache-Status")?.hasPrefix("httpcache; fwd=partial") ?? false,
                          "\(mode): \(partial.header("Cache-Status") ?? "none")")
            // Suffix and open-ended ranges, combined with what is stored.
            let suffix = try client.get(target("/txt/big.bin"), range: "bytes=-1000")
            XCTAssertEqual(suffix.status, 206)
            XCTAssertEqual(suffix.header("Content-Range"), "bytes 199000-199999/200000")
            XCTAssertBytes(suffix.body, equal: big, range: 199_000..<200_000)
            let open = try client.get(target("/txt/big.bin"), range: "bytes=3000-")
            XCTAssertEqual(open.status, 206, "\(mode)")
            XCTAssertBytes(open.body, equal: big, range: 3000..<200_000)
            XCTAssertTrue(open.header("Cache-Status")?.hasPrefix("httpcache; fwd=partial") ?? false, "\(mode)")
            let all = try client.get(target("/txt/big.bin"), range: "bytes=0-")
            XCTAssertBytes(all.body, equal: big)
            XCTAssertTrue(all.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                          "\(mode): every byte stored by now: \(all.header("Cache-Status") ?? "none")")
        }
        // Answers of the proxy itself bypass the cache.
        _ = try start(.forward)
        let ping = try RawHTTPConnection(port: try XCTUnwrap(proxies.server).servingPort).request(path: "/ping")
        XCTAssertEqual(ping.header("Cache-Status"), "httpcache; fwd=bypass")
    }

    // MARK: invalidation (RFC 9111 §4.4) and Vary (§4.1)

    func testSuccessfulUnsafeMethodInvalidatesTargetLocationAndContentLocation() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            for path in ["/txt/a.txt", "/html/p.html"] {
                for _ in 0..<2 { _ = try client.request(path: target(path)) }
            }
            XCTAssertEqual(try client.request(method: "POST", path: target("/make"), body: Array("x".utf8)).status, 201)
            for path in ["/txt/a.txt", "/html/p.html"] {
                let after = try client.request(path: target(path))
                XCTAssertEqual(after.status, 200)
                XCTAssertTrue(after.header("Cache-Status")?.contains("fwd=stale; fwd-status=304") ?? false,
                              "\(mode) \(path): \(after.header("Cache-Status") ?? "none")")
            }
            let log = origin.accessLog(waitingFor: 5)
            XCTAssertEqual(log.filter { $0.uri == "/txt/a.txt" }.map(\.status), [206, 304], "\(mode): Location")
            XCTAssertEqual(log.filter { $0.uri == "/html/p.html" }.map(\.status), [206, 304], "\(mode): Content-Location")
        }
    }

    func testVariantsAreSelectedByNormalisedFields() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            let first = try client.request(path: target("/vary/v.txt"), headers: [("Accept-Language", "de, en")])
            XCTAssertEqual(first.bodyString, "english\n")
            for value in ["EN,de", "en , de", "de", "en"] {
                let headers = value == "de" ? [("Accept-Language", "en"), ("Accept-Language", "de")]
                    : value == "en" ? [("Accept-Language", "de,en,en")] : [("Accept-Language", value)]
                let again = try client.request(path: target("/vary/v.txt"), headers: headers)
                XCTAssertEqual(again.bodyString, "english\n")
                XCTAssertTrue(again.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                              "\(mode) \(headers): \(again.header("Cache-Status") ?? "none")")
            }
            let french = try client.request(path: target("/vary/v.txt"), headers: [("Accept-Language", "fr")])
            XCTAssertEqual(french.bodyString, "french\n", "\(mode): another variant")
            XCTAssertEqual(originCount("/vary/v.txt", waitingFor: 2), 2, "\(mode)")
        }
    }

    // MARK: interim responses (RFC 9110 §15.2)

    func testInterimResponsesAreRelayedOnTheCachedPathAndNeverStored() throws {
        let faulty = try FaultyOrigin()
        faulty.serve("/hints.bin", body: Array("done".utf8), fault: .earlyHints(link: "</style.css>; rel=preload"))
        faulty.extraFields = ["Cache-Control": "max-age=600"]  // fresh in every mode
        let base = String(faulty.url("/").dropLast())
        for mode in ["reverse", "forward", "proxy URL"] {
            // Proxy URLs are served in either mode: the forward proxy's serves them here.
            _ = try proxies.start(mode == "reverse" ? .reverse : .forward, base: base)
            let started = try XCTUnwrap(proxies.server)
            let path = mode == "reverse" ? "/hints.bin" : mode == "forward" ? faulty.url("/hints.bin")
                : try started.proxyURL(for: faulty.url("/hints.bin")).replacingOccurrences(
                    of: "http://127.0.0.1:\(started.servingPort)", with: "")
            let connection = try RawHTTPConnection(port: started.servingPort)
            try connection.sendRequest(path: path)
            let interim = try connection.readResponseHead()
            XCTAssertEqual(interim.status, 103, "\(mode): relayed before the head")
            XCTAssertEqual(interim.header("Link"), "</style.css>; rel=preload", mode)
            let final = try connection.readResponse()
            XCTAssertEqual(final.status, 200, mode)
            XCTAssertEqual(final.bodyString, "done", mode)
            try connection.sendRequest(path: path)
            let hit = try connection.readResponseHead()
            XCTAssertEqual(hit.status, 200, "\(mode): a hit has no interim response: none was stored")
            XCTAssertTrue(hit.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false, mode)
        }
        XCTAssertEqual(faulty.requests(for: "/hints.bin").count, 3, "one origin request per mode")
    }

    // MARK: CDN-Cache-Control (RFC 9213) and framing (RFC 9112 §6.3)

    func testCDNCacheControlInReverseModeWithInvalidValuesIgnored() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            for path in ["/cdnok/c.txt", "/cdnbad/c.txt", "/cdntype/c.txt"] {
                for _ in 0..<2 { XCTAssertEqual(try client.request(path: target(path)).bodyString, "cdn\n") }
            }
            let log = origin.accessLog(waitingFor: mode == .reverse ? 5 : 6)
            XCTAssertEqual(log.filter { $0.uri == "/cdnok/c.txt" }.count, mode == .reverse ? 1 : 2,
                           "\(mode): CDN-Cache-Control max-age=600 governs a reverse proxy only")
            XCTAssertEqual(log.filter { $0.uri == "/cdnbad/c.txt" }.count, 2,
                           "\(mode): an invalid CDN-Cache-Control is ignored, Cache-Control: no-cache applies")
            XCTAssertEqual(log.filter { $0.uri == "/cdntype/c.txt" }.count, 2,
                           "\(mode): so is one with a directive of the wrong type (s-maxage as a String)")
        }
    }

    func testTransferEncodingWithContentLengthIsFramedByTransferEncoding() throws {
        let faulty = try FaultyOrigin()
        let body = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        faulty.serve("/both.bin", body: body, fault: .lengthAndChunked)
        for mode in Mode.allCases {
            let (connection, target) = try proxies.start(mode, base: String(faulty.url("/").dropLast()))
            let path = target("/both.bin")
            for _ in 0..<2 {
                let response = try connection.request(path: path)
                XCTAssertEqual(response.status, 200, "\(mode)")
                XCTAssertEqual(response.body, body, "\(mode): every chunked byte, not the 1 byte Content-Length said")
            }
        }
        XCTAssertEqual(faulty.requests(for: "/both.bin").count, 2, "stored: one origin request per mode")
    }

    // MARK: 304 updates (RFC 9111 §4.3.4), unknown methods (§4.4), collapsed requests

    func testA304UpdatesTheStoredFields() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            var stamps: [String] = []
            for _ in 0..<3 {
                let response = try client.request(path: target("/stamp/s.txt"))
                XCTAssertEqual(response.bodyString, "stamp\n")
                stamps.append(try XCTUnwrap(response.header("X-Stamp")))
            }
            XCTAssertEqual(Set(stamps).count, 3, "\(mode): each 304's X-Stamp replaces the stored one: \(stamps)")
            XCTAssertEqual(origin.accessLog(waitingFor: 3).filter { $0.uri == "/stamp/s.txt" }.map(\.status),
                           [206, 304, 304], "\(mode)")
        }
    }

    func testAnUnknownMethodInvalidatesAndConcurrentMissesCollapse() throws {
        let faulty = try FaultyOrigin()
        faulty.serve("/u.bin", body: Array("unknown".utf8))
        faulty.extraFields = ["Cache-Control": "max-age=600"]  // fresh until invalidated
        faulty.serve("/slow.bin", body: Array("slow".utf8), fault: .delayed(0.5))
        _ = try start(.forward)
        let port = try XCTUnwrap(proxies.server).servingPort
        let connection = try RawHTTPConnection(port: port)
        for _ in 0..<2 { XCTAssertEqual(try connection.request(path: faulty.url("/u.bin")).bodyString, "unknown") }
        XCTAssertEqual(faulty.requests(for: "/u.bin").count, 1)
        let unknown = try connection.request(method: "FROBNICATE", path: faulty.url("/u.bin"))
        XCTAssertEqual(unknown.status, 200)
        XCTAssertEqual(unknown.header("Cache-Status"), "httpcache; fwd=method; fwd-status=200")
        let after = try connection.request(path: faulty.url("/u.bin"))
        XCTAssertTrue(after.header("Cache-Status")?.hasPrefix("httpcache; fwd=stale") ?? false,
                      after.header("Cache-Status") ?? "none")
        XCTAssertEqual(faulty.requests(for: "/u.bin").count, 3, "GET, FROBNICATE, then GET again")

        // Two clients asking at once: one origin request, the second joins it.
        let first = try RawHTTPConnection(port: port)
        let second = try RawHTTPConnection(port: port)
        try first.sendRequest(path: faulty.url("/slow.bin"))
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { faulty.requests(for: "/slow.bin").count == 1 })
        try second.sendRequest(path: faulty.url("/slow.bin"))
        let a = try first.readResponse(), b = try second.readResponse()
        XCTAssertEqual([a.bodyString, b.bodyString], ["slow", "slow"])
        XCTAssertFalse(a.header("Cache-Status")?.contains("collapsed") ?? true, a.header("Cache-Status") ?? "none")
        XCTAssertTrue(b.header("Cache-Status")?.hasSuffix("; collapsed") ?? false, b.header("Cache-Status") ?? "none")
        XCTAssertEqual(faulty.requests(for: "/slow.bin").count, 1)
    }

    func testAStaleStoredStatusIsRevalidatedAndKept() throws {
        for mode in Mode.allCases {
            let (client, target) = try start(mode)
            let first = try client.request(path: target("/st/404z"))
            XCTAssertEqual(first.status, 404)
            for _ in 0..<2 {
                let again = try client.request(path: target("/st/404z"))
                XCTAssertEqual(again.status, 404, "\(mode)")
                XCTAssertEqual(again.bodyString, "gone0\n", "\(mode)")
                XCTAssertEqual(again.header("Cache-Status"), "httpcache; fwd=stale; fwd-status=404; ttl=0; stored",
                               "\(mode): the origin's same 404 confirms the stored one")
            }
            XCTAssertEqual(originCount("/st/404z", waitingFor: 3), 3, "\(mode)")
        }
    }
}
