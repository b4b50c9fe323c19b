import Foundation
import HTTPCache
import XCTest

/// Issue #38: players' telemetry (CTA-5004 CMCD) in every mode (reverse,
/// forward, proxy URLs) against nginx: forwarded on a miss unless
/// `stripsCMCD`, never a reason for a second entry (Vary included), its
/// next-object hint fetched before the player asks, its buffer starvation
/// counted, and a malformed payload nothing but a counter.
final class CMCDUseTests: XCTestCase {
    private enum Mode: String, CaseIterable { case reverse, forward, proxyURLs }

    /// A proxy in one mode over `origin`, and how a player reaches a path.
    private final class Player {
        let cache: MediaCache
        let mode: Mode
        let origin: NginxOrigin
        let connection: RawHTTPConnection

        init(_ mode: Mode, origin: NginxOrigin, folder: String,
             _ configure: (inout HTTPCacheConfiguration) -> Void = { _ in }) throws {
            var configuration = HTTPCacheConfiguration(cacheDirectory: folder)
            configuration.port = 0
            if mode == .reverse { configuration.origin = origin.baseURL }
            configure(&configuration)
            cache = try MediaCache(configuration: configuration)
            try cache.serve()
            self.mode = mode
            self.origin = origin
            connection = try RawHTTPConnection(port: cache.servingPort)
        }

        /// The target for `path` (the origin's path, maybe with its query), plus
        /// what a player appends to the URL it was given (`appended`, e.g. "CMCD=…").
        func target(_ path: String, appending appended: String? = nil) throws -> String {
            func add(_ base: String) -> String {
                guard let appended else { return base }
                return base + (base.contains("?") ? "&" : "?") + appended
            }
            switch mode {
            case .reverse: return add(path)
            case .forward: return add(origin.url(path))
            case .proxyURLs:
                let url = try cache.proxyURL(for: origin.url(path))
                let pathStart = url.range(of: "/p/")!.lowerBound
                return add(String(url[pathStart...]))
            }
        }

        func get(_ path: String, appending appended: String? = nil, headers: [(String, String)] = []) throws -> RawResponse {
            try connection.request(path: target(path, appending: appended), headers: headers)
        }

        /// `/metrics` of the proxy (under `/_httpcache/`, which every mode answers).
        func metrics() throws -> String {
            try RawHTTPClient.get(url: "http://127.0.0.1:\(cache.servingPort)/_httpcache/metrics", timeout: 10).bodyString
        }

        func close() {
            connection.close()
            cache.close()
        }
    }

