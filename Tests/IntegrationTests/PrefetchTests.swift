import Foundation
import HTTPCache
import XCTest

/// `--prefetch N` (issue 36) against nginx: a client reading the segments
/// of a rendition in order finds those after the first two in the cache,
/// fetched in the background, and only what it plays is fetched.
final class PrefetchTests: XCTestCase {
    /// Waits until the proxy logged that it prefetched `url` (the whole body is in the cache).
    func waitForPrefetch(_ proxy: TestProxy, _ url: String, timeout: TimeInterval = 10,
                         file: StaticString = #filePath, line: UInt = #line) {
        let found = TestTools.waitUntil(timeout: timeout) {
            !proxy.logs.lines(.debug, containing: "prefetched").filter { $0.hasSuffix("url=" + url) }.isEmpty
        }
        XCTAssertTrue(found, "\(url) was not prefetched", file: file, line: line)
    }

    /// Plays `paths` in order through `get`; from the third on, each segment
    /// is waited for (a player at playing pace) and must be a hit a prefetch
    /// stored, byte-exact, with no origin request of its own.
    func play(_ paths: [String], title: PrefetchTitle, proxy: TestProxy, originURL: (String) -> String,
              hitsFrom first: Int = 2, get: (String) throws -> RawResponse,
              file: StaticString = #filePath, line: UInt = #line) throws {
        for (k, path) in paths.enumerated() {
            if k >= first { waitForPrefetch(proxy, originURL(path), file: file, line: line) }
            let before = title.originRequests(path)
            let response = try get(path)
            XCTAssertEqual(response.status, 200, path, file: file, line: line)
            XCTAssertEqual(response.body, try title.bytes(path), "\(path) byte-exact", file: file, line: line)
            if k >= first {
                let status = response.header("Cache-Status") ?? ""
                XCTAssertTrue(status.contains("; hit") && status.contains("detail=prefetched"),
                              "\(path): \(status)", file: file, line: line)
                XCTAssertEqual(title.originRequests(path), before, "\(path) asked of the origin again", file: file, line: line)
            }
        }
    }