    private var directory: TemporaryDirectory!
    private var origin: NginxOrigin!
    private var segments: [TestFile] = []

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "httpcache-cmcd-use")
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("seg"), withIntermediateDirectories: true)
        segments = try (1...3).map { n in
            try TestFile.random(size: 40_000 + n, seed: UInt64(30 + n), in: root.appendingPathComponent("seg"), name: "s\(n).ts")
        }
        try Data("marker".utf8).write(to: root.appendingPathComponent("marker.txt"))
        // The origin says which CMCD it received (nginx leaves an empty field out).
        origin = try NginxOrigin(root: root, extraServerConfig: """
            location /seg/ {
                add_header Cache-Control "max-age=600";
                add_header X-Origin-Saw-CMCD "$http_cmcd_request";
                add_header X-Origin-Saw-Session "$http_cmcd_session";
                add_header Vary "CMCD-Request, CMCD-Session";
            }
            """)
    }

    override func tearDown() {
        origin?.stop()
        directory?.remove()
    }

    /// Every origin request logged before now: a marker fetched straight
    /// from the origin is logged after them (nginx logs in order of completion).
    private func originLogThroughMarker() throws -> [String] {
        let marker = "/marker.txt?\(UUID().uuidString)"
        XCTAssertEqual(try RawHTTPClient.get(url: origin.url(marker), timeout: 10).status, 200)
        var uris: [String] = []
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            uris = origin.accessLog().map(\.uri)
            return uris.contains(marker)
        }, "the marker reached the origin's log")
        return uris.filter { !$0.hasPrefix("/marker.txt") }
    }

    /// Varying CMCD (query and fields, a Vary naming them) is one entry and
    /// one fetch; the miss carries the player's CMCD to the origin.
    func testVaryingCMCDIsOneEntryAndReachesTheOriginOnAMiss() throws {
        for mode in Mode.allCases {
            origin.clearAccessLog()
            let player = try Player(mode, origin: origin, folder: directory.file("one-\(mode)").path)
            defer { player.close() }
            for n in 0..<4 {
                let fields = [("CMCD-Request", "bl=\(n * 100),mtp=\(n + 1)"), ("CMCD-Session", "sid=\"p\(n)\"")]
                let response = try player.get("/seg/s1.ts", appending: "CMCD=bl%3D\(n * 100)%2Cot%3Dv", headers: fields)
                XCTAssertEqual(response.status, 200, "\(mode)")
                XCTAssertBytes(response.body, equal: segments[0])
                if n == 0 {
                    XCTAssertEqual(response.header("X-Origin-Saw-CMCD"), "bl=0,mtp=1", "\(mode): the miss carried the fields")
                    XCTAssertEqual(response.header("X-Origin-Saw-Session"), "sid=\"p0\"", "\(mode)")
                } else {
                    XCTAssertTrue(response.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                                  "\(mode) #\(n): \(response.header("Cache-Status") ?? "none")")
                }
            }
            let fetched = try originLogThroughMarker().filter { $0.hasPrefix("/seg/s1.ts") }
            XCTAssertEqual(fetched, ["/seg/s1.ts?CMCD=bl%3D0%2Cot%3Dv"], "\(mode): one fetch, its query as the player sent it")
            XCTAssertEqual(player.cache.cachedResources().count, 1, "\(mode): one entry")
        }
    }

    /// `stripsCMCD` (`--strip-cmcd`): the origin sees neither the query argument nor the fields.
    func testStripCMCDKeepsTheTelemetryFromTheOrigin() throws {
        for mode in Mode.allCases {
            origin.clearAccessLog()
            let player = try Player(mode, origin: origin, folder: directory.file("strip-\(mode)").path) {
                $0.stripsCMCD = true
            }
            defer { player.close() }
            let response = try player.get("/seg/s2.ts?x=1", appending: "CMCD=bl%3D300",
                                          headers: [("CMCD-Request", "bl=300"), ("CMCD-Session", "sid=\"p\"")])
            XCTAssertEqual(response.status, 200, "\(mode)")
            XCTAssertBytes(response.body, equal: segments[1])
            XCTAssertNil(response.header("X-Origin-Saw-CMCD"), "\(mode)")
            XCTAssertNil(response.header("X-Origin-Saw-Session"), "\(mode)")
            let fetched = try originLogThroughMarker().filter { $0.hasPrefix("/seg/") }
            XCTAssertEqual(fetched, ["/seg/s2.ts?x=1"], "\(mode): the query without CMCD")
        }
    }

    /// `nor`: the segment the player names next is in the cache before it
    /// asks for it; its request is then a hit, with no origin request.
    func testNextObjectHintIsCachedBeforeThePlayerAsks() throws {
        for mode in Mode.allCases {
            origin.clearAccessLog()
            let player = try Player(mode, origin: origin, folder: directory.file("hint-\(mode)").path)
            defer { player.close() }
            // A browser's fields (Referer) give forward and reverse requests an entry of their own: the hint's fetch lands there too.
            let browser = [("Referer", "http://player.example/")]
            let first = try player.get("/seg/s1.ts", appending: "CMCD=nor%3D%22s2.ts%22%2Csid%3D%22h%22", headers: browser)
            XCTAssertBytes(first.body, equal: segments[0])
            // The hint's fetch: a background read that ends with the segment whole in the cache.
            XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
                player.cache.cachedResources().contains { $0.url.contains("/seg/s2.ts") && $0.isComplete }
            }, "\(mode): the hinted segment was cached")
            let before = try originLogThroughMarker().filter { $0.hasPrefix("/seg/s2.ts") }
            XCTAssertEqual(before.count, 1, "\(mode): fetched once, for the hint")
            let second = try player.get("/seg/s2.ts", appending: "CMCD=sid%3D%22h%22", headers: browser)
            XCTAssertBytes(second.body, equal: segments[1])
            XCTAssertTrue(second.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                          "\(mode): \(second.header("Cache-Status") ?? "none")")
            XCTAssertEqual(try originLogThroughMarker().filter { $0.hasPrefix("/seg/s2.ts") }.count, 1,
                           "\(mode): no origin request when the player asked")
            var metrics = ""
            XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
                metrics = (try? player.metrics()) ?? ""
                return metrics.contains("httpcache_cmcd_hint_fetches_total{result=\"fetched\"} 1\n")
            }, "\(mode): the hint's fetch is counted: \(metrics)")
            XCTAssertTrue(metrics.contains("httpcache_cmcd_hints_total{outcome=\"queued\"} 1\n"), metrics)
        }
    }

    /// A hint is the player's exact next request: it is fetched while other
    /// players read from the cache (an in-process reader of a cached file is
    /// open all along), not only once no client is served.
    func testAHintIsFetchedWhileAnotherPlayerReadsFromTheCache() throws {
        let player = try Player(.proxyURLs, origin: origin, folder: directory.file("hint-busy").path)
        defer { player.close() }
        XCTAssertBytes(try player.get("/seg/s2.ts").body, equal: segments[1])  // cached whole
        // Another player reads it in process, and keeps its reader open.
        let reader = try player.cache.openReader(url: origin.url("/seg/s2.ts"))
        defer { reader.close() }
        var first = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(try first.withUnsafeMutableBytes { try reader.read(into: $0, timeout: 10) }, 16)
        XCTAssertBytes(try player.get("/seg/s1.ts", appending: "CMCD=nor%3D%22s3.ts%22").body, equal: segments[0])
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            player.cache.cachedResources().contains { $0.url.contains("/seg/s3.ts") && $0.isComplete }
        }, "the hinted segment was cached while the other reader was open")
    }

    /// With `followsCMCDHints` off, and for a hint on another origin, nothing is fetched.
    func testHintsOffOrOnAnotherOriginFetchNothing() throws {
        let player = try Player(.reverse, origin: origin, folder: directory.file("hints-off").path) {
            $0.followsCMCDHints = false
        }
        defer { player.close() }
        XCTAssertBytes(try player.get("/seg/s1.ts", appending: "CMCD=nor%3D%22s3.ts%22").body, equal: segments[0])
        let other = try Player(.forward, origin: origin, folder: directory.file("hints-other").path)
        defer { other.close() }
        XCTAssertBytes(try other.get("/seg/s1.ts", appending: "CMCD=nor%3D%22http%3A%2F%2F127.0.0.2%3A1%2Fs3.ts%22").body,
                       equal: segments[0])
        XCTAssertFalse(try originLogThroughMarker().contains { $0.hasPrefix("/seg/s3.ts") })
        XCTAssertTrue(try other.metrics().contains("httpcache_cmcd_hints_total{outcome=\"queued\"} 0\n"))
    }

    /// A buffer starvation (`bs`) shows in /metrics, and the access log
    /// names the session and its buffer length.
    func testBufferStarvationIsCountedAndLogged() throws {
        let log = directory.file("access.log").path
        let player = try Player(.reverse, origin: origin, folder: directory.file("bs").path) { $0.accessLogPath = log }
        defer { player.close() }
        XCTAssertBytes(try player.get("/seg/s3.ts", headers: [("CMCD-Status", "bs"), ("CMCD-Request", "bl=1200"),
                                                            ("CMCD-Session", "sid=\"viewer-1\",cid=\"film\"")]).body,
                       equal: segments[2])
        XCTAssertBytes(try player.get("/seg/s3.ts", appending: "CMCD=bl%3D5000%2Csid%3D%22viewer-2%22").body,
                       equal: segments[2])
        let metrics = try player.metrics()
        XCTAssertTrue(metrics.contains("\nhttpcache_cmcd_rebuffers_total 1\n"), metrics)
        XCTAssertTrue(metrics.contains("\nhttpcache_cmcd_requests_total 2\n"), metrics)
        XCTAssertTrue(metrics.contains("\nhttpcache_cmcd_players 2\n"), metrics)
        XCTAssertTrue(metrics.contains("httpcache_cmcd_content_rebuffers_total{cid=\"film\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpcache_cmcd_buffer_length_seconds_bucket{le=\"2.0\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpcache_cmcd_buffer_length_seconds_bucket{le=\"8.0\"} 2\n"), metrics)
        var lines: [String] = []
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                .filter { $0.contains("/seg/s3.ts") }
            return lines.count >= 2
        }, "\(lines)")
        XCTAssertTrue(lines[0].hasSuffix(" viewer-1 1200"), lines[0])
        XCTAssertTrue(lines[1].hasSuffix(" viewer-2 5000"), lines[1])
        // `httpcache stats` shows them too.
        let table = try TestTools.run(CLITests.binary, ["stats", "--cache-dir", directory.file("bs").path])
        XCTAssertTrue(table.succeeded, table.stderr)
        XCTAssertTrue(table.stdout.contains("2 sessions, 1 rebuffer, 2 requests (0 malformed)"), table.stdout)
    }

    /// Unknown keys, values of the wrong type, payloads past the bound (as
    /// long as a request head may be): the response is the same bytes, a
    /// hit, and only the malformed counter moves.
    func testMalformedCMCDChangesOnlyACounter() throws {
        let player = try Player(.reverse, origin: origin, folder: directory.file("malformed").path)
        defer { player.close() }
        XCTAssertBytes(try player.get("/seg/s1.ts").body, equal: segments[0])
        let before = try player.metrics()
        let long = String(repeating: "com.example-k%3D1%2C", count: 360)  // ~7 KiB in the request line
        let bad: [(String?, [(String, String)])] = [
            ("CMCD=zz%3D1%2Cbl%3Dlots%2Cot%3Dvideo%2Cbs%3Dmaybe", []),
            (nil, [("CMCD-Request", "bl=\"1\",nor=s2.ts"), ("CMCD-Status", "rtp=?1")]),
            ("CMCD=" + long, []),
            (nil, (0..<3).map { _ in ("CMCD-Object", String(repeating: "com.example-k=1,", count: 256)) }),  // 12 KiB of fields
        ]
        for (query, fields) in bad {
            let response = try player.get("/seg/s1.ts", appending: query, headers: fields)
            XCTAssertEqual(response.status, 200)
            XCTAssertBytes(response.body, equal: segments[0])
            XCTAssertTrue(response.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                          response.header("Cache-Status") ?? "none")
        }
        let after = try player.metrics()
        XCTAssertTrue(before.contains("\nhttpcache_cmcd_malformed_total 0\n"), before)
        XCTAssertTrue(after.contains("\nhttpcache_cmcd_malformed_total 4\n"), after)
        XCTAssertTrue(after.contains("\nhttpcache_cmcd_rebuffers_total 0\n"), after)
        XCTAssertTrue(after.contains("httpcache_cmcd_hints_total{outcome=\"queued\"} 0\n"), after)
        XCTAssertEqual(try originLogThroughMarker().filter { $0.hasPrefix("/seg/") }.count, 1, "nothing more fetched")
        XCTAssertEqual(player.cache.cachedResources().count, 1)
    }

    /// Both options change live (a reload, `MediaCache.reconfigure`).
    func testStripAndHintsChangeOnAReload() throws {
        let player = try Player(.reverse, origin: origin, folder: directory.file("reload").path)
        defer { player.close() }
        let fields = [("CMCD-Request", "bl=100")]
        XCTAssertEqual(try player.get("/seg/s1.ts", headers: fields).header("X-Origin-Saw-CMCD"), "bl=100")
        var changed = player.cache.configuration
        changed.stripsCMCD = true
        changed.followsCMCDHints = false
        try player.cache.reconfigure(changed)
        let stripped = try player.get("/seg/s2.ts", appending: "CMCD=nor%3D%22s3.ts%22", headers: fields)
        XCTAssertBytes(stripped.body, equal: segments[1])
        XCTAssertNil(stripped.header("X-Origin-Saw-CMCD"))
        let fetched = try originLogThroughMarker().filter { $0.hasPrefix("/seg/") }
        XCTAssertEqual(fetched, ["/seg/s1.ts", "/seg/s2.ts"], "no hint fetched, no CMCD in the query")
        XCTAssertTrue(try player.metrics().contains("httpcache_cmcd_hints_total{outcome=\"queued\"} 0\n"))
    }

    /// With several loops (each resource owned by one, requests handed
    /// over): hints are fetched on the owner's loop, and each request is
    /// counted once.
    func testSeveralLoops() throws {
        let player = try Player(.reverse, origin: origin, folder: directory.file("loops").path) { $0.loops = 2 }
        defer { player.close() }
        for n in 1...3 {
            let hint = n < 3 ? "%2Cnor%3D%22s\(n + 1).ts%22" : ""
            let response = try player.get("/seg/s\(n).ts", appending: "CMCD=sid%3D%22l%22%2Cbl%3D900" + hint)
            XCTAssertBytes(response.body, equal: segments[n - 1])
            if n > 1 {
                XCTAssertTrue(response.header("Cache-Status")?.hasPrefix("httpcache; hit") ?? false,
                              "s\(n): \(response.header("Cache-Status") ?? "none")")
            }
            guard n < 3 else { break }
            XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
                player.cache.cachedResources().contains { $0.url.hasSuffix("/seg/s\(n + 1).ts") && $0.isComplete }
            }, "s\(n + 1) cached from the hint")
        }
        XCTAssertEqual(try originLogThroughMarker().filter { $0.hasPrefix("/seg/") }.count, 3, "each segment fetched once")
        let metrics = try player.metrics()
        XCTAssertTrue(metrics.contains("\nhttpcache_cmcd_requests_total 3\n"), metrics)
        XCTAssertTrue(metrics.contains("httpcache_cmcd_buffer_length_seconds_bucket{le=\"1.0\"} 3\n"), metrics)
        XCTAssertTrue(metrics.contains("\nhttpcache_cmcd_players 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpcache_cmcd_hints_total{outcome=\"queued\"} 2\n"), metrics)
    }
}