    func testHLSVODInOrderSegmentsAfterTheFirstTwoComeFromPrefetches() throws {
        let title = try PrefetchTitle()
        let accessLog = title.directory.file("proxy-access.log").path
        let proxy = try TestProxy {
            $0.prefetch = 2
            $0.accessLogPath = accessLog
        }
        XCTAssertEqual(try proxy.get(title.url("/pf/master.m3u8")).status, 200)
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        let paths = (0..<PrefetchTitle.segments).map { "/pf/lo/seg\($0).ts" }
        try play(paths, title: title, proxy: proxy, originURL: title.url, get: { try proxy.get(title.url($0)) })
        // Each segment came from the origin once, whoever asked first.
        let log = title.origin.accessLog(waitingFor: PrefetchTitle.segments + 2)
        for path in paths { XCTAssertEqual(log.filter { $0.uri == path }.count, 1, path) }
        // The access log says which hits a prefetch stored.
        var lines: [String] = []
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            lines = ((try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            // Every segment after the first two; seg1 too when its prefetch was done before the player asked.
            return lines.filter { $0.contains(" hit;detail=prefetched ") }.count >= PrefetchTitle.segments - 2
        }, lines.joined(separator: "\n"))
        XCTAssertFalse(lines.contains { $0.contains("seg0.ts") && $0.contains("prefetched") }, "the first is the player's own")
        XCTAssertTrue(lines.contains { $0.contains("seg11.ts") && $0.contains(" hit;detail=prefetched ") })
        // /stats counts them: everything from the third on was used.
        let stats = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.server.port!)/stats")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any])
        let prefetch = try XCTUnwrap(object["prefetch"] as? [String: Int])
        XCTAssertGreaterThanOrEqual(prefetch["used"] ?? 0, PrefetchTitle.segments - 2, "\(prefetch)")
        XCTAssertGreaterThanOrEqual(prefetch["segments"] ?? 0, prefetch["used"] ?? 0, "\(prefetch)")
        XCTAssertGreaterThanOrEqual(prefetch["bytes"] ?? 0, (PrefetchTitle.segments - 2) * 30_000, "\(prefetch)")
        XCTAssertEqual(prefetch["evicted_unused"], 0)
        let metrics = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.server.port!)/metrics")
        XCTAssertTrue(String(decoding: metrics.body, as: UTF8.self)
            .contains("httpcache_prefetch_used_total \(prefetch["used"] ?? -1)\n"))
    }

    func testAPlayerAskingForASegmentBeingPrefetchedJoinsIt() throws {
        // A slow origin for seg2 and seg3: a fetch of one takes about three seconds.
        let title = try PrefetchTitle(extraServerConfig: #"location ~ ^/pf/lo/seg[23]\.ts$ { limit_rate 10k; }"#)
        let proxy = try TestProxy { $0.prefetch = 1 }
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        for k in 0..<2 { XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg\(k).ts")).status, 200) }
        // seg2 is being prefetched (asked of the origin, not yet stored) when the player asks for it.
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            !proxy.logs.lines(.debug, containing: "prefetch rendition=").filter { $0.hasSuffix("seg2.ts") }.isEmpty
        })
        let response = try proxy.get(title.url("/pf/lo/seg2.ts"))
        XCTAssertEqual(response.body, try title.bytes("/pf/lo/seg2.ts"))
        // It joined the prefetch's origin request (RFC 9211 `collapsed`).
        XCTAssertTrue(response.header("Cache-Status")?.contains("; collapsed") ?? false, response.header("Cache-Status") ?? "")
        waitForPrefetch(proxy, title.url("/pf/lo/seg3.ts"))
        XCTAssertEqual(title.origin.accessLog().filter { $0.uri == "/pf/lo/seg2.ts" }.count, 1, "one origin request for both")
    }

    func testSeveralLoops() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy {
            $0.prefetch = 2
            $0.loops = 2
        }
        XCTAssertEqual(try proxy.get(title.url("/pf/master.m3u8")).status, 200)
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        try play((0..<8).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
    }

    /// /stats of the proxy, its `prefetch` object.
    func prefetchStats(_ proxy: TestProxy) throws -> [String: Int] {
        let stats = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.server.port!)/stats")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any])
        return try XCTUnwrap(object["prefetch"] as? [String: Int])
    }

    func testPrefetchedSegmentsAreOrdinaryEntriesEvictedAndCounted() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy {
            $0.prefetch = 2
            $0.maxCacheSize = 400_000
        }
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        try play((0..<4).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
        // seg4 and seg5 were fetched ahead of the last request; the player stops there.
        waitForPrefetch(proxy, title.url("/pf/lo/seg5.ts"))
        // Other traffic fills the cache: the least recently used go, unused prefetches among them.
        for k in 0..<PrefetchTitle.segments {
            XCTAssertEqual(try proxy.get(title.url("/pf/hi/seg\(k).m4s")).body, try title.bytes("/pf/hi/seg\(k).m4s"))
        }
        var counts: [String: Int] = [:]
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            counts = (try? self.prefetchStats(proxy)) ?? [:]
            return counts["evicted_unused"] == 2
        }, "\(counts)")
        XCTAssertGreaterThanOrEqual(counts["used"] ?? 0, 2)
        XCTAssertEqual(counts["segments"], (counts["used"] ?? 0) + 2, "each prefetched segment used or evicted: \(counts)")
    }

    func testFMP4VariantPrefetchesItsInitSectionOnce() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 3 }
        XCTAssertEqual(try proxy.get(title.url("/pf/master.m3u8")).status, 200)
        XCTAssertEqual(try proxy.get(title.url("/pf/hi/index.m3u8")).status, 200)
        let initPath = "/pf/hi/init.mp4"
        XCTAssertEqual(try proxy.get(title.url(initPath)).body, try title.bytes(initPath))
        let paths = (0..<8).map { "/pf/hi/seg\($0).m4s" }
        try play(paths, title: title, proxy: proxy, originURL: title.url, get: { try proxy.get(title.url($0)) })
        XCTAssertEqual(title.originRequests(initPath), 1)
    }

    func testQualitySwitchStopsTheOldRendition() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 2 }
        XCTAssertEqual(try proxy.get(title.url("/pf/master.m3u8")).status, 200)
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        XCTAssertEqual(try proxy.get(title.url("/pf/hi/index.m3u8")).status, 200)
        try play((0..<4).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
        // Up: the player goes on in the other variant.
        XCTAssertEqual(try proxy.get(title.url("/pf/hi/init.mp4")).status, 200)
        try play((4..<10).map { "/pf/hi/seg\($0).m4s" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
        // The old variant got no further than what its last request (seg3) fetched ahead.
        let log = title.origin.accessLog()
        for k in 6..<PrefetchTitle.segments {
            XCTAssertFalse(log.contains { $0.uri == "/pf/lo/seg\(k).ts" }, "lo/seg\(k) fetched after the switch")
        }
    }

    func testSeekPrefetchesFromTheNewPosition() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 2 }
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        for k in 0..<2 { XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg\(k).ts")).status, 200) }
        waitForPrefetch(proxy, title.url("/pf/lo/seg3.ts"))
        // Seek: 8 is a miss, 9 on are fetched ahead from there.
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg8.ts")).body, try title.bytes("/pf/lo/seg8.ts"))
        try play((9..<12).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url, hitsFrom: 0,
                 get: { try proxy.get(title.url($0)) })
        let log = title.origin.accessLog()
        for k in 4..<8 { XCTAssertFalse(log.contains { $0.uri == "/pf/lo/seg\(k).ts" }, "seg\(k) is not played") }
    }

    func testReloadTurnsPrefetchOffAndOn() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 2 }
        var configuration = proxy.server.configuration
        configuration.prefetch = 0
        try proxy.server.reconfigure(configuration)
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        for k in 0..<4 {
            XCTAssertTrue(try proxy.get(title.url("/pf/lo/seg\(k).ts")).header("Cache-Status")?.contains("fwd=uri-miss") ?? false)
        }
        configuration.prefetch = 2
        try proxy.server.reconfigure(configuration)
        // The playlist is read when a player gets it again.
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        try play((4..<8).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
    }

    func testScrubbingCostsOneFetchARequest() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 4 }
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        let asked = [0, 7, 3, 10, 5]
        for k in asked {
            XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg\(k).ts")).body, try title.bytes("/pf/lo/seg\(k).ts"))
            waitForPrefetch(proxy, title.url("/pf/lo/seg\(k + 1).ts"))
        }
        // Each request: itself and the one after it, never four more.
        let fetched = Set(title.origin.accessLog().map(\.uri).filter { $0.hasSuffix(".ts") })
        XCTAssertEqual(fetched, Set(asked.flatMap { ["/pf/lo/seg\($0).ts", "/pf/lo/seg\($0 + 1).ts"] }))
    }

    func testPrefetchZeroFetchesNothingExtra() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 0 }
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        for k in 0..<6 {
            let response = try proxy.get(title.url("/pf/lo/seg\(k).ts"))
            XCTAssertEqual(response.body, try title.bytes("/pf/lo/seg\(k).ts"))
            XCTAssertTrue(response.header("Cache-Status")?.contains("fwd=uri-miss") ?? false,
                          "seg\(k): \(response.header("Cache-Status") ?? "none")")
        }
        XCTAssertEqual(title.origin.accessLog(waitingFor: 7).count, 7, "the playlist and the six segments, nothing more")
        XCTAssertTrue(proxy.logs.lines(.debug, containing: "prefetch").isEmpty)
    }

    func testDASHSegmentTemplateInOrderThroughTheBaseForm() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 2 }
        let manifest = try proxy.get(title.url("/pf/dash/manifest.mpd"))
        XCTAssertEqual(manifest.status, 200)
        // The player's URLs: the rewritten template, on the proxy in the base form (`/t/`).
        let text = String(decoding: manifest.body, as: UTF8.self)
        let media = try XCTUnwrap(text.components(separatedBy: "media=\"").dropFirst().first?
            .components(separatedBy: "\"").first, text)
        XCTAssertTrue(media.hasPrefix("http://127.0.0.1:\(proxy.server.port!)/t/"), media)
        func proxyURL(_ path: String) -> String {
            let parts = path.split(separator: "/")  // pf dash v1 N.m4s
            return media.replacingOccurrences(of: "$RepresentationID$", with: String(parts[2]))
                .replacingOccurrences(of: "$Number$", with: String(parts[3].dropLast(4)))
        }
        XCTAssertEqual(try proxy.get(title.url("/pf/dash/v1/init.mp4")).status, 200)
        let paths = (1...PrefetchTitle.segments).map { "/pf/dash/v1/\($0).m4s" }
        try play(paths, title: title, proxy: proxy, originURL: title.url,
                 get: { try RawHTTPClient.get(url: proxyURL($0), timeout: 20) })
        let log = title.origin.accessLog()
        XCTAssertFalse(log.contains { $0.uri.hasPrefix("/pf/dash/v2/") && $0.uri != "/pf/dash/v2/init.mp4" },
                       "the representation not played is not fetched")
    }

    func testReverseModeHLS() throws {
        // Transparent modes reuse what the origin says is fresh.
        let title = try PrefetchTitle(extraServerConfig: "expires 1h;")
        let proxy = try TestProxy {
            $0.prefetch = 2
            $0.origin = title.origin.baseURL
        }
        let base = "http://127.0.0.1:\(proxy.server.port!)"
        XCTAssertEqual(try RawHTTPClient.get(url: base + "/pf/lo/index.m3u8").status, 200)
        try play((0..<6).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try RawHTTPClient.get(url: base + $0) })
    }

    func testForwardModeHLS() throws {
        let title = try PrefetchTitle(extraServerConfig: "expires 1h;")
        let proxy = try TestProxy { $0.prefetch = 2 }
        // An http_proxy client: absolute-form targets; the playlist passes unchanged.
        let connection = try RawHTTPConnection(port: proxy.server.port!)
        defer { connection.close() }
        let playlist = try connection.request(path: title.url("/pf/lo/index.m3u8"))
        XCTAssertEqual(playlist.body, try title.bytes("/pf/lo/index.m3u8"))
        try play((0..<6).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try connection.request(path: title.url($0)) })
    }

    func testRefusedPrefetchPausesTheRenditionWithoutRetrying() throws {
        let title = try PrefetchTitle()
        try FileManager.default.removeItem(at: title.root.appendingPathComponent("pf/lo/seg4.ts"))
        let proxy = try TestProxy { $0.prefetch = 2 }
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        for k in 0..<3 { XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg\(k).ts")).status, 200) }
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
            !proxy.logs.lines(.info, containing: "prefetch failed").filter { $0.contains("seg4.ts") }.isEmpty
        })
        // The player goes on; the rendition stays paused before the missing segment.
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg3.ts")).status, 200)
        XCTAssertEqual(title.originRequests("/pf/lo/seg4.ts"), 1, "refused once, not retried")
        XCTAssertEqual(title.originRequests("/pf/lo/seg5.ts"), 0)
        // Past it, prefetching goes on.
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg4.ts")).status, 404)
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/seg5.ts")).body, try title.bytes("/pf/lo/seg5.ts"))
        waitForPrefetch(proxy, title.url("/pf/lo/seg6.ts"))
        XCTAssertEqual(proxy.logs.lines(.info, containing: "prefetch failed").count, 1)
    }

    /// A proxy prefetching `prefetch` segments, on a clock the test advances.
    private func clockedProxy(prefetch: Int) throws -> (TestProxy, TestClock) {
        let clock = TestClock()
        let proxy = try TestProxy {
            $0.prefetch = prefetch
            $0.clock = { clock.now }
        }
        return (proxy, clock)
    }

    func testNothingAskedForThirtySecondsStops() throws {
        let title = try PrefetchTitle()
        let (proxy, clock) = try clockedProxy(prefetch: 2)
        XCTAssertEqual(try proxy.get(title.url("/pf/lo/index.m3u8")).status, 200)
        try play((0..<3).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
        // The last request was heard (it fetched seg4) before time passes.
        waitForPrefetch(proxy, title.url("/pf/lo/seg4.ts"))
        XCTAssertTrue(proxy.logs.lines(.debug, containing: "prefetch: nothing playing").isEmpty)
        clock.advance(seconds: 31)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            !proxy.logs.lines(.debug, containing: "prefetch: nothing playing").isEmpty
        })
        // Back again: a fresh start from there (one ahead, then N), hits of what was fetched before.
        try play((3..<8).map { "/pf/lo/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url, hitsFrom: 0,
                 get: { try proxy.get(title.url($0)) })
    }

    func testLivePlaylistPrefetchesOnlyListedSegments() throws {
        let title = try PrefetchTitle()
        let proxy = try TestProxy { $0.prefetch = 3 }
        XCTAssertEqual(try proxy.get(title.url("/pf/live/index.m3u8")).status, 200)
        try play((0..<5).map { "/pf/live/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
        XCTAssertEqual(title.originRequests("/pf/live/seg5.ts"), 0, "not listed yet")
    }

    func testLivePlaylistThatGrowsPrefetchesItsNewSegments() throws {
        let title = try PrefetchTitle()
        let (proxy, clock) = try clockedProxy(prefetch: 3)
        XCTAssertEqual(try proxy.get(title.url("/pf/live/index.m3u8")).status, 200)
        try play((0..<5).map { "/pf/live/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url,
                 get: { try proxy.get(title.url($0)) })
        // The origin lists three more; the player reloads the playlist past its reuse window.
        var live = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
        for k in 0..<8 { live += "#EXTINF:2.0,\nseg\(k).ts\n" }
        try Data(live.utf8).write(to: title.root.appendingPathComponent("pf/live/index.m3u8"))
        clock.advance(seconds: 2)
        XCTAssertTrue(String(decoding: try proxy.get(title.url("/pf/live/index.m3u8")).body, as: UTF8.self).contains("seg7.ts"))
        try play((5..<8).map { "/pf/live/seg\($0).ts" }, title: title, proxy: proxy, originURL: title.url, hitsFrom: 0,
                 get: { try proxy.get(title.url($0)) })
    }
}
